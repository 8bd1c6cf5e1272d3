"""Data-parallel replicas (torch.distributed, gloo, two processes) compute what one process computes on the
same data: each replica updates on its half of every batch, one process on the whole batches."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from agent_helpers import action_space, make_batch, state_space

from robot_rl.agents.compiled_steps import compile_decision
from robot_rl.agents.config import SACConfig
from robot_rl.agents.data_parallel import DataParallel
from robot_rl.agents.sac import SACAgent
from robot_rl.data.batch import Batch

CONFIG = SACConfig(hidden_dims=(32, 32), gripper_hidden_dims=(16,), num_critics=4, num_min_critics=2, utd_ratio=2,
                   gripper="discrete", max_grad_norm=1.0, compile="off")
SPACE, ACTIONS = state_space(6), action_space(7)
UPDATES, BATCH, REPLICAS = 4, 16, 2


def whole_batches() -> list[Batch]:
    """The batches of every critic step, in order (the observations far from zero mean, so the normaliser
    matters)."""
    batches = []
    for i in range(UPDATES * CONFIG.utd_ratio):
        b = make_batch(SPACE, 7, batch=BATCH, seed=100 + i)
        b.obs["state"] = b.obs["state"] * 3 + 5
        b.next_obs["state"] = b.next_obs["state"] * 3 + 5
        batches.append(b)
    return batches


def rows(batch: Batch, part: slice) -> Batch:
    cut = lambda d: {k: v[part] for k, v in d.items()}  # noqa: E731
    return Batch(cut(batch.obs), batch.action[part], batch.reward[part], batch.discount[part],
                 cut(batch.next_obs), cut(batch.extras))


def train(agent: SACAgent, batches: list[Batch]) -> list[dict[str, float]]:
    stream = iter(batches)
    return [agent.update(lambda: next(stream)) for _ in range(UPDATES)]


def state_of(agent: SACAgent) -> dict[str, torch.Tensor]:
    state = {f"{name}.{k}": v.clone() for name, m in agent._modules().items() for k, v in m.state_dict().items()}
    state["log_alpha"] = agent.log_alpha.detach().clone()
    return state


def replica(rank: int, init_file: str, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=REPLICAS)
    dp = DataParallel(rank=rank, world_size=REPLICAS)
    agent = SACAgent(CONFIG, SPACE, ACTIONS, seed=3 if rank == 0 else 99, data_parallel=dp)  # rank 0's wins
    share = BATCH // REPLICAS
    metrics = train(agent, [rows(b, slice(rank * share, (rank + 1) * share)) for b in whole_batches()])
    torch.save({"state": state_of(agent), "metrics": metrics}, Path(out) / f"rank{rank}.pt")
    # Leaving together: a replica that tears gloo down while the other still talks to it aborts the other.
    dp.close()


def test_two_replicas_on_half_batches_equal_one_process_on_whole_batches(tmp_path: Path) -> None:
    mp.start_processes(replica, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=REPLICAS, start_method="spawn")
    single = SACAgent(CONFIG, SPACE, ACTIONS, seed=3)
    expected = train(single, whole_batches())
    results = [torch.load(tmp_path / f"rank{r}.pt") for r in range(REPLICAS)]
    mine = state_of(single)
    for name, value in mine.items():
        assert torch.equal(results[0]["state"][name], results[1]["state"][name]), f"replicas differ in {name}"
        torch.testing.assert_close(results[0]["state"][name], value, rtol=1e-4, atol=1e-5, msg=name)
    moved = [n for n, v in mine.items() if n.startswith("critic.") and not torch.equal(v, state_of(
        SACAgent(CONFIG, SPACE, ACTIONS, seed=3))[n])]
    assert moved, "no critic parameter changed: the comparison would be empty"
    assert single.encoder.normalizer is not None and float(single.encoder.normalizer.count) == UPDATES * BATCH
    for got, want in zip(results[0]["metrics"], expected):  # the logged figures are the whole batch's
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == pytest.approx(want[key], rel=1e-4, abs=1e-5), key


def test_a_compiled_step_is_refused_for_replicas() -> None:
    with pytest.raises(ValueError, match="data-parallel"):
        compile_decision(dataclasses.replace(CONFIG, compile="on"), torch.device("cpu"), 10**6, data_parallel=True)
    compiled, note = compile_decision(dataclasses.replace(CONFIG, compile="auto"), torch.device("cpu"), 10**6,
                                      data_parallel=True)
    assert not compiled and "average gradients" in note
