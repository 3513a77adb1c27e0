"""Arguments as a reader passes them: NumPy numbers, flags, and a cache from another model.

- A NumPy integer or floating scalar (what ``len``-style arithmetic on arrays and an array's elements give) is
  accepted wherever an int or a number is, and a config stores the Python number, so its checkpoint loads with
  ``torch.load(weights_only=True)``; ``np.bool_`` is still not a size.
- A flag (``return_attention``, ``use_cache``, ``add_eos``, ...) is a bool: ``1``, ``"yes"`` or ``None`` gets a
  TypeError that names it, instead of being read as true or false.
- A filled cache whose heads or head width are not this model's is refused at the door, naming ``cache[0]``,
  not deep inside the attention as ``key, value``.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import re
from collections.abc import Callable

import numpy as np
import pytest
import torch

from tformer import DecoderOnlyTransformer, EncoderOnlyTransformer, Seq2SeqRNN, Transformer
from tformer.attention import KVCache, MultiHeadAttention
from tformer.baselines.rnn import count_parameters
from tformer.baselines.seq2seq_rnn import Seq2SeqRNNConfig
from tformer.data.text import Vocab
from tformer.layers import Encoder
from tformer.training.train import save_checkpoint
from tformer.variants import ModernDecoderLM
from tformer.variants.modern_block import ModernDecoderConfig

V = 11


def _seq2seq() -> Transformer:
    return Transformer(V, V, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, d_ff=32)


def test_numpy_sizes_are_accepted_and_stored_as_python_numbers() -> None:
    model = Transformer(np.int64(V), np.int32(V), d_model=np.int64(16), num_heads=np.int64(2), num_encoder_layers=1,
                        num_decoder_layers=1, d_ff=np.int64(32), dropout=np.float32(0.25))  # fmt: skip
    config = model.config
    assert (type(config.d_model), type(config.src_vocab_size), type(config.dropout)) == (int, int, float)
    assert (config.d_model, config.dropout) == (16, 0.25)  # 0.25 is exact in float32
    modern = ModernDecoderConfig(np.int64(V), d_model=np.int64(16), num_heads=2, d_ff=32, rope_base=np.float32(500))
    assert (type(modern.d_model), type(modern.rope_base), modern.rope_base) == (int, float, 500.0)
    rnn = Seq2SeqRNNConfig(np.int64(V), V, np.int64(8), 8)
    assert type(rnn.src_vocab_size) is int and type(rnn.emb_dim) is int


def test_a_config_built_from_numpy_numbers_saves_a_checkpoint_that_loads_safely(tmp_path) -> None:
    model = Transformer(V, V, d_model=np.int64(16), num_heads=2, num_encoder_layers=1, num_decoder_layers=1, d_ff=32)
    path = tmp_path / "m.pt"
    save_checkpoint(path, model, extra={"config": dataclasses.asdict(model.config)})  # as the shipped models do
    loaded = torch.load(path, weights_only=True)  # refuses NumPy scalars: the config must hold Python ints
    assert loaded["extra"]["config"]["d_model"] == 16


def test_save_checkpoint_names_a_model_that_is_not_a_module(tmp_path) -> None:
    with pytest.raises(TypeError, match=r"^model: expected an nn\.Module, got PosixPath$"):
        save_checkpoint(_seq2seq(), tmp_path / "m.pt")  # the arguments swapped


@pytest.mark.parametrize("value", [np.bool_(True), True])
def test_a_bool_is_never_a_size(value: object) -> None:
    with pytest.raises(TypeError, match=r"^d_model: expected an int, got (bool|numpy\.bool)$"):
        Transformer(V, V, d_model=value)


def test_numpy_scalars_reach_the_number_checks() -> None:
    with pytest.raises(ValueError, match=r"^dropout: expected a number in \[0, 1\), got"):
        _seq2seq().__class__(V, V, d_model=16, num_heads=2, dropout=np.float32(1.5))
    assert count_parameters(torch.nn.Linear(np.int64(3), 2)) == 8


TOKENS = torch.randint(3, V, (2, 4))
SRC = torch.randint(3, V, (2, 5))
FLAG_CALLS: dict[str, Callable[[object], object]] = {
    "return_attention (Transformer)": lambda v: _seq2seq()(SRC, TOKENS, return_attention=v),
    "return_attention (decoder-only)": lambda v: DecoderOnlyTransformer(
        V, d_model=16, num_heads=2, num_layers=1, d_ff=32)(TOKENS, return_attention=v),
    "return_attention (2024 block)": lambda v: ModernDecoderLM(
        ModernDecoderConfig(V, d_model=16, num_heads=2, d_ff=32, num_layers=1))(TOKENS, return_attention=v),
    "return_attention (RNN)": lambda v: Seq2SeqRNN(Seq2SeqRNNConfig(V, V, 8, 8))(SRC, TOKENS, return_attention=v),
    "use_cache": lambda v: _seq2seq().greedy_decode(SRC, 5, 1, 2, use_cache=v),
    "add_eos": lambda v: Vocab(["猫", "追"]).encode(["猫"], add_eos=v),
    "stop_at_eos": lambda v: Vocab(["猫", "追"]).decode([4, 2], stop_at_eos=v),
    "static": lambda v: KVCache(static=v),
    "trainable_only": lambda v: count_parameters(torch.nn.Linear(2, 2), trainable_only=v),
}


@pytest.mark.parametrize("value", [1, "yes", None])
@pytest.mark.parametrize("call", FLAG_CALLS, ids=list(FLAG_CALLS))
def test_a_flag_must_be_a_bool(call: str, value: object) -> None:
    flag = call.split()[0]
    with pytest.raises(TypeError, match=rf"^{flag}: expected a bool, got {type(value).__name__}$"):
        FLAG_CALLS[call](value)


def _filled(model: torch.nn.Module) -> list:
    cache = model.new_cache()
    model(TOKENS, cache=cache)
    return cache


@pytest.mark.parametrize("heads, width", [(4, 16), (2, 32)])
def test_a_cache_filled_by_another_model_is_refused_at_the_door(heads: int, width: int) -> None:
    small = DecoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=1, d_ff=32)
    other = DecoderOnlyTransformer(V, d_model=width, num_heads=heads, num_layers=1, d_ff=32)
    dh = width // heads
    with pytest.raises(ValueError, match=rf"^cache\[0\]: expected keys of H={heads} heads of width Dh={dh} "
                                         r"\(this model's\), got H=2, Dh=8"):  # fmt: skip
        other(TOKENS[:, :1], cache=_filled(small))


def test_a_2024_cache_of_other_kv_heads_is_refused_at_the_door() -> None:
    four = ModernDecoderLM(ModernDecoderConfig(V, d_model=16, num_heads=4, d_ff=32, num_layers=1, num_kv_heads=4))
    two = ModernDecoderLM(ModernDecoderConfig(V, d_model=16, num_heads=4, d_ff=32, num_layers=1, num_kv_heads=2))
    with pytest.raises(ValueError, match=r"^cache\[0\]: expected keys of H=2 heads of width Dh=4"):
        two(TOKENS[:, :1], cache=_filled(four))


def test_a_stack_called_alone_refuses_another_models_cache() -> None:
    narrow = Encoder(1, d_model=16, num_heads=2, d_ff=32)
    wide = Encoder(1, d_model=16, num_heads=4, d_ff=32)
    cache = [KVCache()]
    narrow(torch.randn(2, 3, 16), cache=cache)
    with pytest.raises(ValueError, match=r"^cache\[0\]: expected keys of H=4 heads of width Dh=4"):
        wide(torch.randn(2, 1, 16), cache=cache)
    buffer = io.BytesIO()  # the right model still reads its own cache
    out, _ = narrow(torch.randn(2, 1, 16), cache=cache)
    torch.save(out, buffer)
    assert out.shape == (2, 1, 16) and len(cache[0]) == 4


def test_numpy_seeds_reach_the_random_generators_as_ints() -> None:
    from tformer.data.tasks import copy_task
    from tformer.data.text import bucket_batches
    from tformer.environment import seed_everything

    seed_everything(np.int64(3))
    first = torch.rand(1)
    seed_everything(3)
    assert torch.equal(first, torch.rand(1))
    assert bucket_batches([3, 1, 2, 5], 2, seed=np.int64(1)) == bucket_batches([3, 1, 2, 5], 2, seed=1)
    assert copy_task(4, 3, num_symbols=5, seed=np.int64(2)) == copy_task(4, 3, num_symbols=5, seed=2)
    with pytest.raises(TypeError, match=r"^seed: expected an int, got NoneType$"):
        bucket_batches([3, 1], 1, seed=None)


def test_numpy_numbers_reach_the_shown_functions_as_python_numbers() -> None:
    """The functions the chapters print (masked-token pre-training, neighbour keys, the poet) convert too."""
    from tformer.training.mlm import mask_tokens, pretrain_mlm
    from tformer.variants.neighbour import pair_keys

    tokens = torch.randint(5, 20, (3, 6))
    masked = [mask_tokens(tokens, vocab_size=vocab_size, pad_id=0, mask_id=mask_id, rate=rate,
                          generator=torch.Generator().manual_seed(0))
              for vocab_size, mask_id, rate in ((20, 4, 0.5), (np.int64(20), np.int32(4), np.float32(0.5)))]  # fmt: skip
    assert all(torch.equal(a, b) for a, b in zip(masked[0], masked[1], strict=True))
    assert torch.equal(pair_keys(tokens, np.int64(20)), pair_keys(tokens, 20))
    sentences = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16]]
    runs = []
    for seed, steps in ((1, 2), (np.int64(1), np.int32(2))):
        torch.manual_seed(0)
        model = EncoderOnlyTransformer(20, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=8)
        pretrain_mlm(model, sentences, mask_id=4, vocab_size=np.int64(20), batch_size=np.int64(2), max_steps=steps,
                     seed=seed, device="cpu")
        runs.append(next(model.parameters()).detach().clone())
    assert torch.equal(runs[0], runs[1])


def test_numpy_sizes_do_not_overflow_in_the_cost_formulas() -> None:
    from tformer.analysis.parallelism import tensor_parallel_all_reduce_elements
    from tformer.variants.modern_block import modern_lm_parameter_count

    i = np.int32
    assert modern_lm_parameter_count(i(32000), i(4096), i(32), i(32), i(32), i(11008)) == modern_lm_parameter_count(
        32000, 4096, 32, 32, 32, 11008) == 6_738_415_616  # Llama 2 7B; np.int32 arithmetic would wrap around
    assert tensor_parallel_all_reduce_elements(i(1024), i(8192), i(8192), backward=True) == (
        tensor_parallel_all_reduce_elements(1024, 8192, 8192, backward=True))


def test_more_flags_must_be_bools() -> None:
    from tformer.variants.efficient import LinearAttention

    rnn = Seq2SeqRNN(Seq2SeqRNNConfig(V, V, 8, 8))
    with pytest.raises(TypeError, match=r"^return_attention: expected a bool, got str$"):
        rnn.greedy_decode(SRC, 3, 1, 2, return_attention="yes")
    with pytest.raises(TypeError, match=r"^bias: expected a bool, got NoneType$"):
        LinearAttention(16, 2, bias=None)
    with pytest.raises(TypeError, match=r"^add_bos: expected a bool, got numpy.bool$"):
        Vocab(["猫"]).encode(["猫"], add_bos=np.bool_(True))


def test_a_decoder_stack_called_alone_refuses_a_cache_of_another_memory() -> None:
    from tformer.layers import Decoder

    decoder = Decoder(1, d_model=16, num_heads=2, d_ff=32).eval()
    cache = [(KVCache(), KVCache(static=True))]
    decoder(torch.randn(2, 3, 16), torch.randn(2, 5, 16), cache=cache)
    with pytest.raises(ValueError, match=r"^cache\[0\]: expected a cross-attention cache filled from a memory of S=7"):
        decoder(torch.randn(2, 1, 16), torch.randn(2, 7, 16), cache=cache)  # it used to answer for the old memory


def _cache_users() -> dict[str, tuple[torch.nn.Module, Callable[[torch.nn.Module, object, bool], object]]]:
    """name -> (module, call(module, cache, first)): each public entry point that reads a filled KV cache, with
    the cache it takes (``new_cache()``, one ``KVCache`` per layer for the Encoder, one for attention)."""
    from tformer.layers import Decoder
    from tformer.variants.efficient import GroupedQueryAttention

    torch.manual_seed(0)
    x, memory, new = torch.randn(2, 3, 16), torch.randn(2, 5, 16), torch.randn(2, 1, 16)

    def as_dtype(t: torch.Tensor, m: torch.nn.Module) -> torch.Tensor:
        return t.to(next(m.parameters()).dtype)

    def attention(m: torch.nn.Module, cache: object, first: bool) -> object:
        q = as_dtype(x if first else new, m)
        return m(q, q, q, cache=cache)

    def seq2seq(m: torch.nn.Module, cache: object, first: bool) -> object:
        return m.decode(TOKENS[:, :3] if first else TOKENS[:, 3:], m.encode(SRC), cache=cache)

    return {
        "DecoderOnlyTransformer": (DecoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=1, d_ff=32),
                                   lambda m, c, first: m(TOKENS[:, :3] if first else TOKENS[:, 3:], cache=c)),
        "ModernDecoderLM": (ModernDecoderLM(ModernDecoderConfig(V, d_model=16, num_heads=4, d_ff=32, num_layers=1,
                                                                num_kv_heads=2)),
                            lambda m, c, first: m(TOKENS[:, :3] if first else TOKENS[:, 3:], cache=c)),
        "Transformer.decode": (_seq2seq(), seq2seq),
        "Encoder": (Encoder(1, d_model=16, num_heads=2, d_ff=32),
                    lambda m, c, first: m(as_dtype(x if first else new, m), cache=c)),
        "Decoder": (Decoder(1, d_model=16, num_heads=2, d_ff=32),
                    lambda m, c, first: m(as_dtype(x if first else new, m), as_dtype(memory, m), cache=c)),
        "MultiHeadAttention": (MultiHeadAttention(16, 2), attention),
        "GroupedQueryAttention": (GroupedQueryAttention(16, 4, 2), attention),
    }  # fmt: skip


@pytest.mark.parametrize("name", list(_cache_users()))
def test_a_cache_of_another_dtype_is_refused_at_the_door(name: str) -> None:  # breaker: failed inside torch
    model, call = _cache_users()[name]
    model.eval()
    wide = copy.deepcopy(model).double()  # the same model in float64 fills the cache
    cache = wide.new_cache() if hasattr(wide, "new_cache") else [KVCache()] if name == "Encoder" else KVCache()
    call(wide, cache, True)
    where = "cache" if isinstance(cache, KVCache) else r"cache\[0\]"
    with pytest.raises(ValueError, match=rf"^{where}: expected keys of dtype torch.float32 \(this model's\)"
                                         r"( or narrower)?, got torch.float64: a cache filled in another dtype"):
        call(model, cache, False)
    call(wide, cache, False)  # the model that filled it still reads it


def test_padding_is_refused_with_a_cache() -> None:  # breaker: silently attended to, 0.28 off the uncached logits
    model = DecoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0).eval()
    padded = torch.tensor([[5, 6, 7, 0, 0]])
    with pytest.raises(ValueError, match=r"^tokens: expected no padding \(pad_id=0\) when a cache is given: .* got 2 "
                                         r"padded positions \(call without a cache\)$"):
        model(padded, cache=model.new_cache())
    cache = model.new_cache()  # unpadded tokens still fill and extend a cache, equal to a whole read
    first = model(padded[:, :3], cache=cache)
    torch.testing.assert_close(torch.cat([first, model(torch.tensor([[8]]), cache=cache)], dim=1),
                               model(torch.tensor([[5, 6, 7, 8]])), atol=1e-5, rtol=1e-5)

def test_a_narrower_cache_is_widened_not_refused() -> None:  # breaker: a working cache was refused
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=1, d_ff=32).eval()
    cache = model.new_cache()
    with torch.autocast("cpu", dtype=torch.bfloat16):  # filled in bfloat16, then read in float32
        model(TOKENS[:, :3], cache=cache)
    assert model(TOKENS[:, 3:], cache=cache).dtype == torch.float32
    cache = model.new_cache()
    model(TOKENS[:, :3], cache=cache)  # filled in float32, then the model becomes float64
    wide = copy.deepcopy(model).double()
    whole = wide(TOKENS)[:, 3:]
    torch.testing.assert_close(wide(TOKENS[:, 3:], cache=cache), whole, atol=1e-5, rtol=1e-5)
    # A cross-attention cache is never concatenated: its keys must be in the model's dtype exactly
    seq2seq = _seq2seq().eval()
    narrow = seq2seq.new_cache()
    seq2seq.decode(TOKENS[:, :3], seq2seq.encode(SRC), cache=narrow)
    wide = copy.deepcopy(seq2seq).double()
    with pytest.raises(ValueError, match=r"^cache\[0\]: expected keys of dtype torch.float64 \(this model's\), got "
                                         r"torch.float32"):
        wide.decode(TOKENS[:, 3:], wide.encode(SRC), cache=narrow)


def test_a_cache_filled_under_autocast_is_read_under_autocast() -> None:
    model = DecoderOnlyTransformer(V, d_model=16, num_heads=2, num_layers=1, d_ff=32).eval()
    cache = model.new_cache()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(TOKENS[:, :3], cache=cache)
        assert cache[0].key.dtype == torch.bfloat16  # autocast's dtype, not the parameters' float32
        assert model(TOKENS[:, 3:], cache=cache).shape == (2, 1, V)


def test_padding_refuses_ids_that_are_not_ints() -> None:
    from tformer.data.text import pad_sequences

    with pytest.raises(TypeError, match=r"^sequences\[0\]: expected a sequence of int ids, got \[1.7, 2.2\]$"):
        pad_sequences([[1.7, 2.2]])  # used to become [1, 2]
    assert pad_sequences([[1], [1, 2]], pad_id=-100).tolist() == [[1, -100], [1, 2]]  # targets cross-entropy ignores
    with pytest.raises(TypeError, match=r"^pad_id: expected an int, got float$"):
        pad_sequences([[1], [1, 2]], pad_id=1.5)
    assert pad_sequences([[np.int64(4)], [5, 6]]).tolist() == [[4, 0], [5, 6]]
    assert pad_sequences([[True, False], [True]]).tolist() == [[1, 0], [1, 0]]  # flags pad too (chapter 11's masks)


def test_checkpoint_extras_hold_python_numbers(tmp_path) -> None:
    path = tmp_path / "m.pt"
    save_checkpoint(path, _seq2seq(), extra={"lr": np.float32(0.5), "sizes": [np.int64(3)], "note": "x"})
    extra = torch.load(path, weights_only=True)["extra"]
    assert extra == {"lr": 0.5, "sizes": [3], "note": "x"} and type(extra["sizes"][0]) is int
    with pytest.raises(TypeError, match=r"^extra\['when'\]: expected tensors, numbers"):
        save_checkpoint(path, _seq2seq(), extra={"when": object()})


def test_a_learned_table_refuses_an_infinite_std() -> None:
    from tformer.positional import LearnedPositionalEmbedding

    with pytest.raises(ValueError, match=r"^std: expected a finite positive number, got inf$"):
        LearnedPositionalEmbedding(8, 16, std=float("inf"))


def test_encode_checks_its_length_limit() -> None:
    from tformer.data.text import Vocab

    vocab = Vocab.build([["猫", "追", "老鼠"]])
    assert vocab.encode(["猫", "追"], max_len=np.int64(2)) == vocab.encode(["猫", "追"])
    with pytest.raises(TypeError, match=r"^max_len: expected an int, got str$"):
        vocab.encode(["猫"], max_len="3")
    with pytest.raises(ValueError, match=r"^max_len: expected a non-negative int, got -1$"):
        vocab.encode(["猫"], max_len=-1)
    with pytest.raises(ValueError, match=r"^tokens: expected at most max_len=1 ids, got 2$"):
        vocab.encode(["猫", "追"], max_len=1)


@pytest.mark.parametrize("dropout", [0, 0.0, np.float32(0.0), np.int64(0)])
def test_the_2024_block_takes_any_zero_for_its_fixed_dropout(dropout: object) -> None:
    from tformer.variants.modern_block import ModernDecoderConfig

    config = ModernDecoderConfig(vocab_size=20, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=dropout)
    assert type(config.dropout) is float and config.dropout == 0.0


@pytest.mark.parametrize("dropout", [0.1, np.float32(0.5), 1])
def test_the_2024_block_refuses_another_dropout(dropout: object) -> None:
    from tformer.variants.modern_block import ModernDecoderConfig

    with pytest.raises(ValueError, match=r"^dropout: expected 0.0 \(fixed by the 2024 block\), got "):
        ModernDecoderConfig(vocab_size=20, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=dropout)


@pytest.mark.parametrize(
    ("field", "value", "error", "got"),
    [("dropout", False, TypeError, "bool False"), ("dropout", "0", TypeError, "str '0'"),
     ("norm_first", 1, TypeError, "int 1"), ("norm_first", "yes", TypeError, "str 'yes'"),
     ("norm_first", False, ValueError, "False"), ("bias", np.bool_(False), TypeError, "numpy.bool"),
     ("positional", 5, TypeError, "int 5"), ("positional", "learned", ValueError, "'learned'"),
     ("pad_id", "0", TypeError, "str '0'"), ("pad_id", 0, ValueError, "0"),
     ("final_norm", 1, TypeError, "int 1"), ("final_norm", True, ValueError, "True")],
)  # fmt: skip
def test_the_2024_blocks_fixed_fields_refuse_a_wrong_type_with_a_type_error(
    field: str, value: object, error: type, got: str
) -> None:  # breaker: a str or a bool where a number belongs was a ValueError
    from tformer.variants.modern_block import ModernDecoderConfig

    wanted = re.escape(repr(ModernDecoderConfig.FIXED[field]))
    with pytest.raises(error, match=rf"^{field}: expected {wanted} \(fixed by the 2024 block\), got {re.escape(got)}"):
        ModernDecoderConfig(vocab_size=20, d_model=16, num_heads=2, num_layers=1, d_ff=32, **{field: value})


@pytest.mark.parametrize(
    "clip, error, message",
    [
        (-1.0, ValueError, r"^clip_grad_norm: expected a number > 0, got -1.0$"),
        (0, ValueError, r"^clip_grad_norm: expected a number > 0, got 0$"),
        (float("nan"), ValueError, r"^clip_grad_norm: expected a number > 0, got nan$"),
        ("1", TypeError, r"^clip_grad_norm: expected a number, got str$"),
        (True, TypeError, r"^clip_grad_norm: expected a number, got bool$"),
    ],
)
def test_train_refuses_a_clip_that_would_stop_or_reverse_training(clip: object, error: type, message: str) -> None:
    from tformer.training.train import train

    model = torch.nn.Linear(2, 1)
    batches = [(torch.randn(4, 2), torch.randn(4, 1))]

    def loss_fn(m: torch.nn.Module, batch: tuple) -> tuple[torch.Tensor, int]:
        return torch.nn.functional.mse_loss(m(batch[0]), batch[1]), 4

    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(error, match=message):
        train(model, batches, loss_fn, max_steps=2, clip_grad_norm=clip, progress=False, device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))  # refused before a step


@pytest.mark.parametrize("device", ["tpu", "meta", 0])
def test_train_names_a_device_it_cannot_use(device: object) -> None:
    from tformer.training.train import train

    with pytest.raises((ValueError, TypeError), match=r"^device: expected "):
        train(torch.nn.Linear(2, 1), [torch.zeros(1)], lambda m, b: (m(b), 1), max_steps=1, progress=False,
              device=device)


def test_a_seed_must_fit_torchs_generator() -> None:
    from tformer.environment import seed_everything

    seed_everything(2**63 - 1)
    with pytest.raises(ValueError, match=r"^seed: expected an int in \[0, 9223372036854775807\], got 18446744073709551615$"):
        seed_everything(2**64 - 1)


def test_encode_refuses_ids_and_other_non_tokens() -> None:
    from tformer.data.text import Vocab

    vocab = Vocab.build([["猫", "追"]])
    with pytest.raises(TypeError, match=r"^tokens\[0\]: expected a str token, got int \(decode ids, not encode\)$"):
        vocab.encode([4, 5])
    with pytest.raises(TypeError, match=r"^tokens\[1\]: expected a str token, got bytes$"):
        vocab.encode(["猫", b"x"])


@pytest.mark.parametrize("eps", [0, 0.0, float("inf")])
def test_the_2024_block_refuses_an_eps_rmsnorm_cannot_use(eps: float) -> None:
    from tformer.variants.modern_block import ModernDecoderConfig

    with pytest.raises(ValueError, match=r"^norm_eps: expected a "):
        ModernDecoderConfig(vocab_size=20, d_model=16, num_heads=2, num_layers=1, d_ff=32, norm_eps=eps)
