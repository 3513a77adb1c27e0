"""Argument checks shared across the package, with one message format: ``name: expected ..., got ...``.

Every public function and model ``forward`` validates what a user passes in with these helpers, once, where the
call comes in; inner layers trust their callers. A module that checks its own inputs when a reader calls it (a layer, a stack, an attention module, a
positional module) skips them when the module that owns it has checked them already and says so in that call:
the owner passes ``checked=True``. Trust is given per call, never stored, so the same module called by a reader
checks again; and the call still goes through ``nn.Module.__call__``, so hooks (tracing, FSDP's gathers) see
every module run. Two rules hold for every helper:

- a wrong *type* (a list where a tensor belongs, a float dtype where ids belong, a str where a number belongs)
  raises ``TypeError``; a wrong *value* or *shape* raises ``ValueError``;
- the message starts with the argument's name and reads ``name: expected <what>, got <what came>``, with shapes
  written in the package's dimension letters (B, L, S, D, H, Dh, F, V).

Checks on a tensor's *values* (:func:`check_ids`) read them only from a CPU tensor outside ``torch.compile``:
reading an accelerator's tensor would make the host wait for the device (one sync per call), and a
data-dependent branch is a graph break for the compiler. Elsewhere those values are trusted.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Collection
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "check_activation",
    "check_bool",
    "check_bos_eos",
    "check_cache_count",
    "check_cache_dtype",
    "check_choice",
    "check_decode_args",
    "check_divisible",
    "check_eos_in_vocabulary",
    "check_flags",
    "check_ids",
    "check_int",
    "check_length_penalty",
    "check_number",
    "check_probability",
    "check_query_key_value",
    "check_sampling",
    "check_self_attention",
    "check_stop_and_banned",
    "check_tensor",
    "check_tokens",
    "check_type",
    "is_int",
    "is_number",
    "plain_numbers",
    "type_name",
    "values_are_cheap",
]


def type_name(value: object) -> str:
    """The name an error message gives ``value``'s type: ``float``, or ``numpy.bool`` for a NumPy scalar (whose bare
    name, ``bool`` or ``float32``, would read like the Python type it is not)."""
    kind = type(value)
    return f"numpy.{kind.__name__}" if kind.__module__ == "numpy" else kind.__name__


def is_int(value: object) -> bool:
    """Whether ``value`` is an integer: a Python ``int`` or a NumPy integer scalar, never a ``bool``.

    NumPy's integer scalars (``np.int64`` from ``len(array)``-style arithmetic, ``np.int32``) register as
    :class:`numbers.Integral`, so a value read from an array is accepted like the ``int`` it stands for; ``bool``
    and ``np.bool_`` are flags, never sizes.
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def plain_numbers(config: object) -> None:
    """Replace a frozen dataclass's NumPy number fields by the Python ``int``/``float`` they stand for, in place.

    A config accepts ``np.int64(64)`` where an int belongs (:func:`is_int`); storing it as such would put a
    NumPy scalar into every checkpoint, which ``torch.load(weights_only=True)`` then refuses. Call it after the
    checks, in ``__post_init__``.
    """
    for field in dataclasses.fields(config):  # type: ignore[arg-type]
        value = getattr(config, field.name)
        if type(value) not in (int, float) and is_int(value):
            object.__setattr__(config, field.name, int(value))  # frozen: the dataclass's own escape hatch
        elif type(value) not in (int, float) and is_number(value):
            object.__setattr__(config, field.name, float(value))


def is_number(value: object) -> bool:
    """Whether ``value`` is a real number: an int or float, or a NumPy integer or floating scalar; never a bool.

    ``np.float32(0.1)`` (what a NumPy array's element is) is accepted as ``np.float64`` and ``float`` are; a 0-d
    tensor is not (pass ``.item()``).
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_cache_dtype(name: str, cache: object, weight: Tensor) -> None:
    """Refuse a filled KV cache whose keys the model could not use with its own dtype (that of ``weight``).

    A growing cache appends the new keys with ``torch.cat``, which promotes to the wider dtype: a cache in a
    narrower dtype than the model's (filled under autocast, or before ``model.double()``) is simply widened and
    works, while a wider one (a float64 cache given to a float32 model) would make float64 keys meet float32
    queries and fail inside torch (``expected scalar type Float but found Double``), naming no argument. A
    static (cross-attention) cache is never concatenated, so its keys must be in the model's dtype exactly.
    Only the dtype is read, never the values: no host-device sync. Under autocast the cache holds what autocast
    computed in, so the check is skipped there (as :func:`check_activation` skips its dtype check).

    Raises:
        ValueError: ``cache[0]: expected keys of dtype torch.float32 (this model's) or narrower, got
            torch.float64: ...``.
    """
    key = getattr(cache, "key", None)
    if not isinstance(key, Tensor) or key.dtype == weight.dtype:
        return
    if weight.device.type != "meta" and torch.is_autocast_enabled(weight.device.type):
        return
    static = bool(getattr(cache, "static", False))
    if not static and torch.promote_types(key.dtype, weight.dtype) == weight.dtype:
        return  # appending widens the cached keys to the model's dtype
    wanted = f"{weight.dtype} (this model's)" + ("" if static else " or narrower")
    raise ValueError(f"{name}: expected keys of dtype {wanted}, got {key.dtype}: a cache filled in another dtype "
                     "(by another model, or before this one's dtype changed); use this model's new_cache()")  # fmt: skip


def check_cache_count(
    cache: object, num_layers: int, what: str, *, kinds: tuple[bool, ...] = (False,), batch: int | None = None,
    memory_length: int | None = None, heads: tuple[int, int] | None = None, weight: Tensor | None = None,
) -> None:
    """Check a stack's ``cache``: ``None`` or a list/tuple of one entry per layer (``what`` says what an entry is).

    An entry is one ``KVCache`` (``kinds=(False,)``: a growing self-attention cache) or a tuple of them whose
    ``static`` flags are ``kinds`` (``(False, True)``: an encoder-decoder layer's (self, cross) pair). Every
    cache object must be its own (one object listed twice would receive two layers' keys), and the growing
    caches must all hold the same keys shape, as must the static ones: the stack reads the past length from
    layer 0 and checks layer 0's cache against its input, which then covers every layer. A filled cache must
    hold ``batch`` rows when that is given, a filled static cache ``memory_length`` positions (the encoder
    memory it was filled from), and every filled cache ``heads = (H, Dh)``: the key heads and head width of the
    model it is given to (a cache filled by another model would otherwise fail deep inside, naming no argument),
    and keys in the dtype of ``weight`` when that is given (the model's parameters, see
    :func:`check_cache_dtype`).

    Raises:
        TypeError: if ``cache`` is not a list or tuple, or an entry is not a KVCache (or a tuple of them).
        ValueError: if it does not hold ``num_layers`` entries, lists one cache object twice, holds a cache of
            the wrong kind (static where a growing one belongs, or the reverse), its caches of one kind differ
            in shape, or a filled cache holds another batch, memory length, number or width of heads, or
            (outside autocast) keys of another dtype than ``weight``'s.
    """
    if cache is None:
        return
    if not isinstance(cache, (list, tuple)):
        raise TypeError(f"cache: expected a list of {what}, got {type(cache).__name__}")
    if len(cache) != num_layers:
        raise ValueError(f"cache: expected {what}, {num_layers} in all, got {len(cache)}")
    seen: dict[int, int] = {}
    shapes: dict[bool, tuple[int, tuple[int, ...] | None]] = {}  # static or not -> (first layer, its keys shape)
    for layer, entry in enumerate(cache):
        items = entry if len(kinds) > 1 and isinstance(entry, tuple) else (entry,)
        if len(items) != len(kinds) or not all(hasattr(item, "update") and hasattr(item, "static") for item in items):
            raise TypeError(f"cache[{layer}]: expected {what}, got {type(entry).__name__}")
        for item, static in zip(items, kinds, strict=True):
            if item.static != static:
                kind = "a static (cross-attention)" if static else "a growing (self-attention)"
                raise ValueError(f"cache[{layer}]: expected {kind} KVCache ({what}), got static={item.static}")
            if id(item) in seen:
                raise ValueError(
                    f"cache: expected {what}, each cache its own object, got one object at layers {seen[id(item)]} and {layer}"
                )
            seen[id(item)] = layer
            key = item.key
            shape = None if key is None else tuple(key.shape)  # (B, H, S, Dh)
            first, first_shape = shapes.setdefault(static, (layer, shape))
            if shape != first_shape:
                kind = "static (cross-attention)" if static else "growing (self-attention)"
                raise ValueError(
                    f"cache: expected {what}, every {kind} cache holding keys of one shape, "
                    f"got {first_shape} at layer {first} and {shape} at layer {layer}"
                )
            if shape is not None and batch is not None and shape[0] != batch:
                raise ValueError(f"cache[{layer}]: expected a cache filled with B={batch} rows (the input's batch), "
                                 f"got B={shape[0]}; use new_cache() for another batch")  # fmt: skip
            if shape is not None and heads is not None and (shape[1], shape[3]) != heads:
                raise ValueError(f"cache[{layer}]: expected keys of H={heads[0]} heads of width Dh={heads[1]} (this "
                                 f"model's), got H={shape[1]}, Dh={shape[3]}: a cache filled by another model; "
                                 "use this model's new_cache()")  # fmt: skip
            if shape is not None and static and memory_length is not None and shape[2] != memory_length:
                raise ValueError(f"cache[{layer}]: expected a cross-attention cache filled from a memory of S="
                                 f"{memory_length} positions, got S={shape[2]}; use new_cache() for a new source")  # fmt: skip
            if weight is not None:
                check_cache_dtype(f"cache[{layer}]", item, weight)


def check_int(name: str, value: object, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` if it is an ``int`` (a ``bool`` is not accepted) in ``[minimum, maximum]``.

    Args:
        name: the argument's name, the first word of the error message.
        value: what the caller passed.
        minimum, maximum: the smallest and largest allowed values, ``None`` for no bound.

    Returns:
        ``value`` as a Python ``int`` (a NumPy integer scalar is accepted and converted, see :func:`is_int`).

    Raises:
        TypeError: if ``value`` is not an int, or is a bool (``True`` is an int in Python, never a size here).
        ValueError: if ``value`` is outside ``[minimum, maximum]``.
    """
    if not is_int(value):
        raise TypeError(f"{name}: expected an int, got {type_name(value)}")
    value = int(value)  # type: ignore[call-overload]
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        if maximum is not None:
            wanted = f"an int in [{'-inf' if minimum is None else minimum}, {maximum}]"
        else:
            wanted = {0: "a non-negative int", 1: "a positive int"}.get(minimum, f"an int >= {minimum}")
        raise ValueError(f"{name}: expected {wanted}, got {value!r}")
    return value


def check_number(
    name: str,
    value: object,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    open_min: bool = False,
    open_max: bool = False,
    finite: bool = False,
) -> float:
    """Return ``value`` as a float if it is a real number (see :func:`is_number`) in the given interval.

    NaN is never in an interval, so it is rejected whenever a bound is given; ``finite=True`` also rejects ±∞
    (a bound such as ``> 0`` alone lets ∞ through).

    Args:
        name: the argument's name.
        value: what the caller passed.
        minimum, maximum: the interval's ends, ``None`` for unbounded.
        open_min, open_max: exclude that end (``(0, 1]`` is ``open_min=True``).
        finite: also require a finite value (the message then says "a finite number").

    Returns:
        ``float(value)``.

    Raises:
        TypeError: if ``value`` is not an int or float (or is a bool).
        ValueError: if it lies outside the interval; the message writes the interval, e.g. ``[0, 1)``.
    """
    if not is_number(value):
        raise TypeError(f"{name}: expected a number, got {type_name(value)}")
    above = minimum is None or (value > minimum if open_min else value >= minimum)
    below = maximum is None or (value < maximum if open_max else value <= maximum)
    if not (above and below) or (finite and not math.isfinite(value)):
        kind = "a finite number" if finite else "a number"
        if minimum is None and maximum is None:
            wanted = kind
        elif maximum is None:
            wanted = f"{kind} {'>' if open_min else '>='} {minimum:g}"
        elif minimum is None:
            wanted = f"{kind} {'<' if open_max else '<='} {maximum:g}"
        else:
            wanted = f"{kind} in {'(' if open_min else '['}{minimum:g}, {maximum:g}{')' if open_max else ']'}"
        raise ValueError(f"{name}: expected {wanted}, got {value!r}")
    return float(value)


def check_probability(name: str, value: object) -> float:
    """Return a dropout-style probability: a number in ``[0, 1)`` (1 would drop everything).

    Raises:
        TypeError: if ``value`` is not a number. ValueError: if it is outside ``[0, 1)``.
    """
    return check_number(name, value, 0.0, 1.0, open_max=True)


def check_bool(name: str, value: object) -> bool:
    """Return ``value`` if it is a ``bool`` (``0``/``1`` are not accepted: a flag is a flag).

    Raises:
        TypeError: if ``value`` is not a bool.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected a bool, got {type_name(value)}")
    return value


def check_flags(**flags: object) -> None:
    """:func:`check_bool` on each keyword: ``check_flags(add_bos=add_bos, strict=strict)``.

    Raises:
        TypeError: naming the first flag that is not a bool (``1``, ``"yes"`` or ``None`` included).
    """
    for name, value in flags.items():
        check_bool(name, value)


_WITH_ARTICLE = {bool: "a bool", int: "an int", float: "a float", str: "a str"}  # as check_bool, check_int say


def check_type(name: str, value: object, kind: type | tuple[type, ...], what: str | None = None) -> Any:
    """Return ``value`` if it is an instance of ``kind``; ``what`` words the expectation (default: the type name,
    with an article for ``bool``, ``int``, ``float`` and ``str``: ``progress: expected a bool, got int``, as
    :func:`check_bool` and :func:`check_int` write it).

    Raises:
        TypeError: if it is not.
    """
    if not isinstance(value, kind):
        if what is None:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            what = " or ".join(_WITH_ARTICLE.get(k, k.__name__) for k in kinds)
        raise TypeError(f"{name}: expected {what}, got {type_name(value)}")
    return value


def check_strs(name: str, values: object, item: str, hint: str) -> list[str]:
    """Return ``values`` as a list of ``str`` (tokens, sentences, pieces); a bare ``str`` in their place is refused.

    A ``str`` is itself iterable, so without this check it would silently be read as a list of characters.

    Raises:
        TypeError: ``tokens: expected a list of tokens, got a str (call word_tokenize …)``, or
            ``tokens: expected tokens that are str, got int 1``.
    """
    if isinstance(values, str):
        raise TypeError(f"{name}: expected a list of {item}s, got a str ({hint})")
    values = list(values)  # type: ignore[call-overload]
    for value in values:
        if not isinstance(value, str):
            raise TypeError(f"{name}: expected {item}s that are str, got {type(value).__name__} {value!r}")
    return values


def check_choice(name: str, value: object, choices: Collection[Any]) -> Any:
    """Return ``value`` if it is one of ``choices`` (e.g. an activation's or a scheme's name).

    Raises:
        ValueError: if it is not; the message lists the choices.
    """
    if isinstance(value, (list, dict, set)) or value not in choices:  # unhashable values are never a choice
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name}: expected one of {listed}, got {value!r}")
    return value


def check_divisible(name: str, value: int, divisor_name: str, divisor: int) -> int:
    """Return ``value`` if it is a multiple of ``divisor`` (e.g. ``d_model`` of ``num_heads``: D = H·Dh).

    Raises:
        ValueError: ``d_model: expected a multiple of num_heads=4, got 30``.
    """
    if value % divisor != 0:
        raise ValueError(f"{name}: expected a multiple of {divisor_name}={divisor}, got {value}")
    return value


_KINDS = {"float": "a floating-point tensor", "int": "an integer tensor", "bool": "a bool tensor (True = may attend)"}


def _kind_ok(t: Tensor, kind: str) -> bool:
    if kind == "float":
        return t.is_floating_point()
    if kind == "bool":
        return t.dtype == torch.bool
    return not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)


def check_tensor(
    name: str,
    value: object,
    kind: str | None = None,
    shape: str | None = None,
    *,
    dtype: torch.dtype | tuple[torch.dtype, ...] | None = None,
    device: torch.device | None = None,
    of: str | None = None,
    nonempty: str = "",
    **sizes: int,
) -> Tensor:
    """Return ``value`` if it is a tensor of the right kind, dtype, device and shape.

    Args:
        name: the argument's name.
        value: what the caller passed.
        kind: ``"float"`` (any floating dtype), ``"int"`` (any integer dtype, not bool) or ``"bool"``.
        shape: the expected shape in dimension letters, e.g. ``"(B, L, D)"``; a leading ``"..."`` allows any
            number of leading dimensions (``"(..., L, Dh)"``). A letter named in ``sizes`` must have that size;
            the others are free.
        dtype: one dtype, or a tuple of allowed dtypes (e.g. ``(torch.int64, torch.int32)`` for token ids).
        device: the device the tensor must be on.
        of: whose dtype/device they are, for the message (``"query"``, ``"the parameters"``).
        nonempty: the letters of ``shape`` whose size must be at least 1, e.g. ``"L"`` or ``"B, S"``.
        sizes: fixed sizes by letter, e.g. ``D=32`` (the message then writes ``(B, L, D=32)``).

    Returns:
        ``value``, unchanged.

    Raises:
        TypeError: if ``value`` is not a tensor, is not of ``kind``, or has another dtype.
        ValueError: if it is on another device or has another shape.
    """
    letters = [] if shape is None else [s.strip() for s in shape.strip("()").split(",") if s.strip()]
    wanted = " ".join(w for w in (_KINDS.get(kind or "", "a tensor"), shape) if w)
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}: expected {wanted}, got {type(value).__name__}")
    if kind is not None and not _kind_ok(value, kind):
        raise TypeError(f"{name}: expected {wanted}, got {value.dtype}")
    if dtype is not None:
        allowed = dtype if isinstance(dtype, tuple) else (dtype,)
        if value.dtype not in allowed:
            listed = " or ".join(str(d) for d in allowed)
            expected = f"dtype {listed}" if of is None else f"the dtype of {of} ({listed})"
            raise TypeError(f"{name}: expected {expected}, got {value.dtype}")
    if device is not None and value.device != device:
        expected = f"device {device}" if of is None else f"the device of {of} ({device})"
        raise ValueError(f"{name}: expected {expected}, got {value.device}")
    if letters:
        leading = letters[0] == "..."
        fixed = letters[1:] if leading else letters
        got = tuple(value.shape)
        tail = got[len(got) - len(fixed):] if len(got) >= len(fixed) else ()
        ok = (len(got) >= len(fixed)) if leading else (len(got) == len(fixed))
        ok = ok and all(sizes.get(x) in (None, n) for x, n in zip(fixed, tail, strict=False))
        positive = nonempty.replace(",", " ").split()
        ok = ok and all(n >= 1 for x, n in zip(fixed, tail, strict=False) if x in positive)
        if not ok:
            named = ", ".join(f"{x}={sizes[x]}" if x in sizes else x for x in letters) + ("," if len(letters) == 1 else "")
            extra = f" with {' >= 1, '.join(positive)} >= 1" if positive else ""
            raise ValueError(f"{name}: expected shape ({named}){extra}, got {got}")
    return value


def check_activation(name: str, x: object, shape: str, weight: Tensor, **sizes: int) -> Tensor:
    """Return ``x`` if it is a floating-point activation of ``shape`` in the dtype of the module's ``weight``.

    Under autocast the dtypes may differ (autocast casts at each op), so only the kind and shape are checked.

    Raises:
        TypeError: if ``x`` is not a floating-point tensor, or (outside autocast) its dtype is not ``weight``'s.
        ValueError: if its shape is not ``shape`` (see :func:`check_tensor`).
    """
    autocast = isinstance(x, Tensor) and x.device.type != "meta" and torch.is_autocast_enabled(x.device.type)
    dtype = None if autocast else weight.dtype
    return check_tensor(name, x, "float", shape, dtype=dtype, of="the parameters", **sizes)


def check_query_key_value(query: object, key: object, value: object, weight: Tensor, *, keys: bool = True) -> None:
    """Check an attention module's inputs: query ``(B, L, D)``, key and value ``(B, S, D)``, one B, one S.

    D is ``weight.shape[1]`` (the projection's input width); every input must be floating point in ``weight``'s
    dtype (see :func:`check_activation`). ``keys=False`` checks the query only (cached cross-attention).

    Raises:
        TypeError: on a non-tensor, non-float input or another dtype. ValueError: on another shape.
    """
    D = weight.shape[1]
    q = check_activation("query", query, "(B, L, D)", weight, D=D)
    if keys:
        k = check_activation("key", key, "(B, S, D)", weight, B=q.shape[0], D=D)
        check_activation("value", value, "(B, S, D)", weight, B=q.shape[0], S=k.shape[1], D=D)


def values_are_cheap(t: Tensor) -> bool:
    """True when checking ``t``'s values costs no host-device sync and no graph break.

    That is, ``t`` lives on the CPU, is not empty, and no ``torch.compile`` trace is running. Value checks (ids
    in range, lengths within bounds) run only then; elsewhere the values are trusted.
    """
    return t.device.type == "cpu" and t.numel() > 0 and not torch.compiler.is_compiling()


def check_ids(name: str, ids: Tensor, size: int, *, letter: str = "V", pad_id: int | None = None) -> Tensor:
    """Return ``ids`` if every id lies in ``[0, size)``; ids equal to ``pad_id`` (when given) are skipped.

    The values are read only from a CPU tensor outside ``torch.compile``; on an accelerator this check would
    make the host wait for the device, so there the ids are trusted (an embedding lookup still fails loudly on
    an out-of-range id).

    Shape:
        ids: any shape, an integer tensor (check its type with :func:`check_tensor` first).

    Raises:
        ValueError: ``tokens: expected ids in [0, V=10), got min 0, max 12``.
    """
    if not values_are_cheap(ids):
        return ids
    kept = ids if pad_id is None else ids[ids != pad_id]
    if kept.numel() == 0:
        return ids
    low, high = int(kept.min()), int(kept.max())
    if low < 0 or high >= size:
        skip = "" if pad_id is None else f" (or pad_id={pad_id})"
        raise ValueError(f"{name}: expected ids in [0, {letter}={size}){skip}, got min {low}, max {high}")
    return ids


def check_self_attention(scheme: str, query: Tensor, key: Tensor) -> None:
    """Refuse a relative position scheme (``"rope"``, ``"alibi"``) across two sequences: ``key`` must be ``query``.

    The same tensor, or a view of the same memory, shape and strides: m − n (query position minus key
    position) is meaningless between two sequences, so cross-attention never gets RoPE or ALiBi.

    Raises:
        ValueError: ``rope: expected self-attention (key is query), got a different key tensor (B, S, D)``.
    """
    same = key is query or (
        key.data_ptr() == query.data_ptr() and key.shape == query.shape and key.stride() == query.stride()
    )
    if not same:
        raise ValueError(
            f"{scheme}: expected self-attention (key is query), got a different key tensor "
            f"{tuple(key.shape)}; cross-attention relates positions of two sequences"
        )


def check_tokens(name: str, tokens: object, vocab_size: int, limit: int | None, offset: int = 0) -> Tensor:
    """Return ``tokens`` if it is a ``(B, L)`` int64/int32 tensor of ids in ``[0, V)``, L >= 1, within ``limit``.

    ``limit`` is the model's ``position_limit`` (``None``: positions without an end, RoPE and ALiBi);
    ``offset`` counts positions already cached. The id range is read only where values are cheap
    (:func:`check_ids`).

    Raises:
        TypeError: not an int64/int32 tensor. ValueError: not 2-D, L = 0, ``offset + L > limit``, or an id out
            of range.
    """
    tokens = check_tensor(name, tokens, "int", "(B, L)", dtype=(torch.int64, torch.int32))
    if tokens.shape[1] == 0 or (limit is not None and offset + tokens.shape[1] > limit):
        if limit is None:
            wanted = "a length L >= 1"
        elif offset:
            wanted = f"a length L in [1, max_len={limit} - {offset} cached]"
        else:
            wanted = f"a length L in [1, max_len={limit}]"
        raise ValueError(f"{name}: expected {wanted}, got {tokens.shape[1]}")
    return check_ids(name, tokens, vocab_size)


# ---------------------------------------------------------------- generation (tformer.decoding)


def check_stop_and_banned(stop_id: object, banned_ids: object, vocab_size: int, pad_id: int | None = None) -> list[int]:
    """Check a generator's ``stop_id`` (None or an id in ``[0, V)``) and ``banned_ids`` (ids in ``[0, V)``, never
    ``stop_id``, leaving at least one id to choose); return the ids never to write, ``pad_id`` (when not None)
    among them, as a sorted list without repeats.

    Raises:
        TypeError: ``stop_id`` not an int or None; ``banned_ids`` not a collection of ints (a str, a float or 2-D
            tensor, a float among them; a 1-D integer tensor is accepted).
        ValueError: an id outside ``[0, V)``, ``stop_id`` banned or equal to ``pad_id`` (a stop that could never be
            written), or every id banned (padding counted).
    """
    if stop_id is not None:
        check_int("stop_id", stop_id, 0, vocab_size - 1)
    if isinstance(banned_ids, Tensor) and banned_ids.dim() == 1 and not banned_ids.is_floating_point():
        banned_ids = banned_ids.tolist()  # a 1-D integer tensor is a list of ids, as a NumPy array is
    if isinstance(banned_ids, (str, bytes, Tensor, dict)) or not isinstance(banned_ids, Collection) or (
        getattr(banned_ids, "ndim", 1) == 0  # a 0-d NumPy array is a Collection that cannot be iterated
    ):
        raise TypeError(f"banned_ids: expected a collection of int ids, got {type(banned_ids).__name__}")
    banned = []
    for i, value in enumerate(banned_ids):
        banned.append(check_int(f"banned_ids[{i}]", value, 0, vocab_size - 1))
    if stop_id is not None and stop_id == pad_id:
        raise ValueError(f"stop_id: expected an id other than pad_id={pad_id} (padding is never written), got {stop_id}")
    banned = sorted(set(banned) | ({pad_id} if pad_id is not None else set()))
    if stop_id is not None and stop_id in banned:
        raise ValueError(f"banned_ids: expected ids other than stop_id={stop_id} (a stop that can never be written), "
                         f"got {banned_ids!r:.60}")  # fmt: skip
    if len(banned) >= vocab_size:
        padding = "" if pad_id is None else f" besides pad_id={pad_id}"
        raise ValueError(f"banned_ids: expected at least one of the V={vocab_size} ids left to choose{padding}, "
                         f"got all of them banned")
    return banned


def check_sampling(temperature: object, top_k: object, top_p: object = None, generator: object = None) -> None:
    """Check a sampler's ``temperature`` (finite, >= 0), ``top_k`` (None or an int >= 1), ``top_p`` (None or
    a number in (0, 1]) and ``generator`` (None or a ``torch.Generator``).

    Raises:
        TypeError: a temperature or ``top_p`` that is not a number, a ``top_k`` that is not an int, a
            ``generator`` that is not a ``torch.Generator``.
        ValueError: a negative, infinite or NaN temperature; ``top_k < 1``; ``top_p`` outside (0, 1].
    """
    if check_number("temperature", temperature, 0.0) == float("inf"):
        raise ValueError("temperature: expected a finite number >= 0, got inf")
    if top_k is not None:
        check_int("top_k", top_k, 1)
    if top_p is not None:
        check_number("top_p", top_p, 0.0, 1.0, open_min=True)
    if generator is not None:
        check_type("generator", generator, torch.Generator)


def check_bos_eos(bos_id: object, eos_id: object, pad_id: int, vocab_size: int | None = None) -> None:
    """Check that ``bos_id`` and ``eos_id`` are ints other than the model's ``pad_id`` (any decoder) and, when
    ``vocab_size`` is given, ids of the target vocabulary ``[0, vocab_size)``.

    Raises:
        TypeError: if either is not an int.
        ValueError: if either equals ``pad_id`` or lies outside ``[0, vocab_size)``.
    """
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id)):
        if check_int(name, value) == pad_id:
            # training hides or zeroes the padding token, so BOS = PAD would feed the decoder an input it never
            # learned from, and EOS = PAD could not be told apart from the padding after it
            raise ValueError(f"{name}: expected an id different from model.pad_id={pad_id}, got {value}")
        if vocab_size is not None and not 0 <= value < vocab_size:  # type: ignore[operator]
            # an out-of-range BOS fails inside the embedding; an out-of-range EOS is never produced, so no row stops
            raise ValueError(f"{name}: expected an id in the target vocabulary [0, {vocab_size}), got {value}")


def check_eos_in_vocabulary(eos_id: int, V: int) -> None:
    """Raise ``ValueError`` if ``eos_id`` is not an id of the target vocabulary ``[0, V)``."""
    if not 0 <= eos_id < V:
        raise ValueError(f"eos_id: expected an id in the target vocabulary [0, {V}), got {eos_id}")


def check_decode_args(model: Any, src: object, max_len: object, bos_id: object, eos_id: object) -> int:
    """Validate a search's arguments; return the number of steps to run (``max_len``, capped at the model's
    ``position_limit``: the decoder input holds BOS and the tokens so far).

    Raises:
        TypeError / ValueError: a ``src`` that is not a ``(B, S)`` integer tensor, ``max_len`` not an int >= 1,
            ``bos_id``/``eos_id`` as :func:`check_bos_eos`, or outside the model's ``tgt_vocab_size`` when the
            model states one.
    """
    check_tensor("src", src, "int", "(B, S)")
    max_len = check_int("max_len", max_len, 1)
    V = getattr(model, "tgt_vocab_size", None)  # known up front for Transformer; else checked at the first step
    check_bos_eos(bos_id, eos_id, model.pad_id, V if isinstance(V, int) else None)
    limit = getattr(model, "position_limit", None)  # None: RoPE or ALiBi, no end
    return max_len if limit is None else min(max_len, limit)


def check_length_penalty(length_penalty: object) -> float:
    """Return beam search's α as a float; its stopping bound needs a penalty that grows with length.

    Raises:
        TypeError: not a number. ValueError: negative, infinite or NaN (an infinite α makes every finished
        hypothesis score 0 or -inf, so the beams' ranking means nothing).
    """
    if not is_number(length_penalty):
        raise TypeError(f"length_penalty: expected a number >= 0, got {type(length_penalty).__name__}")
    if not length_penalty >= 0:  # also refuses NaN
        raise ValueError(f"length_penalty: expected a number >= 0, got {length_penalty}")
    if length_penalty == float("inf"):
        raise ValueError(f"length_penalty: expected a finite number, got {length_penalty}")
    return float(length_penalty)
