"""Recurrent networks written from their equations: RNN, LSTM, GRU (introduced in ``01_rnn_baselines``).

Each layer loops over time with one explicit ``step`` per token, so the sequential dependency the book measures
is visible in the code. Parameters use PyTorch's names and layout (``weight_ih_l0``, ``weight_hh_l0``,
``bias_ih_l0``, ``bias_hh_l0``; gates stacked in torch's order), so ``from_torch`` is a plain state-dict copy
and the chapter can show our cell, loaded with torch's weights, reproducing ``torch.nn.RNN/LSTM/GRU``.

Everything is batch-first: inputs ``(B, L, D_in)``, outputs ``(B, L, H_hid)``. Final and initial states have
torch's shape ``(num_layers, B, H_hid)``; for the LSTM the state is the pair ``(h, c)``.

Also here: :func:`hidden_state_jacobian_norms`, which measures ‖∂h_T/∂s_t‖ for the vanishing/exploding-gradient
plot, and :func:`count_parameters`.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tformer._checks import check_activation, check_choice, check_flags, check_int, check_tensor, check_type

__all__ = ["GRU", "LSTM", "RNN", "count_parameters", "hidden_state_jacobian_norms"]

# The state of one layer at one time step: h (B, H_hid) for RNN/GRU, (h, c) for the LSTM.
LayerState = Tensor | tuple[Tensor, Tensor]


class _Recurrent(nn.Module):
    """Shared machinery: parameters in torch's layout, input checks, the time loop, ``from_torch``."""

    _num_gates: ClassVar[int] = 1
    _torch_cls: ClassVar[type[nn.RNNBase]] = nn.RNNBase

    def __init__(self, input_size: int, hidden_size: int, *, num_layers: int = 1, bias: bool = True) -> None:
        check_flags(bias=bias)
        super().__init__()
        input_size, hidden_size, num_layers = (check_int(name, value, 1)  # Python ints: NumPy ones could overflow
            for name, value in (("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers)))
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        rows = self._num_gates * hidden_size  # gates stacked along dim 0, as torch does
        for k in range(num_layers):
            in_size = input_size if k == 0 else hidden_size
            setattr(self, f"weight_ih_l{k}", nn.Parameter(torch.empty(rows, in_size)))
            setattr(self, f"weight_hh_l{k}", nn.Parameter(torch.empty(rows, hidden_size)))
            if bias:
                setattr(self, f"bias_ih_l{k}", nn.Parameter(torch.empty(rows)))
                setattr(self, f"bias_hh_l{k}", nn.Parameter(torch.empty(rows)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform(−1/√H_hid, 1/√H_hid) for every weight and bias, torch's default."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, bias={self.bias}"

    def _weights(self, layer: int) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
        w_ih = getattr(self, f"weight_ih_l{layer}")
        w_hh = getattr(self, f"weight_hh_l{layer}")
        b_ih = getattr(self, f"bias_ih_l{layer}") if self.bias else None
        b_hh = getattr(self, f"bias_hh_l{layer}") if self.bias else None
        return w_ih, w_hh, b_ih, b_hh

    # --- per-cell hooks -------------------------------------------------------------------------------------
    def step(self, x_t: Tensor, state: LayerState, layer: int = 0) -> LayerState:
        """One time step of one layer: ``state_t = f(x_t, state_{t-1})``. Overridden by each cell."""
        raise NotImplementedError

    def _zero_state(self, batch: int, ref: Tensor) -> list[LayerState]:
        zero = ref.new_zeros(batch, self.hidden_size)
        return [zero for _ in range(self.num_layers)]

    def _split_state(self, state: object, batch: int, ref: Tensor) -> list[LayerState]:
        _check_state_tensor(state, "state", (self.num_layers, batch, self.hidden_size), ref)
        return list(state.unbind(0))  # num_layers × (B, H_hid)

    def _merge_states(self, states: list[LayerState]) -> Tensor | tuple[Tensor, Tensor]:
        return torch.stack(states, 0)  # (num_layers, B, H_hid)

    @staticmethod
    def _output(state: LayerState) -> Tensor:
        return state[0] if isinstance(state, tuple) else state

    # --- the time loop --------------------------------------------------------------------------------------
    def forward(
        self, input: Tensor, state: Tensor | tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor | tuple[Tensor, Tensor]]:
        """Run the sequence through every layer, one step per token.

        Shape:
            input: (B, L, D_in), floating point, same dtype and device as the parameters.
            state: optional initial state, (num_layers, B, H_hid) — for the LSTM a pair (h_0, c_0) of that
                shape. Zeros when omitted.
            returns: outputs (B, L, H_hid), the top layer's h at every step; and the final state, shaped like
                ``state`` — exactly what ``torch.nn.RNN/LSTM/GRU(batch_first=True)`` return.

        Raises:
            TypeError: ``input`` is not a floating-point tensor, or its dtype differs from the parameters'.
            ValueError: ``input`` is not (B, L, D_in) with L ≥ 1 and D_in = ``input_size``; ``state`` has the
                wrong shape.
        """
        # token ids must go through an nn.Embedding first: they fail the floating-point check
        check_activation("input", input, "(B, L, D_in)", self.weight_ih_l0, nonempty="L", D_in=self.input_size)
        B, L, _ = input.shape
        states = self._zero_state(B, input) if state is None else self._split_state(state, B, input)

        layer_input = input
        finals: list[LayerState] = []
        for k in range(self.num_layers):
            s = states[k]
            outputs = []
            for t in range(L):  # the sequential wall: step t needs step t−1
                s = self.step(layer_input[:, t], s, layer=k)
                outputs.append(self._output(s))
            layer_input = torch.stack(outputs, dim=1)  # (B, L, H_hid)
            finals.append(s)
        return layer_input, self._merge_states(finals)

    @classmethod
    def from_torch(cls, module: nn.RNNBase) -> _Recurrent:
        """Build this cell with a copy of a ``torch.nn`` recurrent module's weights (same dtype and device).

        Accepts the matching torch class (``nn.RNN`` for :class:`RNN`, etc.), unidirectional, without LSTM
        projections, and without inter-layer dropout when ``num_layers > 1``. Its ``batch_first`` flag does not
        matter (weights are the same); our module is always batch-first.

        Raises:
            TypeError: ``module`` is not an instance of the matching torch class.
            ValueError: ``module`` is bidirectional, has ``proj_size > 0`` or active inter-layer dropout.
        """
        check_type("module", module, cls._torch_cls, f"torch.nn.{cls._torch_cls.__name__}")
        if module.bidirectional:
            raise ValueError("module: expected bidirectional=False (not implemented here), got bidirectional=True")
        if getattr(module, "proj_size", 0):
            raise ValueError(f"module: expected proj_size=0, got {module.proj_size}")
        if module.num_layers > 1 and module.dropout > 0:
            raise ValueError(f"module: expected dropout=0 between layers, got {module.dropout}")
        ours = cls._from_torch_config(module)
        ref = module.weight_ih_l0
        ours.to(device=ref.device, dtype=ref.dtype)
        ours.load_state_dict(module.state_dict())  # same names, same layout: a strict copy
        return ours

    @classmethod
    def _from_torch_config(cls, module: nn.RNNBase) -> _Recurrent:
        return cls(module.input_size, module.hidden_size, num_layers=module.num_layers, bias=module.bias)


def _check_state_tensor(value: object, name: str, shape: tuple[int, ...], ref: Tensor) -> None:
    num_layers, B, H_hid = shape
    check_tensor(name, value, "float", "(num_layers, B, H_hid)", dtype=ref.dtype, of="input",
                 num_layers=num_layers, B=B, H_hid=H_hid)


class RNN(_Recurrent):
    """Elman's simple recurrent network, h_t = tanh(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh).

    ``nonlinearity="relu"`` replaces tanh by ReLU, as in ``torch.nn.RNN``. Parameters: ``weight_ih_l{k}``
    (H_hid, D_in), ``weight_hh_l{k}`` (H_hid, H_hid), ``bias_ih_l{k}``, ``bias_hh_l{k}`` (H_hid,).
    See :meth:`forward` for shapes. Source: Elman 1990, "Finding Structure in Time", §2.

    Raises:
        TypeError: a size is not an int.
        ValueError: a size is below 1, or ``nonlinearity`` is not "tanh"/"relu".
    """

    _torch_cls = nn.RNN

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        num_layers: int = 1,
        nonlinearity: Literal["tanh", "relu"] = "tanh",
        bias: bool = True,
    ) -> None:
        check_choice("nonlinearity", nonlinearity, ("tanh", "relu"))
        super().__init__(input_size, hidden_size, num_layers=num_layers, bias=bias)
        self.nonlinearity = nonlinearity

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, nonlinearity={self.nonlinearity!r}"

    def step(self, x_t: Tensor, state: LayerState, layer: int = 0) -> Tensor:
        """h_t = f(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh). Shape: x_t (B, D_in), state (B, H_hid) → (B, H_hid)."""
        w_ih, w_hh, b_ih, b_hh = self._weights(layer)
        pre = F.linear(x_t, w_ih, b_ih) + F.linear(state, w_hh, b_hh)  # (B, H_hid)
        return torch.tanh(pre) if self.nonlinearity == "tanh" else torch.relu(pre)

    @classmethod
    def _from_torch_config(cls, module: nn.RNNBase) -> RNN:
        return cls(
            module.input_size,
            module.hidden_size,
            num_layers=module.num_layers,
            nonlinearity=module.nonlinearity,
            bias=module.bias,
        )


class LSTM(_Recurrent):
    """Long short-term memory with a forget gate, gates stacked in torch's order (i, f, g, o).

    i = σ(·), f = σ(·), g = tanh(·), o = σ(·), each of W_i· x_t + b_i· + W_h· h_{t−1} + b_h·;
    c_t = f ⊙ c_{t−1} + i ⊙ g;  h_t = o ⊙ tanh(c_t).
    Parameters: ``weight_ih_l{k}`` (4·H_hid, D_in), ``weight_hh_l{k}`` (4·H_hid, H_hid), biases (4·H_hid,) —
    four times an :class:`RNN`'s. The state is the pair (h, c), each (num_layers, B, H_hid).
    Sources: Hochreiter & Schmidhuber 1997, "Long Short-Term Memory", §4; the forget gate of Gers, Schmidhuber
    & Cummins 2000, "Learning to Forget", §2.

    Shape and Raises: as :meth:`RNN.forward` (inputs ``(B, L, D_in)`` -> outputs ``(B, L, H_hid)``), with
    the state a pair.
    """

    _num_gates = 4
    _torch_cls = nn.LSTM

    def step(self, x_t: Tensor, state: LayerState, layer: int = 0) -> tuple[Tensor, Tensor]:
        """One LSTM step. Shape: x_t (B, D_in), state (h, c) each (B, H_hid) → (h_t, c_t) each (B, H_hid)."""
        h, c = state
        w_ih, w_hh, b_ih, b_hh = self._weights(layer)
        gates = F.linear(x_t, w_ih, b_ih) + F.linear(h, w_hh, b_hh)  # (B, 4·H_hid)
        i, f, g, o = gates.chunk(4, dim=-1)  # 4 × (B, H_hid)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g  # the additive cell path
        h = o * torch.tanh(c)
        return h, c

    def _zero_state(self, batch: int, ref: Tensor) -> list[LayerState]:
        zero = ref.new_zeros(batch, self.hidden_size)
        return [(zero, zero) for _ in range(self.num_layers)]

    def _split_state(self, state: object, batch: int, ref: Tensor) -> list[LayerState]:
        if not isinstance(state, tuple | list) or len(state) != 2:
            raise TypeError(f"state: expected a pair (h_0, c_0) of tensors, got {type(state).__name__}")
        shape = (self.num_layers, batch, self.hidden_size)
        _check_state_tensor(state[0], "h_0", shape, ref)
        _check_state_tensor(state[1], "c_0", shape, ref)
        return list(zip(state[0].unbind(0), state[1].unbind(0), strict=True))

    def _merge_states(self, states: list[LayerState]) -> tuple[Tensor, Tensor]:
        h = torch.stack([s[0] for s in states], 0)  # (num_layers, B, H_hid)
        c = torch.stack([s[1] for s in states], 0)  # (num_layers, B, H_hid)
        return h, c


class GRU(_Recurrent):
    """Gated recurrent unit, gates stacked in torch's order (r, z, n), reset applied after the recurrent product.

    r = σ(W_ir x_t + b_ir + W_hr h_{t−1} + b_hr);  z = σ(W_iz x_t + b_iz + W_hz h_{t−1} + b_hz);
    n = tanh(W_in x_t + b_in + r ⊙ (W_hn h_{t−1} + b_hn));  h_t = (1 − z) ⊙ n + z ⊙ h_{t−1}.
    (Cho et al. put r inside the product, W_hn (r ⊙ h); torch and cuDNN use the form above, and so do we.)
    Parameters: three times an :class:`RNN`'s. Source: Cho et al. 2014, "Learning Phrase Representations
    using RNN Encoder–Decoder for Statistical Machine Translation", §2.3.

    Shape and Raises: as :meth:`RNN.forward` (inputs ``(B, L, D_in)`` -> outputs ``(B, L, H_hid)``).
    """

    _num_gates = 3
    _torch_cls = nn.GRU

    def step(self, x_t: Tensor, state: LayerState, layer: int = 0) -> Tensor:
        """One GRU step. Shape: x_t (B, D_in), state (B, H_hid) → (B, H_hid)."""
        w_ih, w_hh, b_ih, b_hh = self._weights(layer)
        i_r, i_z, i_n = F.linear(x_t, w_ih, b_ih).chunk(3, dim=-1)  # 3 × (B, H_hid)
        h_r, h_z, h_n = F.linear(state, w_hh, b_hh).chunk(3, dim=-1)  # 3 × (B, H_hid)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * state


def hidden_state_jacobian_norms(
    cell: RNN | LSTM | GRU,
    inputs: Tensor,
    state: Tensor | tuple[Tensor, Tensor] | None = None,
    *,
    norm: Literal["spectral", "fro"] = "spectral",
) -> Tensor:
    """How strongly the last hidden state h_T still depends on the state at each earlier step t.

    Runs ``cell`` (one layer) over one sequence x_1 … x_T from s_0 and returns ‖∂h_T/∂s_t‖ for t = 1 … T,
    where s_t is the full recurrent state: h_t for RNN and GRU, the concatenation [h_t; c_t] (2·H_hid values)
    for the LSTM, so its gradient highway through c counts. Each entry is the Jacobian of the H_hid outputs
    h_T with respect to that state; with ``norm="spectral"`` (default) its largest singular value, the most a
    gradient arriving at h_T can be amplified on its way back to s_t (‖∂L/∂s_t‖ ≤ ‖∂h_T/∂s_t‖₂·‖∂L/∂h_T‖);
    with ``norm="fro"`` the Frobenius norm. The Jacobian is built by the chain rule, one step at a time:
    ∂h_T/∂s_t = ∂h_T/∂s_{t+1} · ∂s_{t+1}/∂s_t, each step Jacobian from autograd. At t = T it is the identity
    on h (spectral norm 1, Frobenius √H_hid). Gradients are not accumulated into the cell's parameters.
    Float32 products may underflow to 0 or overflow to inf over long sequences; use a float64 cell
    (``cell.double()``) for log plots.

    Shape:
        inputs: (L, D_in) or (1, L, D_in) with L = T ≥ 1, the cell's dtype.
        state: optional initial state as for ``cell.forward`` with B = 1.
        returns: (L,), entry k is t = k + 1, i.e. distance T − t = L − 1 − k; the cell's dtype.

    Raises:
        ValueError: ``cell.num_layers != 1``; ``inputs`` has the wrong rank, batch or feature size;
            ``norm`` is not "spectral" or "fro".
        TypeError: ``cell`` is not one of our RNN/LSTM/GRU; ``inputs`` is not floating point.

    Source: Bengio, Simard & Frasconi 1994, "Learning Long-Term Dependencies with Gradient Descent is
    Difficult"; Pascanu, Mikolov & Bengio 2013, "On the difficulty of training recurrent neural networks", §2.
    """
    check_type("cell", cell, _Recurrent, "tformer.baselines.rnn.RNN, LSTM or GRU")
    if cell.num_layers != 1:
        raise ValueError(f"cell: expected num_layers=1, got {cell.num_layers}")
    check_choice("norm", norm, ("spectral", "fro"))
    if isinstance(inputs, Tensor) and inputs.dim() == 2:
        inputs = inputs.unsqueeze(0)  # (1, L, D_in)
    if isinstance(inputs, Tensor) and inputs.dim() == 3 and inputs.shape[0] != 1:
        raise ValueError(f"inputs: expected (L, D_in) or (1, L, D_in), got {tuple(inputs.shape)}")
    with torch.no_grad():  # validates the inputs and state, then records s_0 … s_T
        cell(inputs, state)
        x = inputs.detach()
        s = cell._zero_state(1, x)[0] if state is None else cell._split_state(state, 1, x)[0]
        states = [s]
        for t in range(x.shape[1]):
            s = cell.step(x[:, t], s)
            states.append(s)

    H = cell.hidden_size
    is_lstm = isinstance(cell, LSTM)
    n = 2 * H if is_lstm else H

    def flat(s: LayerState) -> Tensor:
        return torch.cat(s, dim=-1)[0] if isinstance(s, tuple) else s[0]  # (n,)

    def unflat(v: Tensor) -> LayerState:
        v = v.unsqueeze(0)  # (1, n)
        return (v[:, :H], v[:, H:]) if is_lstm else v

    def matrix_norm(m: Tensor) -> Tensor:
        return torch.linalg.matrix_norm(m, ord=2 if norm == "spectral" else "fro")

    T = x.shape[1]
    norms = x.new_empty(T)
    chain = torch.eye(n, dtype=x.dtype, device=x.device)[:H]  # ∂h_T/∂s_T: (H_hid, n)
    norms[T - 1] = matrix_norm(chain)
    with torch.enable_grad():
        for t in range(T - 1, 0, -1):  # s_{t+1} = step(x_{t+1}, s_t), and x_{t+1} is x[:, t]
            x_next = x[:, t]

            def step_flat(v: Tensor, x_next: Tensor = x_next) -> Tensor:
                return flat(cell.step(x_next, unflat(v)))

            jac = torch.autograd.functional.jacobian(step_flat, flat(states[t]), vectorize=True)  # (n, n)
            chain = chain @ jac  # ∂h_T/∂s_t: (H_hid, n)
            norms[t - 1] = matrix_norm(chain)
    return norms


def count_parameters(module: nn.Module, *, trainable_only: bool = True) -> int:
    """Number of scalar parameters in ``module`` (only those with ``requires_grad`` unless told otherwise).

    For one layer with D_in inputs and H_hid hidden units, an :class:`RNN` has H_hid·(D_in + H_hid + 2); a
    :class:`GRU` exactly 3× that and an :class:`LSTM` exactly 4×, since they stack 3 and 4 such blocks.
    """
    check_flags(trainable_only=trainable_only)
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)
