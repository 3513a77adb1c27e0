"""Shared test settings."""

import torch

# Two pytest-xdist workers share the machine's two cores: one torch thread each avoids oversubscription,
# which slowed the suite several-fold when every worker also ran a 2-thread pool.
torch.set_num_threads(1)
