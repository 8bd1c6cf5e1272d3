"""Data-parallel learning: one agent replica per process, kept identical by averaged gradients.

Each of ``world_size`` processes (``torchrun``, one per GPU) holds the whole agent and samples its own share
of every batch (``batch_size / world_size`` rows) from its own shard of the replay. After each backward pass
the replicas average their gradients with one all-reduce, so every replica takes the same optimiser step: the
step one process would take on the concatenated batch. Random draws that belong to rows of the batch (the
policy's noise) are drawn for the whole batch from the update generator, which every replica seeds alike,
and each replica keeps its own rows; draws that belong to the step (the target critics' subset) come out
the same everywhere. The observation normaliser merges the rows of all replicas. With these three rules a
run on W processes computes what one process computes on the same data, up to the order of float sums
(``tests/agents/test_data_parallel.py``).

Transport is ``torch.distributed`` (NCCL between GPUs, gloo on CPU); nothing here opens a socket itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class DataParallel:
    """This process's place among the replicas of one data-parallel learner (an initialised process group)."""

    rank: int
    world_size: int
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """The replica that evaluates, logs and writes the checkpoint."""
        return self.rank == 0

    def average_(self, tensors: list[torch.Tensor]) -> None:
        """Replace each tensor by its mean over the replicas (one all-reduce for all of them)."""
        if not tensors:
            return
        flat = torch.cat([t.reshape(-1).float() for t in tensors])
        dist.all_reduce(flat)
        flat.div_(self.world_size)
        offset = 0
        for t in tensors:
            t.copy_(flat[offset: offset + t.numel()].view_as(t))
            offset += t.numel()

    def sum_(self, tensor: torch.Tensor) -> torch.Tensor:
        """The tensor summed over the replicas, in place."""
        dist.all_reduce(tensor)
        return tensor

    def gather_rows(self, x: torch.Tensor) -> torch.Tensor:
        """Every replica's rows of ``x`` [b, ...] (the same b on each), concatenated in rank order: [W * b, ...]."""
        parts = [torch.empty_like(x) for _ in range(self.world_size)]
        dist.all_gather(parts, x.contiguous())
        return torch.cat(parts)

    def own_rows(self, x: torch.Tensor) -> torch.Tensor:
        """This replica's block of rows of a whole-batch tensor [W * b, ...] -> [b, ...]."""
        b = x.shape[0] // self.world_size
        return x[self.rank * b: (self.rank + 1) * b]

    def broadcast_(self, modules: list[nn.Module]) -> None:
        """Every replica takes the main replica's parameters and buffers (a start from one state)."""
        with torch.no_grad():
            for module in modules:
                for t in (*module.parameters(), *module.buffers()):
                    dist.broadcast(t.data, src=0)

    def from_main(self, value: object) -> object:
        """The main replica's ``value`` (a run folder's name chosen by the clock, ...) on every replica."""
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        dist.barrier()

    def close(self) -> None:
        """Leave the process group once every replica is done."""
        dist.barrier()
        dist.destroy_process_group()


def from_torchrun(device: str) -> DataParallel | None:
    """The process group ``torchrun`` set this process up for (None for a plain single process): joined with
    NCCL for a CUDA learner, gloo otherwise. A CUDA replica uses GPU ``LOCAL_RANK``."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return None
    missing = [v for v in TORCHRUN_VARIABLES if v not in os.environ]
    if missing:
        raise RuntimeError(f"WORLD_SIZE={world_size} but {missing} are not set: start data-parallel training with "
                           "torchrun (e.g. torchrun --nproc-per-node 2 -m robot_rl.cli train --num-envs N ...)")
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    cuda = torch.device(device).type == "cuda"
    if cuda:
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if cuda else "gloo")
    return DataParallel(rank=rank, world_size=world_size, local_rank=local_rank)


def replica_device(device: str, data_parallel: DataParallel | None) -> str:
    """A CUDA learner's replica runs on GPU ``LOCAL_RANK``; a CPU learner stays on the CPU."""
    if data_parallel is None or torch.device(device).type != "cuda":
        return device
    return f"cuda:{data_parallel.local_rank}"
