"""What came before attention: recurrent networks and the RNN encoder-decoder (chapters 01, 02).

- ``rnn``: RNN, LSTM and GRU written from their equations, equal to ``torch.nn.RNN/LSTM/GRU``.
- ``seq2seq_rnn``: the GRU/LSTM encoder-decoder, with one context vector or with Bahdanau attention.
"""
