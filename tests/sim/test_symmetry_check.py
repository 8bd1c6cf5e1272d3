"""Declared symmetries checked against the simulator, and the learner's refusal of a group that fails."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from robot_rl.data.symmetry import Elements, Mirror, Rotation, SymmetryConfig, SymmetryGroup, TranslationGrid
from robot_rl.envs.contract import Field
from robot_rl.sim import TASKS, make_env
from robot_rl.sim.registry import default_config
from robot_rl.sim.symmetry import Thresholds, check_symmetry, transfer
from robot_rl.sim.tasks.reach import Reach
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import EnvConfig, make_env_from_config
from robot_rl.training.symmetry import symmetry_augmentation

OFF_AXIS = SymmetryGroup(rotation=Rotation(30.0, center_xy=(0.5, 0.0)))  # the arm is not symmetric about it


def _check(task: str, group: SymmetryGroup, states: int = 120, seed: int = 0):
    return check_symmetry(make_env(task), make_env(task), group, states=states, seed=seed)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_declared_group_holds_in_simulation(task: str) -> None:
    group = default_config(task).symmetry
    assert group.declared, f"{task} declares no symmetry"
    report = _check(task, group)
    assert report.failures(Thresholds()) == [], "\n".join(report.lines(Thresholds()))
    assert report.steps == 120 and report.reward_disagreements <= 2 and report.success_disagreements <= 2
    positions = [f for f in report.fields if f.kind == "point" and f.key == "state"]
    assert positions and np.median(positions[0].errors) < 3e-4  # typical steps agree far inside the limit


def test_a_group_the_arm_does_not_have_fails_and_names_the_field() -> None:
    failures = _check("reach", OFF_AXIS, states=60).failures(Thresholds())
    assert any(f.startswith("state.tcp_pos (point): 90th-percentile error") for f in failures), failures


def test_a_wrong_kind_rule_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Declaring the goal position a free vector (it would not move with a translation) shows as its error."""
    wrong = (Field("goal_pos", 3, "m, base frame", "vector"), Reach.privileged_layout[1])
    monkeypatch.setattr(Reach, "privileged_layout", wrong)
    failures = _check("reach", SymmetryGroup(translation=TranslationGrid(3, 0.1)), states=40).failures(Thresholds())
    assert any(f.startswith("privileged.goal_pos") for f in failures), failures


def test_rotating_about_the_base_axis_turns_the_first_joint_only() -> None:
    env, twin = make_env("pick_cube"), make_env("pick_cube")
    env.reset(seed=3)
    twin.reset(seed=4)
    g = Elements.rotation(torch.tensor([0.3]))
    assert transfer(env, twin, g)
    q, q_twin = env.scene.data.qpos[env.scene.arm_qpos_adr], twin.scene.data.qpos[twin.scene.arm_qpos_adr]
    np.testing.assert_allclose(q_twin - q, [0.3, 0, 0, 0, 0, 0, 0], atol=1e-12)
    c, s = np.cos(0.3), np.sin(0.3)
    np.testing.assert_allclose(twin.scene.tcp_pos(), np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ env.scene.tcp_pos(),
                               atol=1e-9)


# ------------------------------------------------------------------------------------------- the learner
def _config(**symmetry) -> TrainConfig:
    return TrainConfig(env=EnvConfig(task="reach"), symmetry=SymmetryConfig(mode="random", **symmetry))


def test_training_refuses_a_group_that_fails_unless_forced() -> None:
    task_config = dataclasses.replace(default_config("reach"), symmetry=OFF_AXIS)
    env = make_env("reach", task_config)
    with pytest.raises(ValueError, match=r"does not hold in simulation: state\.tcp_pos \(point\)"):
        symmetry_augmentation(_config(), env, say=lambda _: None)
    said: list[str] = []
    assert symmetry_augmentation(_config(force=True), env, say=said.append) is not None
    assert "NOT holding" in said[0] and "forced" in said[0]


def test_training_says_what_it_augments_and_refuses_what_it_cannot() -> None:
    said: list[str] = []
    aug = symmetry_augmentation(_config(), make_env("reach"), say=said.append)
    assert aug is not None and said[0].startswith("symmetry augmentation: mirror") and said[0].endswith("holds")
    assert symmetry_augmentation(TrainConfig(), make_env("reach")) is None
    no_group = make_env("reach", dataclasses.replace(default_config("reach"), symmetry=SymmetryGroup()))
    with pytest.raises(ValueError, match="task 'reach' declares no symmetry group"):
        symmetry_augmentation(_config(), no_group)
    with pytest.raises(ValueError, match="'Pendulum-v1' is not a robot_rl task"):
        symmetry_augmentation(TrainConfig(env=EnvConfig(task="Pendulum-v1"), symmetry=SymmetryConfig(mode="random")),
                              make_env_from_config(EnvConfig(task="Pendulum-v1")))


def test_a_mirror_group_is_declared_in_config_terms() -> None:
    assert default_config("push").symmetry.mirror == Mirror()
    assert default_config("peg_insert").symmetry.translation is None  # the peg in its hole: no translations


def test_a_run_with_symmetry_logs_the_transformed_share_and_resumes_with_it(tmp_path) -> None:  # noqa: ANN001
    from robot_rl.agents.config import SACConfig
    from robot_rl.training.loop import Trainer
    from robot_rl.training.run_dir import RunDir

    cfg = TrainConfig(env=EnvConfig(task="reach"), total_env_steps=600, learning_starts=50, batch_size=32,
                      eval_every=10_000, eval_episodes=1, scripted_demos=2, seed=3, torch_threads=1,
                      progress=False, run_dir=tmp_path / "run", symmetry=SymmetryConfig(mode="copies", copies=3),
                      agent=SACConfig(num_critics=2, hidden_dims=(32, 32), utd_ratio=1))
    Trainer(cfg).run()
    _, share = RunDir(cfg.run_dir).read_metrics("train", "symmetry_transformed")
    assert len(share) and 0.5 < float(share.mean()) <= 0.75  # 3 of every 4 rows, less those leaving the box
    from robot_rl.training.core import load_run_config

    assert load_run_config(cfg.run_dir).symmetry == cfg.symmetry


def test_check_symmetry_command(capsys: pytest.CaptureFixture[str]) -> None:
    from robot_rl.cli import main

    assert main(["check-symmetry", "--task", "reach", "--states", "20"]) == 0
    out = capsys.readouterr().out
    assert "state.tcp_pos" in out and out.rstrip().endswith("holds")
    assert main(["check-symmetry", "--task", "Pendulum-v1"]) == 2
