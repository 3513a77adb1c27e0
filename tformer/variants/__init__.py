"""Changes to the 2017 design: cheaper attention (chapter 14) and a 2024 decoder block (chapter 14's race).

- ``efficient``: grouped-query / multi-query attention (optionally with RoPE), sliding-window masks, linear
  attention.
- ``moe``: a mixture-of-experts feed-forward layer with top-k routing.
- ``rmsnorm``: :class:`RMSNorm`, root mean square normalisation (Zhang & Sennrich 2019).
- ``swiglu``: :class:`SwiGLUFeedForward` and :func:`swiglu_hidden_width`, the gated FFN (Shazeer 2020) at
  the 2017 FFN's parameter count, rounded as Llama does.
- ``neighbour``: :class:`NeighbourEmbedding`, a token embedding plus a (previous token, token) pair embedding
  and a width-3 depthwise convolution (chapter 11's reading tagger), and :func:`pair_keys`.
- ``modern_block``: :class:`ModernDecoderLayer`, :class:`ModernDecoderLM` and :class:`ModernDecoderConfig`, the Llama-style block (pre-RMSNorm,
  SwiGLU, RoPE, GQA, no biases; Touvron et al. 2023) and :func:`modern_lm_parameter_count`.
"""

from tformer.variants.efficient import (
    GroupedQueryAttention,
    LinearAttention,
    elu_feature_map,
    linear_attention,
    sliding_window_mask,
)
from tformer.variants.modern_block import (
    ModernDecoderConfig,
    ModernDecoderLayer,
    ModernDecoderLM,
    modern_lm_parameter_count,
)
from tformer.variants.moe import MixtureOfExperts, load_balancing_loss
from tformer.variants.neighbour import NeighbourEmbedding, pair_keys
from tformer.variants.rmsnorm import RMSNorm
from tformer.variants.swiglu import SwiGLUFeedForward, swiglu_hidden_width

__all__ = [
    "GroupedQueryAttention",
    "LinearAttention",
    "MixtureOfExperts",
    "ModernDecoderConfig",
    "ModernDecoderLM",
    "ModernDecoderLayer",
    "NeighbourEmbedding",
    "RMSNorm",
    "SwiGLUFeedForward",
    "elu_feature_map",
    "linear_attention",
    "load_balancing_loss",
    "modern_lm_parameter_count",
    "pair_keys",
    "sliding_window_mask",
    "swiglu_hidden_width",
]
