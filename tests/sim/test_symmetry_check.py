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


def test_a_run_with_symmetry_logs_the_transformed_share_and_resumes_with_it(tmp_path) -> None:
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

    assert main(["check-symmetry", "--task", "push", "--states", "20", "--image-states", "3"]) == 0
    out = capsys.readouterr().out
    assert "state.tcp_pos" in out and "image warp front: PSNR" in out and out.rstrip().endswith("holds")
    assert main(["check-symmetry", "--task", "Pendulum-v1"]) == 2


def test_the_learner_takes_the_same_symmetry_flags() -> None:
    """``robot-rl learner`` (what the ROS 2 launch files start with ``learner_args``) nests the train config."""
    from robot_rl.cli import parse

    learner = parse(["learner", "--train.symmetry.mode", "copies", "--train.symmetry.copies", "5"])
    assert learner.train.symmetry == SymmetryConfig(mode="copies", copies=5)


def test_calibrate_camera_fits_the_simulated_front_camera(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """Points marked in the simulated camera's image give back the homography of the model's camera."""
    from robot_rl.cli import main
    from robot_rl.sim.symmetry import table_homography

    env = make_env("push")
    env.reset(seed=0)
    truth = table_homography(env.scene, "front", 128, 128)
    table = np.array([[0.35, -0.2], [0.35, 0.2], [0.65, -0.2], [0.65, 0.2], [0.5, 0.0], [0.45, 0.1]])
    pixels = np.hstack([table, np.ones((6, 1))]) @ truth.T
    pixels = pixels[:, :2] / pixels[:, 2:]
    csv = tmp_path / "points.csv"
    csv.write_text("x_m,y_m,column_px,row_px\n" + "\n".join(",".join(f"{v:.6f}" for v in [*t, *p])
                                                            for t, p in zip(table, pixels)))
    assert main(["calibrate-camera", str(csv)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("table_homography: "))
    fitted = np.array(eval(line.partition(": ")[2]))
    np.testing.assert_allclose(fitted, truth, rtol=1e-3, atol=1e-3)
    assert "RMS reprojection error 0.00 px" in out
    csv.write_text("x_m,y_m\n0.1,0.2\n")
    assert main(["calibrate-camera", str(csv)]) == 2


# ------------------------------------------------------------------------------------------------ images
def test_the_table_homography_projects_a_resting_cube_into_its_silhouette() -> None:
    import mujoco

    from robot_rl.sim.symmetry import table_homography

    env = make_env("pick_cube", obs_mode="pixels", image_size=64)
    cube = env.scene.model.body("cube").id
    for seed in range(3):
        env.reset(seed=seed)
        h = table_homography(env.scene, "front", 64, 64)
        x, y, _ = env.scene.body_pos(cube)
        u, v, w = h @ np.array([x, y, 1.0])
        renderer = mujoco.Renderer(env.scene.model, 64, 64)
        renderer.enable_segmentation_rendering()
        renderer.update_scene(env.scene.data, camera="front")
        seg = renderer.render()
        renderer.close()
        on_cube = (seg[..., 1] == mujoco.mjtObj.mjOBJ_GEOM) & (env.scene.model.geom_bodyid[seg[..., 0]] == cube)
        rows, cols = np.nonzero(on_cube)
        assert cols.min() <= u / w <= cols.max() + 1 and rows.min() <= v / w <= rows.max() + 1, (seed, u / w, v / w)


def test_mirrored_images_match_the_re_rendered_mirrored_scene() -> None:
    from robot_rl.sim.symmetry import check_image_warps

    reports = check_image_warps(make_env("push"), make_env("push"), SymmetryGroup(mirror=Mirror()), states=6, size=64)
    for r in reports:
        mirrored = [p for p in r.psnr_db if p < 100]  # identity draws compare an image with itself
        assert mirrored and min(mirrored) > 35.0, (r.camera, r.psnr_db)


def test_a_pixel_run_warps_its_cameras(capsys: pytest.CaptureFixture[str]) -> None:
    from robot_rl.data.replay import ReplayBuffer, ReplayConfig

    env = make_env("push", obs_mode="pixels", image_size=64)
    config = TrainConfig(env=EnvConfig(task="push", obs="pixels", image_size=64),
                         symmetry=SymmetryConfig(mode="random", fraction=1.0))
    said: list[str] = []
    aug = symmetry_augmentation(config, env, say=said.append)
    assert aug is not None and set(aug.images) == {"images/front", "images/wrist"}
    assert said[1].startswith("image warps against re-rendered views") and "front" in said[1]
    replay = ReplayBuffer(env.observation_space, 7, ReplayConfig(capacity=64), seed=0)
    obs, _ = env.reset(seed=0)
    for _ in range(6):
        nxt, reward, terminated, truncated, _ = env.step(np.zeros(7, np.float32))
        replay.add(obs, np.zeros(7, np.float32), reward, nxt, terminated, truncated)
        obs = nxt
    batch = replay.sample(16)
    out = aug(batch)
    flipped = out.obs["state"][:, 1] != batch.obs["state"][:, 1]  # mirrored rows (y of the TCP flips)
    assert flipped.any()
    assert not torch.equal(out.obs["images/front"][flipped], batch.obs["images/front"][flipped])
