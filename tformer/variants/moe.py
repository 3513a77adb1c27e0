"""A mixture-of-experts feed-forward layer with top-k routing (introduced in ``14_new_problems``).

The FFN holds most of a Transformer's parameters (two thirds of a layer at the paper's base size). A mixture
of experts keeps E independent FFNs ("experts") and a small router that sends each token to only k of them
(Shazeer et al. 2017, "Outrageously Large Neural Networks", §2; Fedus et al. 2022, "Switch Transformers", §2.1).
Parameters grow with E, the work per token only with k: total vs *active* parameters.

Routing here: router probabilities p = softmax(x W_r) over the E experts; the k largest are kept. With k > 1
the kept probabilities are renormalised to sum to 1 (equal to Shazeer et al.'s softmax over the kept logits,
Eq. 3–5, without their noise); with k = 1 the gate is p itself, as in the Switch Transformer (a gate of
exactly 1 would give the router no gradient). :func:`load_balancing_loss` is Fedus et al. 2022, Eq. 4–6.

Dimension letters: B batch, L length, D ``d_model``, F ``d_ff``, E experts, k experts per token, N = B·L tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from tformer._checks import check_activation, check_flags, check_ids, check_int, check_tensor
from tformer.layers import FeedForward

__all__ = ["MixtureOfExperts", "load_balancing_loss"]


class MixtureOfExperts(nn.Module):
    """E feed-forward experts and a linear router; each token is processed by its top-k experts only.

    Args:
        d_model: width D.
        d_ff: hidden width F of each expert (a :class:`~tformer.layers.FeedForward`).
        num_experts: E ≥ 1.
        top_k: k, experts per token, 1 ≤ k ≤ E.
        bias: biases in the experts (the router has none).
        activation: ``"relu"`` or ``"gelu"``, as :class:`~tformer.layers.FeedForward`.

    Shape:
        ``forward(x (B, L, D)) -> (B, L, D)``.

    Raises:
        TypeError: if a size is not an int.
        ValueError: if a size is below 1 or ``top_k > num_experts``.
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        num_experts: int,
        top_k: int = 2,
        *,
        bias: bool = True,
        activation: str = "relu",
    ) -> None:
        check_flags(bias=bias)
        super().__init__()
        d_model, d_ff, num_experts, top_k = (check_int(name, value, 1)  # Python ints: NumPy ones could overflow
            for name, value in (("d_model", d_model), ("d_ff", d_ff), ("num_experts", num_experts), ("top_k", top_k)))
        top_k = check_int("top_k", top_k, 1, num_experts)
        self.d_model, self.num_experts, self.top_k = d_model, num_experts, top_k
        self.router = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(
            FeedForward(d_model, d_ff, activation=activation, bias=bias) for _ in range(num_experts)
        )

    @property
    def total_parameters(self) -> int:
        """Every parameter: the router (D·E) and all E experts."""
        return sum(p.numel() for p in self.parameters())

    @property
    def active_parameters(self) -> int:
        """Parameters that touch one token: the router and k experts."""
        router = sum(p.numel() for p in self.router.parameters())
        return router + self.top_k * sum(p.numel() for p in self.experts[0].parameters())

    def route(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Choose k experts per token.

        Shape:
            x ``(..., D)`` -> gates ``(..., k)`` (float), indices ``(..., k)`` (int64, distinct per token, in
            order of decreasing probability), probs ``(..., E)`` (the router's full distribution).
        """
        probs = torch.softmax(self.router(x), dim=-1)  # (..., E)
        gates, indices = probs.topk(self.top_k, dim=-1)  # (..., k) each
        if self.top_k > 1:
            gates = gates / gates.sum(dim=-1, keepdim=True)  # renormalise over the kept experts
        return gates, indices, probs

    def forward(self, x: Tensor) -> Tensor:
        """Σ over the k chosen experts e of gate_e · expert_e(x), token by token.

        Each expert runs on the tokens routed to it only, so the cost is the router plus k experts per token
        (chapter 14 counts these FLOPs). Finding those tokens (``nonzero``) and skipping an idle expert read
        data-dependent sizes: on an accelerator that is one host-device sync per expert, and under
        ``torch.compile`` a graph break. A dense dispatch (every expert on every token, weighted by a zero gate
        where not chosen) would avoid both but costs E/k times the expert FLOPs and is not bit-identical, so
        this teaching implementation keeps the sparse loop; production MoE layers use grouped GEMM kernels.

        Raises:
            TypeError: if ``x`` is not a floating-point tensor. ValueError: if its last dimension is not D.
        """
        check_activation("x", x, "(..., D)", self.router.weight, D=self.d_model)
        tokens = x.reshape(-1, self.d_model)  # (N, D)
        gates, indices, _ = self.route(tokens)  # (N, k), (N, k)
        out = torch.zeros_like(tokens)  # (N, D)
        for e, expert in enumerate(self.experts):
            token_idx, slot = (indices == e).nonzero(as_tuple=True)  # tokens routed to expert e
            if token_idx.numel() == 0:
                continue
            contribution = gates[token_idx, slot, None] * expert(tokens[token_idx])  # (N_e, D)
            out = out.index_add(0, token_idx, contribution)
        return out.view(x.shape)  # (..., D)


def load_balancing_loss(probs: Tensor, indices: Tensor, num_experts: int) -> Tensor:
    """Auxiliary loss that pushes the router to spread tokens evenly: E · Σ_e f_e · P_e.

    f_e is the fraction of routing slots (tokens × k) sent to expert e, P_e the mean router probability of e
    (Fedus et al. 2022, Eq. 4–6). It equals 1 when both are uniform, and grows as routing concentrates.

    Shape:
        probs ``(..., E)``, indices ``(..., k)`` from :meth:`MixtureOfExperts.route` -> scalar.

    Raises:
        ValueError: if ``probs``' last dimension is not ``num_experts``, ``probs`` or ``indices`` holds no token
            (the loss would be NaN), the two disagree in their leading (token) dimensions, or an index lies outside ``[0, E)`` (checked on a CPU tensor, see
            :func:`tformer._checks.check_ids`).
        TypeError: if ``probs`` is not a floating-point tensor or ``indices`` not an integer tensor.
    """
    num_experts = check_int("num_experts", num_experts, 1)
    check_tensor("probs", probs, "float", "(..., E)", E=num_experts)
    check_tensor("indices", indices, "int", "(..., k)")
    check_ids("indices", indices, num_experts, letter="E")
    for name, t in (("probs", probs), ("indices", indices)):
        if t.numel() == 0:
            raise ValueError(f"{name}: expected at least one token, got shape {tuple(t.shape)}")
    if indices.shape[:-1] != probs.shape[:-1]:  # f_e and P_e must average over the same tokens
        raise ValueError(f"indices: expected the tokens of probs, shape ({', '.join(map(str, probs.shape[:-1]))}, k), "
                         f"got {tuple(indices.shape)}")  # fmt: skip
    counts = torch.bincount(indices.reshape(-1), minlength=num_experts).to(probs.dtype)  # (E,)
    fraction = counts / counts.sum()  # (E,)
    mean_prob = probs.reshape(-1, num_experts).mean(dim=0)  # (E,)
    return num_experts * (fraction * mean_prob).sum()
