"""What came before attention: recurrent networks and the RNN encoder-decoder (chapters 01, 02).

- ``rnn``: RNN, LSTM and GRU written from their equations, equal to ``torch.nn.RNN/LSTM/GRU``.
- ``seq2seq_rnn``: the GRU/LSTM encoder-decoder, with one context vector or with Bahdanau attention.
"""

from tformer.baselines.rnn import GRU, LSTM, RNN, count_parameters, hidden_state_jacobian_norms
from tformer.baselines.seq2seq_rnn import BahdanauAttention, Seq2SeqRNN, Seq2SeqRNNConfig

__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "BahdanauAttention",
    "Seq2SeqRNN",
    "Seq2SeqRNNConfig",
    "count_parameters",
    "hidden_state_jacobian_norms",
]
