"""``generate``'s ``stop_id`` and ``banned_ids``: a row ends at its stop token, and a banned id is never written.

The reference is ``generate`` without them: with ``stop_id`` the output is the same up to each row's first stop,
then that row repeats the stop, and generation ends when every row has stopped; with ``banned_ids`` greedy
decoding picks the best id that is not banned, computed here by hand from the model's own logits.
"""

from __future__ import annotations

import pytest
import torch

from tformer import DecoderOnlyTransformer
from tformer.decoding import generate

V = 12


@pytest.fixture(scope="module")
def model() -> DecoderOnlyTransformer:
    torch.manual_seed(0)
    return DecoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=32).eval()


PROMPT = torch.tensor([[3, 4, 5], [7, 1, 9]])


def test_rows_stop_at_their_first_stop_token(model: DecoderOnlyTransformer) -> None:
    free = generate(model, PROMPT, 12, temperature=1.0, generator=torch.Generator().manual_seed(0))
    new = free[:, 3:]
    stop = int(new[0, 2])  # a token row 0 writes at its third step
    firsts = [next((t for t in range(12) if int(new[b, t]) == stop), None) for b in range(2)]
    out = generate(model, PROMPT, 12, temperature=1.0, generator=torch.Generator().manual_seed(0), stop_id=stop)
    last = max(12 if f is None else f for f in firsts)  # the step at which the last row stops
    assert out.shape[1] == 3 + min(12, last + 1)  # ended as soon as every row had stopped
    for b, first in enumerate(firsts):
        end = out.shape[1] - 3 if first is None else first + 1
        assert torch.equal(out[b, : 3 + end], free[b, : 3 + end])  # the same draws until the stop
        assert bool((out[b, 3 + end :] == stop).all())  # then the stop again, as a finished row


def test_a_banned_id_is_never_written_and_the_next_best_is(model: DecoderOnlyTransformer) -> None:
    greedy = generate(model, PROMPT, 8)
    banned = sorted({int(t) for t in greedy[:, 3:].flatten()})[:2]  # ids greedy decoding did write
    out = generate(model, PROMPT, 8, banned_ids=banned)
    assert not any(int(t) in banned for t in out[:, 3:].flatten())
    tokens = PROMPT
    for _ in range(8):  # by hand: the model's logits, the banned ids removed, the best of the rest
        logits = model(tokens)[:, -1].detach()
        logits[:, banned] = float("-inf")
        tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(out, tokens)


def test_banned_ids_with_sampling_and_without_the_cache(model: DecoderOnlyTransformer) -> None:
    options = {"temperature": 2.0, "banned_ids": range(0, V, 2), "use_cache": False}
    out = generate(model, PROMPT, 20, generator=torch.Generator().manual_seed(1), **options)
    assert bool((out[:, 3:] % 2 == 1).all())  # only odd ids: every even one is banned


def test_a_1d_integer_tensor_bans_like_a_list(model: DecoderOnlyTransformer) -> None:  # as a NumPy array does
    options = {"temperature": 2.0, "use_cache": False}
    as_list = generate(model, PROMPT, 20, banned_ids=list(range(0, V, 2)), generator=torch.Generator().manual_seed(1),
                       **options)  # fmt: skip
    as_tensor = generate(model, PROMPT, 20, banned_ids=torch.arange(0, V, 2), generator=torch.Generator().manual_seed(1),
                         **options)  # fmt: skip
    assert torch.equal(as_list, as_tensor)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"stop_id": V}, ValueError, rf"^stop_id: expected an int in \[0, {V - 1}\], got {V}$"),
        ({"stop_id": 2.0}, TypeError, r"^stop_id: expected an int, got float$"),
        ({"banned_ids": "abc"}, TypeError, r"^banned_ids: expected a collection of int ids, got str$"),
        ({"banned_ids": torch.tensor([1.0])}, TypeError, r"^banned_ids: expected a collection of int ids, got Tensor$"),
        ({"banned_ids": torch.tensor([[1]])}, TypeError, r"^banned_ids: expected a collection of int ids, got Tensor$"),
        ({"banned_ids": [1, 1.5]}, TypeError, r"^banned_ids\[1\]: expected an int, got float$"),
        ({"banned_ids": [-1]}, ValueError, rf"^banned_ids\[0\]: expected an int in \[0, {V - 1}\], got -1$"),
        ({"banned_ids": [4], "stop_id": 4}, ValueError, r"^banned_ids: expected ids other than stop_id=4"),
        ({"banned_ids": range(V)}, ValueError, rf"^banned_ids: expected at least one of the V={V} ids left"),
        ({"banned_ids": range(1, V)}, ValueError, r"^banned_ids: expected at least one .* left to choose besides pad_id=0"),
        ({"stop_id": 0}, ValueError, r"^stop_id: expected an id other than pad_id=0 \(padding is never written\), got 0$"),
        ({"banned_ids": {3: "x"}}, TypeError, r"^banned_ids: expected a collection of int ids, got dict$"),
    ],
)
def test_generate_names_a_bad_stop_or_ban(model: DecoderOnlyTransformer, kwargs: dict, error: type,
                                          message: str) -> None:  # fmt: skip
    with pytest.raises(error, match=message):
        generate(model, PROMPT, 3, **kwargs)
