"""Agent tests run single-threaded (deterministic timings, no oversubscription on small CI machines)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)
