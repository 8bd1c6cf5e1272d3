"""The learner core under ``robot-rl train``: resuming continues exactly where an uninterrupted run would be,
and checkpoints of every format this version reads load (a newer one is refused by its format number)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from robot_rl.agents.config import SACConfig
from robot_rl.training.config import TrainConfig
from robot_rl.training.core import CHECKPOINT, CHECKPOINT_FORMAT, load_run_config
from robot_rl.training.env_factory import EnvConfig
from robot_rl.training.loop import Trainer, load_agent, load_policy

EPISODE = 80  # two of reach's 40-step episodes: the interruption falls on an episode boundary


def tiny(run: Path, steps: int, resume: Path | None = None) -> TrainConfig:
    return TrainConfig(env=EnvConfig(task="reach"), total_env_steps=steps, learning_starts=50, batch_size=32,
                       eval_every=10_000, eval_episodes=1, checkpoint_every=10_000, scripted_demos=2, seed=3,
                       torch_threads=1, progress=False, run_dir=run, resume=resume,
                       agent=SACConfig(num_critics=2, hidden_dims=(32, 32), utd_ratio=2))


def parameters(trainer: Trainer) -> dict[str, torch.Tensor]:
    state = trainer.agent.state_dict()["modules"]
    return {f"{m}.{k}": v.clone() for m, sd in state.items() for k, v in sd.items()}


def test_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    whole = Trainer(tiny(tmp_path / "whole", 2 * EPISODE))
    whole.run()
    first = Trainer(tiny(tmp_path / "split", EPISODE))
    first.run()
    assert first.episodes == 2, "the seeded case must end its first episode exactly at the interruption"
    second = Trainer(tiny(tmp_path / "ignored", 2 * EPISODE, resume=tmp_path / "split"))
    assert (second.env_steps, second.updates) == (EPISODE, first.updates)
    second.run()

    assert (second.env_steps, second.episodes, second.updates) == (whole.env_steps, whole.episodes, whole.updates)
    expected, got = parameters(whole), parameters(second)
    assert expected.keys() == got.keys()
    for name in expected:
        torch.testing.assert_close(got[name], expected[name], rtol=0, atol=0, msg=name)
    assert second.agent.log_alpha.item() == whole.agent.log_alpha.item()
    assert len(second.replay) == len(whole.replay)


def test_a_run_folder_of_the_first_layout_resumes(tmp_path: Path) -> None:
    """The first layout: env settings as top-level keys of config.json, no checkpoint format number (and an
    unused numpy RNG state in the checkpoint)."""
    trainer = Trainer(tiny(tmp_path / "run", 60))
    trainer.run()
    config_file = tmp_path / "run" / "config.json"
    doc = json.loads(config_file.read_text())
    config_file.write_text(json.dumps({**{k: v for k, v in doc.items() if k not in ("env", "preset")}, **doc["env"]}))
    assert load_run_config(tmp_path / "run").env == trainer.train.env
    path = tmp_path / "run" / "checkpoints" / CHECKPOINT
    state = torch.load(path, weights_only=False)
    old = {k: v for k, v in state.items() if k not in ("format", "update_calls")}
    old["numpy_rng"] = {"bit_generator": "PCG64", "state": {"state": 1, "inc": 1}}
    torch.save(old, path)
    resumed = Trainer(tiny(tmp_path / "x", 80, resume=tmp_path / "run"))
    assert (resumed.env_steps, resumed.updates) == (60, trainer.updates)
    assert resumed.update_calls == trainer.updates // 2
    resumed.run()
    assert torch.load(path, weights_only=False)["format"] == CHECKPOINT_FORMAT


def test_a_newer_checkpoint_format_is_refused_by_number(tmp_path: Path) -> None:
    Trainer(tiny(tmp_path / "run", 60)).run()
    path = tmp_path / "run" / "checkpoints" / CHECKPOINT
    state = torch.load(path, weights_only=False)
    torch.save({**state, "format": CHECKPOINT_FORMAT + 7}, path)
    with pytest.raises(ValueError, match=rf"checkpoint format {CHECKPOINT_FORMAT + 7} is newer .*format "
                                         rf"{CHECKPOINT_FORMAT}"):
        Trainer(tiny(tmp_path / "x", 80, resume=tmp_path / "run"))


def test_the_acting_policy_of_a_run_acts_as_its_agent(tmp_path: Path) -> None:
    """``load_policy`` (eval, deployment, actors) builds no critics yet acts exactly as the whole agent."""
    trainer = Trainer(tiny(tmp_path / "run", 60))
    trainer.run()
    agent, _ = load_agent(tmp_path / "run")
    policy, cfg = load_policy(tmp_path / "run")
    assert cfg.env.task == "reach" and not any("critic" in name for name, _ in policy.named_parameters())
    obs, _ = trainer.eval_env.reset(seed=5)
    np.testing.assert_array_equal(policy.act(obs, deterministic=True), agent.act(obs, deterministic=True))
    batch = {k: torch.as_tensor(np.stack([v, v])) for k, v in obs.items()}
    np.testing.assert_allclose(policy.act_batch(batch, deterministic=True)[1].numpy(),  # batched matmuls
                               agent.act(obs, deterministic=True), atol=1e-6)
