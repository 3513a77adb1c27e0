"""Training and scoring: the loop, teacher forcing, the metrics, and training across processes.

- ``teacher_forcing``: ``shift_right`` and the padded sequence cross-entropy.
- ``train``: the training loop (step or time budget, warm-up schedules, history for plots).
- ``mlm``: BERT's masked-token corruption and loss, for pre-training an encoder-only model (chapter 11).
- ``metrics``: exact match, token accuracy, BLEU (sacrebleu), accuracy by length, nats per token.
- ``distributed``: several processes on one model with ``torch.distributed`` (gloo): the launcher, DDP, FSDP and
  tensor-parallel workers (chapter 15).
"""
