"""Tests for tformer.baselines.seq2seq_rnn (encoder-decoders with and without Bahdanau attention).

References are torch's own modules with the weights copied across, and torch.autograd.functional.jacobian.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from tformer.baselines.rnn import GRU, LSTM, RNN, count_parameters
from tformer.baselines.seq2seq_rnn import BahdanauAttention, Seq2SeqRNN

TOL = {torch.float64: {"atol": 1e-10, "rtol": 1e-10}, torch.float32: {"atol": 1e-6, "rtol": 1e-6}}

# (our class, torch class, extra kwargs for both)
CELLS = [
    pytest.param(RNN, nn.RNN, {"nonlinearity": "tanh"}, id="rnn-tanh"),
    pytest.param(RNN, nn.RNN, {"nonlinearity": "relu"}, id="rnn-relu"),
    pytest.param(LSTM, nn.LSTM, {}, id="lstm"),
    pytest.param(GRU, nn.GRU, {}, id="gru"),
]


def _initial_state(torch_cls: type, num_layers: int, B: int, H: int, dtype: torch.dtype):
    h0 = torch.randn(num_layers, B, H, dtype=dtype, requires_grad=True)
    if torch_cls is nn.LSTM:
        return h0, torch.randn(num_layers, B, H, dtype=dtype, requires_grad=True)
    return h0


def _flat(state) -> list[torch.Tensor]:
    return list(state) if isinstance(state, tuple) else [state]

# --- Bahdanau attention --------------------------------------------------------------------------------------


def test_bahdanau_attention_matches_its_formula_and_masks():
    torch.manual_seed(2)
    B, L, S, Dq, Dk, A = 2, 3, 5, 4, 6, 7
    attn = BahdanauAttention(Dq, Dk, A).double()
    q = torch.randn(B, L, Dq, dtype=torch.float64)
    k = torch.randn(B, S, Dk, dtype=torch.float64)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    context, weights = attn(q, k, mask)
    # Reference: the paper's formula, one (query, key) pair at a time.
    W_s, W_h, v = attn.w_query.weight, attn.w_key.weight, attn.v.weight[0]
    for b in range(B):
        n = int(mask[b].sum())
        for i in range(L):
            scores = torch.stack([v @ torch.tanh(W_s @ q[b, i] + W_h @ k[b, j]) for j in range(n)])
            alpha = torch.softmax(scores, 0)
            assert_close(weights[b, i, :n], alpha, atol=1e-12, rtol=1e-12)
            assert_close(context[b, i], alpha @ k[b, :n], atol=1e-12, rtol=1e-12)
    assert torch.all(weights[1, :, 3:] == 0)
    # Single-query form agrees with the sequence form.
    c1, w1 = attn(q[:, 0], k, mask)
    assert_close(c1, context[:, 0], atol=1e-12, rtol=1e-12)
    assert_close(w1, weights[:, 0], atol=1e-12, rtol=1e-12)


def test_bahdanau_fully_masked_row_is_zero_and_finite():
    attn = BahdanauAttention(2, 3, 4)
    q = torch.randn(1, 2, requires_grad=True)
    k = torch.randn(1, 4, 3, requires_grad=True)
    context, weights = attn(q, k, torch.zeros(1, 4, dtype=torch.bool))
    assert torch.all(weights == 0) and torch.all(context == 0)
    context.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(k.grad).all()
    with pytest.raises(TypeError, match="mask: expected a bool"):
        attn(q, k, torch.ones(1, 4))
    with pytest.raises(ValueError, match=r"keys: expected shape \(B=1, S, Dk=3\), got \(1, 4, 5\)"):
        attn(q, torch.randn(1, 4, 5))


# --- Seq2SeqRNN ----------------------------------------------------------------------------------------------

V_SRC, V_TGT, PAD, BOS, EOS = 11, 9, 0, 1, 2
MODELS = [
    pytest.param("gru", None, id="gru-fixed"),
    pytest.param("lstm", None, id="lstm-fixed"),
    pytest.param("gru", "bahdanau", id="gru-bahdanau"),
    pytest.param("lstm", "bahdanau", id="lstm-bahdanau"),
]


def _model(cell, attention, seed=0):
    torch.manual_seed(seed)
    return Seq2SeqRNN(V_SRC, V_TGT, 8, 10, cell=cell, pad_id=PAD, attention=attention).double()


def _batch():
    src = torch.tensor([[5, 6, 7, 8, 3], [4, 9, 3, PAD, PAD], [10, PAD, PAD, PAD, PAD]])  # (3, 5), right-padded
    tgt_in = torch.tensor([[BOS, 3, 4, 5], [BOS, 6, 7, 8], [BOS, 4, 4, 3]])  # (3, 4)
    return src, tgt_in


@pytest.mark.parametrize(("cell", "attention"), MODELS)
def test_seq2seq_shapes_and_attention_weights(cell, attention):
    model = _model(cell, attention)
    src, tgt_in = _batch()
    logits = model(src, tgt_in)
    assert logits.shape == (3, 4, V_TGT)
    if attention is None:
        with pytest.raises(ValueError, match="return_attention"):
            model(src, tgt_in, return_attention=True)
        return
    logits2, weights = model(src, tgt_in, return_attention=True)
    assert_close(logits2, logits, atol=0, rtol=0)
    assert weights.shape == (3, 4, 5)
    real = src != PAD
    assert_close(weights.sum(-1), torch.ones(3, 4, dtype=torch.float64), atol=1e-12, rtol=0)
    assert torch.all(weights.masked_select(~real[:, None, :].expand_as(weights)) == 0)


@pytest.mark.parametrize(("cell", "attention"), MODELS)
def test_seq2seq_source_padding_does_not_change_logits(cell, attention):
    model = _model(cell, attention)
    src, tgt_in = _batch()
    logits = model(src, tgt_in)
    # (a) tokens under the mask changed (mask passed explicitly), (b) extra padding columns, (c) row alone.
    mask = src != PAD
    scrambled = torch.where(mask, src, torch.randint(3, V_SRC, src.shape))
    assert not torch.equal(scrambled, src)
    assert_close(model(scrambled, tgt_in, src_mask=mask), logits, **TOL[torch.float64])
    longer = torch.cat([src, torch.full((3, 3), PAD)], dim=1)  # (3, 8)
    assert_close(model(longer, tgt_in), logits, **TOL[torch.float64])
    for b in range(3):
        n = int(mask[b].sum())
        assert_close(model(src[b : b + 1, :n], tgt_in[b : b + 1]), logits[b : b + 1], **TOL[torch.float64])


@pytest.mark.parametrize(("cell", "attention"), MODELS)
def test_seq2seq_is_causal_in_the_target(cell, attention):
    model = _model(cell, attention)
    src, tgt_in = _batch()
    logits = model(src, tgt_in)
    changed = tgt_in.clone()
    changed[:, 2] = 7
    new = model(src, changed)
    assert_close(new[:, :2], logits[:, :2], atol=0, rtol=0)
    assert not torch.allclose(new[:, 2:], logits[:, 2:])


def _argmax_without_pad(logits: torch.Tensor) -> torch.Tensor:
    return logits.index_fill(-1, torch.tensor([PAD]), float("-inf")).argmax(-1)


@pytest.mark.parametrize(("cell", "attention"), MODELS)
def test_greedy_decode_matches_teacher_forcing_and_stops_rows_at_eos(cell, attention):
    # Sharpen the output layer, then raise EOS's bias until some rows stop early and others run to max_len.
    model = _model(cell, attention, seed=3)
    src, _ = _batch()
    max_len = 6
    with torch.no_grad():
        model.output.weight.mul_(20)
    for eos_bias in torch.linspace(0, 4, 17).tolist():
        with torch.no_grad():
            model.output.bias[EOS] = eos_bias
        out = model.greedy_decode(src, max_len, BOS, EOS)
        stopped = (out == EOS).any(1)
        if stopped.any() and not stopped.all():
            break
    else:
        pytest.fail("no EOS bias gave a batch where some rows stop early and others do not")
    assert out.shape == (3, max_len)
    assert not bool((out == PAD).all(1).any())
    tgt_in = torch.cat([torch.full((3, 1), BOS), out[:, :-1]], dim=1)
    pred = _argmax_without_pad(model(src, tgt_in))
    for b in range(3):
        if stopped[b]:
            first = int((out[b] == EOS).nonzero()[0])
            assert torch.all(out[b, first + 1 :] == PAD)
            n = first + 1
        else:
            assert not bool((out[b] == PAD).any())
            n = max_len
        # Each decoded token is the argmax of the teacher-forced logits given the tokens before it.
        assert torch.equal(pred[b, :n], out[b, :n])


def test_greedy_decode_eos_everywhere_and_nowhere():
    model = _model("gru", "bahdanau")
    src, _ = _batch()
    with torch.no_grad():
        model.output.bias[EOS] = 1e3
    out, weights = model.greedy_decode(src, 5, BOS, EOS, return_attention=True)
    assert torch.equal(out, torch.full((3, 1), EOS))
    assert weights.shape == (3, 1, 5)
    with torch.no_grad():
        model.output.bias[EOS] = -1e3
    out = model.greedy_decode(src, 5, BOS, EOS)
    assert out.shape == (3, 5) and not bool((out == EOS).any())


def test_seq2seq_bad_inputs():
    model = _model("gru", None)
    src, tgt_in = _batch()
    with pytest.raises(TypeError, match=r"src: expected an integer tensor"):
        model(src.double(), tgt_in)
    with pytest.raises(ValueError, match=r"src: expected shape \(B, S\) with B >= 1, S >= 1, got \(5,\)"):
        model(src[0], tgt_in)
    with pytest.raises(ValueError, match=r"tgt_in: expected batch size B=3"):
        model(src, tgt_in[:2])
    with pytest.raises(ValueError, match=r"src: expected ids in \[0, V=11\), got min 2\d, max \d\d"):
        model(src + 20, tgt_in)
    with pytest.raises(ValueError, match=r"src: expected right padding \(real tokens first, then padding\) in every row"):
        model(src.flip(1), tgt_in)
    with pytest.raises(ValueError, match="src: expected at least one non-padding token in every row"):
        model(torch.zeros(3, 4, dtype=torch.long), tgt_in)
    with pytest.raises(ValueError, match=r"cell: expected one of 'gru', 'lstm', got 'rnn'"):
        Seq2SeqRNN(5, 5, 4, 4, cell="rnn")
    with pytest.raises(ValueError, match="max_len"):
        model.greedy_decode(src, 0, BOS, EOS)


def test_fixed_and_attention_models_differ_only_by_the_attention_module():
    fixed = Seq2SeqRNN(V_SRC, V_TGT, 8, 10)
    attn = Seq2SeqRNN(V_SRC, V_TGT, 8, 10, attention="bahdanau")
    assert count_parameters(attn) - count_parameters(fixed) == count_parameters(attn.attention)


# --- regressions found by the hostile review ---------------------------------------------------------------


def test_seq2seq_empty_batch_and_byte_ids_are_clear_errors() -> None:
    model = _model("gru", None)
    src, tgt_in = _batch()
    with pytest.raises(ValueError, match=r"src: expected shape \(B, S\) with B >= 1, S >= 1, got \(0, 5\)"):
        model(src[:0], tgt_in[:0])  # was "Cannot pack empty tensors"
    with pytest.raises(ValueError, match=r"src: expected shape \(B, S\) with B >= 1, S >= 1, got \(0, 5\)"):
        model.greedy_decode(src[:0], 3, BOS, EOS)
    with pytest.raises(TypeError, match=r"src: expected dtype torch.int64 or torch.int32, got torch.uint8"):
        model(src.to(torch.uint8), tgt_in)  # was an error from inside nn.Embedding


def test_seq2seq_ids_are_checked_like_the_transformers() -> None:
    with pytest.raises(TypeError, match=r"pad_id: expected an int, got bool"):
        Seq2SeqRNN(V_SRC, V_TGT, 8, 10, pad_id=True)
    model = _model("gru", "bahdanau")
    src, _ = _batch()
    with pytest.raises(TypeError, match=r"bos_id: expected an int, got float"):
        model.greedy_decode(src, 3, 1.5, EOS)
    with pytest.raises(ValueError, match=rf"eos_id: expected an id different from model.pad_id={PAD}, got {PAD}"):
        model.greedy_decode(src, 3, BOS, PAD)
