"""Training and scoring: the loop, teacher forcing, and the metrics.

- ``teacher_forcing``: ``shift_right`` and the padded sequence cross-entropy.
- ``train``: the training loop (step or time budget, warm-up schedules, history for plots).
- ``metrics``: exact match, token accuracy, BLEU (sacrebleu), accuracy by length, nats per token.
"""
