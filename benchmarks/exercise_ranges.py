"""Measure the run-it exercises over several seeds and write their accepted ranges (a script, not a test).

    OMP_NUM_THREADS=1 python benchmarks/exercise_ranges.py [EXERCISE_ID ...]   (default: every one below)

Each run-it exercise (``tformer.book.exercises.check_measured``) asks the reader to change one argument of a
function defined in the chapter's exercise section and report what it returns. This script takes that function
from the chapter's own source (``notebooks/NN_name.py``: the code cell that defines it is executed with the
chapter's imports, after the cells that define what it ``uses``, such as the chapter's model class), calls it
for seeds 0, 1 and 2 with the reader's change (``change``) and without it (``control``), and writes an entry
made by ``make_measured_entry`` into ``tformer/book/exercise_answers/NN.json``: the per-seed values, the rule
and margin, and the range ``measured_range`` derives from them. The arithmetic entries of the same file are
kept. ``tests/exercises/test_measured_exercises.py`` re-derives every stored range
from the stored per-seed values, so the file cannot drift from this rule.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import jupytext
import torch

from tformer.book.exercises import make_measured_entry

ROOT = Path(__file__).resolve().parent.parent
SEEDS = (0, 1, 2)

# id: chapter source, function, the reader's change, margin (fraction of the mean), bounds, and the texts.
EXERCISES: dict[str, dict] = {
    "01.5": {
        "notebook": "01_rnn_baselines",
        "function": "lstm_factor_per_step",
        "change": {"forget_bias": 3.0},
        # Seeded float64 arithmetic: the seeds spread by about 1%; 2% of the mean on each side leaves room for
        # another machine and rejects forget_bias=2 (about 0.97) and the unchanged cell (about 0.6).
        "margin": 0.02,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "fitted factor per step of the LSTM's ‖∂s_T/∂s_t‖ at initialisation, forget-gate bias + 3",
        "too_low": "About 0.6 is the unchanged LSTM (section 4): the bias was not raised, or was added to another "
        "gate's block (i, f, g, o: the forget gate is the second).",
        "too_high": "Well above 1 means the gradient grows: check that you added 3, not a larger number.",
        "hint": "Call lstm_factor_per_step(seed=0, forget_bias=3.0).",
    },
    "01.6": {
        "notebook": "01_rnn_baselines",
        "function": "rnn_factor_per_step",
        "uses": ["factor_per_step"],
        "change": {"orthogonal": True},
        # Seeded float64 arithmetic: the seeds spread by about 1%; 3% of the mean on each side leaves room for
        # another machine and rejects the default initialisation (about 0.46).
        "margin": 0.03,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "fitted factor per step of a tanh RNN's ‖∂h_T/∂h_t‖ at initialisation, W_hh orthogonal",
        "too_low": "About 0.46 is PyTorch's default W_hh (spectral radius about 0.6): W_hh was not replaced.",
        "too_high": "A factor of 1 would need every tanh slope 1 − h² to be 1, i.e. h = 0 at every step: with "
        "inputs the units move away from 0 and the slope shrinks the gradient. Check that you used the "
        "function as it is, with its random inputs.",
        "hint": "Call rnn_factor_per_step(seed=0, orthogonal=True).",
    },
    "02.5": {
        "notebook": "02_seq2seq_bottleneck",
        "function": "reverser_final_loss",
        "change": {"shift": False},
        # A loss this close to zero varies by hardware in relative terms; the claim is only "far below the
        # shifted model's loss", so the margin is ten times the mean (as in 06.4).
        "margin": 10.0,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "training loss of the digit reverser in its last 10 steps, decoder reading the unshifted target",
        # The range starts at 0, the lowest possible loss, so this text cannot be shown; make_measured_entry needs one.
        "too_low": "A cross-entropy loss cannot be negative.",
        "too_high": "About 0.26 is the honest, shifted model's loss: the decoder still reads shift_right(target).",
        "hint": "Call reverser_final_loss(seed=0, shift=False): the decoder input becomes the target itself.",
    },
    "02.6": {
        "notebook": "02_seq2seq_bottleneck",
        "function": "reverse_accuracy",
        "change": {"length": 12},
        "margin": 0.1,
        "floor": 0.0,
        "ceiling": 1.0,
        "quantity": "share of digits in place when the fixed-context reverser reverses 12-digit strings",
        "too_low": "Near 0.1 is chance for one digit in ten: check that you passed the accuracy, not an error rate.",
        "too_high": "About 0.8 is the 6-digit run: the length was not changed to 12 (or the model has attention).",
        "hint": "Call reverse_accuracy(seed=0, length=12).",
    },
    "03.5": {
        "notebook": "03_attention_weighted_average",
        "function": "weight_on_match",
        "change": {"S": 16},
        # 1000 random sentences per seed: the seeds spread by about 0.02; 10% of the mean (0.03) on each side
        # still rejects the unchanged S = 8 (about 0.47).
        "margin": 0.1,
        "floor": 0.0,
        "ceiling": 1.0,
        "quantity": "mean softmax weight on the token the query matches, S = 16 tokens, d = 3 random features",
        "too_low": "Well below the range means a sentence longer than 16 tokens: about 0.21 is S = 32 (more "
        "competitors share the weight).",
        "too_high": "About 0.47 is the unchanged sentence of S = 8 tokens: the length was not doubled.",
        "hint": "Call weight_on_match(seed=0, S=16).",
    },
    "03.6": {
        "notebook": "03_attention_weighted_average",
        "function": "learn_queries",
        "change": {"temperature": 0.02},
        # 256 dictionaries per seed: a fraction near 0.13 has a sampling spread of about
        # sqrt(0.13 * 0.87 / 256) ≈ 0.021, and other seeds land as far out as 0.094 (seed 26) and 0.191
        # (seed 11); 60% of the mean (about 0.08, four spreads) on each side keeps them inside. The range
        # still rejects τ = 1 (about 0.9); it contains chance (1/8), which is the exercise's point: at
        # τ = 0.02 the gradient has all but vanished and the queries barely move.
        "margin": 0.6,
        "floor": 0.0,
        "ceiling": 1.0,
        "quantity": "fraction of 256 random dictionaries whose trained query picks the wanted key, τ = 0.02",
        "too_low": "Far below 1/8 (chance), fewer queries pick the wanted key than before training: pass the "
        "fraction learn_queries returns, not a loss.",
        "too_high": "About 0.9 or more is τ = 1: the temperature was not changed.",
        "hint": "Call learn_queries(seed=0, temperature=0.02): the scores are divided by 0.02 before the softmax.",
    },
    "04.4": {
        "notebook": "04_query_key_value",
        "function": "retrieval_accuracy",
        "uses": ["Retriever"],
        "change": {"project_query_key": False},
        # 2,000 test memories; the seeds spread by about 0.02, and 15% of the mean (0.05) leaves room for other
        # machines while rejecting the projected model (1.0).
        "margin": 0.15,
        "floor": 0.0,
        "ceiling": 1.0,
        "quantity": "test accuracy of the retrieval model trained without W_Q and W_K (raw scores x·x / √32)",
        "too_low": "Near 1/16 (0.06) is chance: the model did not train, or the value is not the accuracy.",
        "too_high": "Near 1.0 is the model with W_Q and W_K: project_query_key is still True.",
        "hint": "Call retrieval_accuracy(seed=0, project_query_key=False) and pass the fraction it returns.",
    },
    "04.5": {
        "notebook": "04_query_key_value",
        "function": "self_match_rate",
        "change": {"D": 2},
        "margin": 0.1,
        "floor": 0.0,
        "ceiling": 1.0,
        "quantity": "fraction of rows whose best key is the token itself, shared W_Q = W_K, D = 2, L = 8",
        "too_low": "About 0.25 is D = 1; 1/8 would be chance.",
        "too_high": "About 0.95 is the chapter's D = 16 (the argument was not changed); about 0.5 is D = 4.",
        "hint": "Call self_match_rate(seed=0, D=2).",
    },
    "07.5": {
        "notebook": "07_multi_head_attention",
        "function": "merge_difference",
        "change": {"transpose_before_merge": False},
        "margin": 0.1,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "relative difference ‖by hand − MultiHeadAttention‖ / ‖MultiHeadAttention‖ when the heads are "
        "merged without the transpose (B = 2, L = 6, D = 512, H = 8)",
        "too_low": "A difference of 0, or rounding noise near 1e-7, means the heads were merged correctly, transpose "
        "and all.",
        "too_high": "Above the range the two outputs differ by more than a scrambled merge does: check that both "
        "use the same module and input.",
        "hint": "Call merge_difference(seed=0, transpose_before_merge=False).",
    },
    "07.6": {
        "notebook": "07_multi_head_attention",
        "function": "two_back_accuracy",
        "uses": ["TwoQuestionModel"],
        "change": {"num_heads": 1},
        # 6000 scored answers per seed; the seeds spread by about 0.03 above chance (1/8). 30% of the mean keeps
        # the range far below two heads (about 0.98).
        "margin": 0.3,
        "floor": 0.0,
        "ceiling": 1.0,
        "quantity": "two-steps-back test accuracy of TwoQuestionModel with one head after 600 updates",
        "too_low": "Below the 1/8 of chance: the value is probably not this accuracy.",
        "too_high": "Near 0.98 is two heads: num_heads is still 2.",
        "hint": "Call two_back_accuracy(seed=0, num_heads=1) and pass the fraction it returns.",
    },
    "05.4": {
        "notebook": "05_hand_calculation",
        "function": "largest_weight",
        "change": {"divide_by": 256.0},
        # Seeded float32 arithmetic: the seeds spread by about 1e-4, and 1% of the mean (7e-4) leaves several
        # times that for other machines while rejecting neighbouring divisors (200 gives 0.072, 512 gives 0.066).
        "margin": 0.01,
        "floor": 1 / 16,
        "ceiling": 1.0,
        "quantity": "mean largest softmax weight over S = 16 keys, d_k = 256, scores divided by d_k",
        "too_low": "The largest of 16 weights is at least 1/16: a value below the range is not the mean largest weight.",
        "too_high": "Near 0.25 is the right scale (√d_k), near 0.9 no scale at all: the division by d_k did not happen.",
        "hint": "Call largest_weight(seed=0, divide_by=256): d_k itself, not its square root.",
    },
    "05.5": {
        "notebook": "05_hand_calculation",
        "function": "scaled_score_variance",
        "change": {"std": 2.0},
        "margin": 0.1,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "Var(q·k / √d_k) at d_k = 64 with components of standard deviation 2",
        "too_low": "About 1 means the components still have standard deviation 1; about 4 means only q or only k "
        "was scaled (each factor 2 multiplies the variance by 4).",
        "too_high": "About 1000 means the ÷√d_k was dropped as well: the variance is then d_k times larger.",
        "hint": "Var(q·k) = d_k·σ⁴ for components of variance σ²; divide by d_k. Call scaled_score_variance(seed=0, std=2.0).",
    },
    "06.4": {
        "notebook": "06_self_attention_and_masks",
        "function": "train_tiny_decoder",
        "change": {"use_mask": False},
        # A loss this close to zero varies by hardware in relative terms (a GPU, another thread count); the
        # claim is only "far below the masked floor of about 1", so the margin is ten times the mean.
        "margin": 10.0,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "final training loss of the tiny decoder trained without the causal mask",
        # The range starts at 0, the lowest possible loss, so this text cannot be shown; make_measured_entry needs one.
        "too_low": "A cross-entropy loss cannot be negative.",
        "too_high": "About 1.2 is the masked model's loss (above its expected floor of 5/11 · ln 10 ≈ 1.05, since 5 of "
        "the 11 targets are random digits): the mask is still on. A value near 1 may also be an accuracy: pass "
        "the final loss, not an accuracy.",
        "hint": "Call train_tiny_decoder(seed=0, use_mask=False): the mask becomes None, and each query may read "
        "the key one position to its right.",
    },
    "06.5": {
        "notebook": "06_self_attention_and_masks",
        "function": "last_query_largest_weight",
        "change": {"divide_by_sqrt_d": False},
        "margin": 0.1,
        "floor": 1 / 16,
        "ceiling": 1.0,
        "quantity": "mean largest causal self-attention weight of the last query, D = 64, without ÷√D",
        "too_low": "Around 0.25 is the scaled softmax: the division by √D is still there.",
        "too_high": "Above the range would be an almost exact one-hot; check that you averaged over the sentences.",
        "hint": "Call last_query_largest_weight(seed=0, divide_by_sqrt_d=False).",
    },
    "08.4": {
        "notebook": "08_positional_encoding",
        "function": "look_back_without_positions",
        "change": {"use_positions": False},
        # 13 scored positions x 256 test sequences: the accuracy's sampling noise is about 0.01, and the seeds
        # sit at the ceiling of the counting rule (the Why? question); 15% of the mean leaves room for both.
        "margin": 0.15,
        "floor": 0.0,
        "ceiling": 1.0,
        "quantity": "look-back-3 test accuracy at length 16 of a one-layer decoder trained without positions",
        "too_low": "Near 1/16 ≈ 0.06 is chance: the model learned nothing, not even the counting rule. Check that "
        "num_updates is left at 300.",
        "too_high": "Near 1 is the model with its positions: use_positions is still True. A value above 1 is a "
        "percentage: pass the fraction the function returns.",
        "hint": "Call look_back_without_positions(seed=0, use_positions=False).",
    },
    "08.5": {
        "notebook": "08_positional_encoding",
        "function": "look_back_past_training_length",
        "change": {"positional": "learned"},
        # Untrained table rows give accuracy near chance (1/16) whatever the machine; a quarter of the mean
        # keeps chance inside the range and the sinusoidal table's better score outside it.
        "margin": 0.25,
        "floor": 0.0,
        "ceiling": 1.0,
        "quantity": "look-back-3 accuracy on the unseen positions 16-63, learned position table, trained on lengths <= 16",
        "too_low": "Chance is one symbol in 16, about 0.06, and an untrained row cannot do much worse: check that you "
        "passed the function's return value, the mean accuracy over positions 16-63.",
        "too_high": "About one half is RoPE's accuracy there: positional is still \"rope\". Somewhat above the range "
        "is the sinusoidal table (positional=\"sinusoidal\"), which at least exists beyond the training length.",
        "hint": "Call look_back_past_training_length(seed=0, positional=\"learned\").",
    },
    "09.5": {
        "notebook": "09_transformer_block",
        "function": "reversal_loss",
        "change": {"residual": False},
        # The stack without residuals sits at the uniform guess, ln 8 ≈ 2.08; 5% of the mean (0.1) covers the
        # noise of the last 20 batches and other machines, far from the residual stack's loss near 0.
        "margin": 0.05,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "mean training loss (last 20 of 150 updates) of a 6-layer post-norm stack without residuals, "
        "reversing 8 symbols",
        "too_low": "A loss near 0 is the stack with its residuals, which solves the task: residual is still True.",
        "too_high": "ln 8 ≈ 2.08 is a uniform guess among the 8 symbols; clearly above it, the run diverged or the "
        "value is not the mean loss per token the function returns.",
        "hint": "Call reversal_loss(seed=0, residual=False).",
    },
    "09.6": {
        "notebook": "09_transformer_block",
        "function": "first_to_last_gradient",
        "change": {"norm_first": False},
        # One initialisation per seed: the post-norm ratio scatters from about 0.05 to 0.4 over seeds 0-9, so
        # the margin is half the mean; pre-norm's ratio (about 2 over the same seeds) stays far above.
        "margin": 0.5,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "first-layer / last-layer gradient norm at initialisation of a 96-layer post-norm Encoder",
        "too_low": "A ratio this small means the first layer got almost no gradient, as in a far deeper stack or one "
        "without residuals: check that depth is 96 and that you divided the first layer's norm by the last's.",
        "too_high": "Around 2 is the pre-norm stack, whose first layer gets more than its last: norm_first is still "
        "True. Did you divide the last layer's norm by the first's instead?",
        "hint": "Call first_to_last_gradient(seed=0, norm_first=False).",
    },
    "10.5": {
        "notebook": "10_encoder_decoder",
        "function": "reversal_accuracy",
        "change": {"blind": True},
        # 1,200 test digits per seed: the blind model's accuracy is chance (1/10) give or take about 0.01;
        # 40% of the mean on each side leaves room for other machines and stays far below the seeing model's
        # (about 1.0).
        "margin": 0.4,
        "floor": 0.0,
        "ceiling": 1.0,
        "quantity": "share of unseen strings' digits predicted right under teacher forcing by the reverser "
        "trained and tested with an encoder memory of zeros",
        "too_low": "Well below 1/10 the model does worse than guessing a digit: pass the share of right digits "
        "the function returns, not an error rate or a loss.",
        "too_high": "Near 1 is the reverser that reads the source: blind is still False, or the zeros were "
        "given in training but the real memory at test time.",
        "hint": "Call reversal_accuracy(seed=0, blind=True): the decoder sees only the digits written so far.",
    },
    "10.6": {
        "notebook": "10_encoder_decoder",
        "function": "final_loss",
        "uses": ["train_reverser"],
        "change": {"label_smoothing": 0.1},
        # Three trained models end within about 0.01 of each other, some 0.02 above the floor; 10% of the mean
        # on each side leaves room for other machines and rejects ε = 0.2 (a floor of about 0.96). The range
        # starts at the floor itself: the smoothed target's entropy, no loss can be lower.
        "margin": 0.1,
        "floor": 0.547,
        "ceiling": None,
        "quantity": "mean training loss (smoothing included) over the last 10 of 150 updates of the digit "
        "reverser, label smoothing ε = 0.1, V = 14",
        "too_low": "A loss near 0 is the unsmoothed run: label_smoothing is still 0. No model can go below the "
        "smoothed target's entropy, about 0.547 nats for ε = 0.1 and V = 14.",
        "too_high": "Far above the floor (about 0.547 nats), the model has not learned the task: check that "
        "label_smoothing is 0.1, not 0.2 (a floor of about 0.96) or 1 (a uniform target, whose floor is "
        "ln 14 ≈ 2.64), and that the 150 updates ran.",
        "hint": "Call final_loss(seed=0, label_smoothing=0.1). The floor is the smoothed target's entropy: "
        "p = 1 − ε + ε/V on the right id, ε/V on each of the V − 1 others.",
    },
    "11.5": {
        "notebook": "11_real_sentences",
        "function": "neighbour_polyphone_accuracy",
        "change": {"side": "right"},
        # A count on a fixed split: every seed gives the same value; 1% of the mean absorbs rounding and
        # rejects the left-neighbour lookup (about 5 points higher) and the baseline.
        "margin": 0.01,
        "floor": 0.0,
        "ceiling": 100.0,
        "quantity": "polyphone accuracy (%) on the test split of the lookup by (next character, character)",
        "too_low": "Below the range: check that you passed a percentage of the polyphones (not of all "
        "characters, not a fraction in [0, 1]).",
        "too_high": "About 95.8% is the left-neighbour lookup of section 2: side is still 'left'. The range "
        "itself sits between it and the context-free baseline.",
        "hint": "Call neighbour_polyphone_accuracy(side='right').",
    },
    "11.6": {
        "notebook": "11_real_sentences",
        "function": "frequent_reading_accuracy",
        "uses": ["neighbour_polyphone_accuracy"],
        "change": {"fraction": 0.05},
        # Which 5% is drawn moves the score by about a point between seeds; 3% of the mean on each side keeps
        # the seeds in and rejects the baseline counted on all of the training split (about 89%).
        "margin": 0.03,
        "floor": 0.0,
        "ceiling": 100.0,
        "quantity": "polyphone accuracy (%) on the test split of the most frequent readings counted on 5% of "
        "the training sentences",
        "too_low": "Well below the range: check the fraction (0.05, not 0.005) and that you passed the polyphone "
        "accuracy in percent.",
        "too_high": "About 89% is the baseline counted on the whole training split: fraction is still 1.0.",
        "hint": "Call frequent_reading_accuracy(seed=0, fraction=0.05).",
    },
    "12.5": {
        "notebook": "12_three_families",
        "function": "cache_error",
        "change": {"causal": False},
        # An untrained model: how far the stale cached states move the logits depends on the initial weights
        # (about 0.9 to 1.5 over seeds 0-2); half the mean on each side covers other seeds and machines and
        # stays far above the causal body's float32 rounding (about 1e-6).
        "margin": 0.5,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "largest |logit difference| between a whole read and a KV-cached read of 16 tokens, one-stack "
        "body without the causal mask",
        "too_low": "About 1e-6 is float32 rounding: the cached and whole reads agree, so the body still has its "
        "causal mask (causal is still True).",
        "too_high": "Well above the range: check that the model is in eval mode and that you passed the largest "
        "absolute difference the function returns, not a sum over positions.",
        "hint": "Call cache_error(seed=0, causal=False).",
    },
    "12.6": {
        "notebook": "12_three_families",
        "function": "distinct_characters",
        "change": {"temperature": 0.3},
        # A count of distinct characters in one 200-character sample: a few characters either way between
        # seeds; a fifth of the mean on each side keeps the T = 1 sample (more than twice as many) outside.
        "margin": 0.2,
        "floor": 1.0,
        "ceiling": None,
        "quantity": "distinct characters in 200 characters sampled at T = 0.3 from a small character model "
        "(60 updates)",
        "too_low": "Very few distinct characters is greedy decoding's loop (T = 0 or close to it): check that "
        "you passed temperature=0.3, not 0 or 0.03.",
        "too_high": "Around twice the range is the model's own distribution, T = 1: the temperature was not "
        "lowered (or was raised: a higher T flattens the distribution and uses even more characters).",
        "hint": "Call distinct_characters(seed=0, temperature=0.3).",
    },
    "14.5": {
        "notebook": "14_new_problems",
        "function": "kv_bytes_per_token",
        "change": {"num_kv_heads": 1},
        # An exact count (2 · layers · H_kv · Dh · 4 bytes per token), the same for every seed and machine:
        # 1% of the mean only absorbs a reader's rounding.
        "margin": 0.01,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "KV cache bytes per generated token of a 3-layer GQA stack (D = 96, 12 query heads, batch 1) "
        "with one key/value head (MQA)",
        "too_low": "Below the range: check that you divided the cache's bytes by the 20 tokens once, not by "
        "the layers or heads as well.",
        "too_high": "About 12 times the range is multi-head attention (num_kv_heads is still 12); a value in "
        "between is grouped-query attention with several key/value heads. Twice the range: did you "
        "count K and V twice?",
        "hint": "bytes per token = 2 (K and V) · layers · H_kv · Dh · 4 bytes (float32). Call "
        "kv_bytes_per_token(seed=0, num_kv_heads=1).",
    },
    "14.6": {
        "notebook": "14_new_problems",
        "function": "moe_flops_over_dense",
        "change": {"num_experts": 64},
        # An exact count (torch's FLOP counter on fixed shapes), the same for every seed and machine: 1% of
        # the mean only absorbs a reader's rounding and keeps the 8-expert ratio (about 2.02) outside.
        "margin": 0.01,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "FLOPs of MixtureOfExperts(48, 192, 64 experts, top 2) on 256 tokens / FLOPs of one dense "
        "FeedForward(48, 192)",
        "too_low": "About 2.02 is the 8-expert layer: num_experts is still 8. About 1 is top_k = 1: you "
        "changed the number of experts each token uses, not the number of experts.",
        "too_high": "About 64 (or 32) would mean every expert runs on every token: check that you passed the "
        "FLOP ratio the function returns; top_k is 2.",
        "hint": "Only the router grows with the number of experts: 2·D·E FLOPs per token next to the k experts' "
        "4·D·F each. Call moe_flops_over_dense(seed=0, num_experts=64).",
    },
    "13.5": {
        "notebook": "13_complexity",
        "function": "attention_memory_mib",
        "change": {"num_heads": 8},
        # Exact byte counts: every seed gives the same peak, so the margin only leaves room for another torch
        # version allocating a tensor more or less (10% of the mean); 4 heads (about 32.5 MiB) and 16 heads
        # (about 128.5 MiB) fall outside.
        "margin": 0.1,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "peak tensor memory (MiB) of the training-mode attention core, n = 1024, d = 64, 8 heads",
        "too_low": "About 8.5 MiB is one head: num_heads is still 1. Around 32 MiB is 4 heads, and about 4 MiB "
        "would be one n × n matrix alone; pass the peak the function returns, in MiB.",
        "too_high": "About 128 MiB is 16 heads, and a value in the millions is bytes, not MiB (divide by 2**20); "
        "otherwise check that n is still 1024 and d still 64.",
        "hint": "Call attention_memory_mib(seed=0, num_heads=8): every head holds its own n × n scores and weights.",
    },
    "13.6": {
        "notebook": "13_complexity",
        "function": "longest_chain",
        "change": {"n": 32},
        # A count of autograd operations, the same for every seed; 10% of the mean leaves room for another torch
        # version recording an operation more or less per step, while rejecting n = 16 (about half) and n = 64.
        "margin": 0.1,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "operations on the longest autograd path from the input to the last output, tformer RNN, n = 32",
        "too_low": "About half the range is n = 16, the unchanged length. A small number that does not change "
        "with n is the attention layer's chain: layer was set to \"attention\"; the exercise asks for the RNN's.",
        "too_high": "About twice the range is n = 64: the length was quadrupled, not doubled.",
        "hint": "Call longest_chain(seed=0, n=32): each RNN step adds the same few operations to the chain.",
    },
    "15.5": {
        "notebook": "15_parallelism",
        "function": "forgot_to_average",
        "change": {"optimizer": "adam"},
        # Float64 arithmetic: Adam's ratio differs from 1 only through its eps (about 1e-6 here); a 2% margin
        # leaves room for other machines and rejects SGD's drift (about 1.4–1.6 over the seeds).
        "margin": 0.02,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "distance moved by data-parallel Adam without the ÷N (N = 4) over the one-process distance, 20 steps",
        "too_low": "Well below 1 the buggy run moved less than the right one: check that you divided the data-parallel "
        "distance by the one-process distance, not the other way round.",
        "too_high": "Around 1.4–1.6 is plain SGD, where a gradient N times too large is a step N times too large: "
        "optimizer is still \"sgd\".",
        "hint": "Call forgot_to_average(seed=0, optimizer=\"adam\").",
    },
    "15.6": {
        "notebook": "15_parallelism",
        "function": "tensor_parallel_error",
        "change": {"split": "input"},
        # One random layer per seed: the error spreads by about 0.05 over the seeds; 15% of the mean leaves room
        # for other machines, far above the correct split's float32 rounding (about 1e-7).
        "margin": 0.15,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "relative error of a FeedForward(32, 64) split across 2 devices by input features, ReLU on the "
        "partial sums",
        "too_low": "A value near 1e-7 is float32 rounding: the layer was split by hidden units (split=\"hidden\"), "
        "which is exact.",
        "too_high": "An error near 1 or above means more than the ReLU went wrong: check that W_2's bias is added once, "
        "after the sum, and W_1's bias on one device only.",
        "hint": "Call tensor_parallel_error(seed=0, split=\"input\").",
    },
    "16.5": {
        "notebook": "16_summary",
        "function": "generation_loss",
        "change": {"causal": False},
        # Three trained models: the unmasked one's prefix loss spreads by about 0.4 over the seeds (it is
        # confidently wrong, and how confidently varies); 15% of the mean leaves room for other machines and
        # stays far above the masked model's (about 1.07).
        "margin": 0.15,
        "floor": 0.0,
        "ceiling": None,
        "quantity": "next-token loss of the copier trained without the causal mask, each token predicted from its "
        "prefix alone",
        "too_low": "About 1.07 is the masked model (the floor of 5/11 · ln 10 ≈ 1.05 plus a little): causal is "
        "still True. A value near 0 is the unmasked model's training loss, not its generation loss.",
        "too_high": "Far above the range, the training may have diverged: check that num_updates is 200 and the "
        "learning rate unchanged.",
        "hint": "Call generation_loss(seed=0, causal=False).",
    },
    "16.6": {
        "notebook": "16_summary",
        "function": "copy_accuracy",
        "uses": ["train_copier"],
        "change": {"shift": False},
        # The unshifted model repeats the prompt's last digit: right on the copy's last digit and by chance
        # (1/10) elsewhere, about 0.25; the seeds spread by about 0.02, and 20% of the mean still rejects the
        # shifted model (about 1.0).
        "margin": 0.2,
        "floor": 0.0,
        "ceiling": 1.0,
        "quantity": "fraction of the second half copied correctly by greedy generation, copier trained without the shift",
        "too_low": "Below the range the model does worse than repeating the prompt's last digit (right on the "
        "copy's last digit, one time in ten elsewhere): pass the fraction of correct digits the function returns, "
        "not an error rate.",
        "too_high": "Near 1 is the model trained with the shift: shift is still True.",
        "hint": "Call copy_accuracy(seed=0, shift=False).",
    },
}


def load_function(notebook: str, name: str, uses: tuple[str, ...] = ()):
    """Execute the chapter's imports, the cells that define ``uses`` (earlier definitions the function needs,
    e.g. the chapter's model class) and the code cell that defines ``name``; return the function."""
    cells = [c.source for c in jupytext.read(ROOT / "notebooks" / f"{notebook}.py").cells if c.cell_type == "code"]
    namespace: dict = {}
    # The chapter's imports cell: the first code cell that starts with an import, after the Colab setup cell.
    imports = next(c for c in cells if c.lstrip().startswith("import ") and "google.colab" not in c)
    # The setup cell's side effects (font, device print, results manifest) are not needed: only its import
    # statements, taken whole (an import may span several lines in parentheses).
    statements = [node for node in ast.parse(imports).body if isinstance(node, (ast.Import, ast.ImportFrom))]
    exec(compile(ast.Module(statements, type_ignores=[]), f"{notebook}: imports", "exec"), namespace)
    for needed in (*uses, name):
        defining = [c for c in cells if f"def {needed}(" in c or f"class {needed}(" in c]
        if len(defining) != 1:
            raise SystemExit(f"exercise_ranges: {notebook}: expected one cell defining {needed}, found {len(defining)}")
        # Run the cell up to its checker lines (which need a measured value).
        exec(defining[0].split("\nmeasured = None")[0], namespace)
    return namespace[name]


def measure(exercise_id: str) -> dict:
    """Run one exercise for every seed, with and without the change; return its answer-file entry."""
    spec = EXERCISES[exercise_id]
    function = load_function(spec["notebook"], spec["function"], tuple(spec.get("uses", ())))
    changed = [function(seed=s, **spec["change"]) for s in SEEDS]
    control = [function(seed=s) for s in SEEDS]
    texts = {key: spec[key] for key in ("quantity", "too_low", "too_high", "hint")}
    return make_measured_entry(changed, spec["margin"], seeds=SEEDS, control=control, floor=spec["floor"],
                               ceiling=spec["ceiling"], **texts)


def main(argv: list[str]) -> int:
    torch.set_num_threads(1)
    for exercise_id in argv[1:] or sorted(EXERCISES):
        if exercise_id not in EXERCISES:
            print(f"exercise_ranges: expected one of {sorted(EXERCISES)}, got {exercise_id!r}", file=sys.stderr)
            return 1
        entry = measure(exercise_id)
        path = ROOT / "tformer" / "book" / "exercise_answers" / f"{exercise_id.split('.')[0]}.json"
        table = json.loads(path.read_text(encoding="utf-8"))
        table[exercise_id] = entry
        path.write_text(json.dumps(table, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{exercise_id}: seeds {entry['seed_values']} -> [{entry['low']:.6g}, {entry['high']:.6g}]  "
              f"(control {entry['control']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
