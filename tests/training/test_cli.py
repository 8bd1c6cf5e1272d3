"""Smoke runs of every ``robot-rl`` subcommand with tiny budgets (real processes of the real code)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.cli import main
from robot_rl.data.demos import load_demos
from robot_rl.training.env_factory import EnvConfig
from robot_rl.training.loop import Trainer, load_agent, load_run_config

TINY = [
    "--agent.hidden-dims",
    "32",
    "32",
    "--agent.num-critics",
    "2",
    "--agent.utd-ratio",
    "1",
    "--batch-size",
    "32",
    "--learning-starts",
    "50",
    "--eval-episodes",
    "2",
    "--torch-threads",
    "1",
    "--no-progress",
]


def test_record_demos(tmp_path: Path, capsys) -> None:
    out = tmp_path / "demos"
    assert main(["record-demos", "--task", "reach", "--episodes", "3", "--out", str(out)]) == 0
    episodes = load_demos(out)
    assert len(episodes) == 3 and all(e.success for e in episodes)
    assert "recorded 3" in capsys.readouterr().out


def test_record_demos_retries_failed_attempts(tmp_path: Path, capsys) -> None:
    """A noisy expert fails some attempts: --episodes counts kept demos, and too few kept is an error."""
    out = tmp_path / "demos"
    args = ["record-demos", "--task", "pick_cube", "--noise", "0.85", "--out", str(out)]
    assert main([*args, "--episodes", "3"]) == 0
    episodes = load_demos(out)
    assert len(episodes) == 3 and all(e.success for e in episodes)
    printed = capsys.readouterr().out
    recorded = int(printed.split("recorded ")[1].split(",")[0])
    assert recorded > 3 and printed.count("dropped") == recorded - 3 and "(3/3 kept)" in printed

    # 10 attempts per demo at most: an expert that can't succeed (noise 50) ends with a clear shortfall
    assert main(["record-demos", "--task", "pick_cube", "--noise", "50", "--episodes", "1",
                 "--out", str(tmp_path / "none")]) == 1
    captured = capsys.readouterr()
    assert "recorded 10, succeeded 0, kept 0" in captured.out and "only 0 of 1 kept" in captured.err


def test_record_demos_pixels(tmp_path: Path) -> None:
    out = tmp_path / "demos"
    main(["record-demos", "--task", "reach", "--episodes", "1", "--obs", "pixels", "--out", str(out)])
    (episode,) = load_demos(out)
    assert episode.observations["images/front"].dtype == np.uint8


def test_train_eval_resume(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    args = [
        "train",
        "--task",
        "reach",
        "--total-env-steps",
        "120",
        "--eval-every",
        "100",
        "--scripted-demos",
        "2",
        "--run-dir",
        str(run),
        *TINY,
    ]
    assert main(args) == 0
    for name in ("config.json", "git.json", "metrics.csv", "learning_curve.png", "checkpoints/latest.pt"):
        assert (run / name).exists(), name
    assert list((run / "tb").iterdir()), "no TensorBoard events"
    assert json.loads((run / "config.json").read_text())["env"]["task"] == "reach"
    assert load_run_config(run).total_env_steps == 120

    assert main(["eval", str(run), "--episodes", "2"]) == 0
    assert "success" in capsys.readouterr().out

    trainer = Trainer(load_run_config(run).__class__(resume=run, total_env_steps=160, progress=False))
    assert trainer.env_steps == 120 and len(trainer.replay) > 0
    trainer.run()
    assert load_agent(run)[0] is not None
    assert (
        Trainer(load_run_config(run).__class__(resume=run, total_env_steps=160, progress=False)).env_steps
        == 160
    )


def test_eval_of_a_truncated_or_empty_checkpoint_names_the_file(tmp_path: Path, capsys) -> None:
    from robot_rl.training.config import TrainConfig
    from robot_rl.training.run_dir import RunDir

    run = tmp_path / "run"
    RunDir(run).create(TrainConfig(env=EnvConfig(task="reach")))
    checkpoint = run / "checkpoints" / "latest.pt"
    for content in (b"", b"PK\x03\x04 truncated"):
        checkpoint.write_bytes(content)
        assert main(["eval", str(run), "--episodes", "1"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"robot-rl: error: {checkpoint}: not a readable checkpoint ({len(content)} bytes")
        assert len(err.splitlines()) == 1
    assert main(["eval", str(tmp_path / "nowhere")]) == 2
    assert "no such run folder or checkpoint file" in capsys.readouterr().err


def like_a_terminal() -> None:
    """A child's SIGINT as a shell in a terminal leaves it (default handler, not blocked), whatever the test
    process inherited or set: a process started with SIGINT ignored keeps it ignored, and Python then raises
    no KeyboardInterrupt on Ctrl-C."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_stops_training_with_a_checkpoint_and_resume_continues(tmp_path: Path) -> None:
    """SIGINT (Ctrl-C) mid-run: exit 0, one line, no traceback, a checkpoint of every step taken."""
    import signal
    import subprocess
    import sys
    import time

    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "robot_rl.cli", "train", "--task", "reach", "--total-env-steps", "100000",
           "--scripted-demos", "0", "--run-dir", str(run), "--agent.compile", "off", *TINY]  # not mid-compile
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=like_a_terminal)
    deadline = time.monotonic() + 120
    while not (run / "metrics.csv").exists() or "train" not in (run / "metrics.csv").read_text():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in out, out
    lines = [line for line in out.splitlines() if line.startswith("robot-rl train: stopped (SIGINT)")]
    assert len(lines) == 1, out
    steps = int(lines[0].split(" at ")[1].split(" env steps")[0])
    assert Trainer(load_run_config(run).__class__(resume=run, total_env_steps=steps + 60,
                                                 progress=False)).env_steps == steps


def test_ctrl_c_during_demo_recording_is_one_line_and_keeps_what_was_written(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    out_dir = tmp_path / "demos"
    proc = subprocess.Popen([sys.executable, "-m", "robot_rl.cli", "record-demos", "--task", "reach", "--episodes",
                             "10000", "--out", str(out_dir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=like_a_terminal)
    deadline = time.monotonic() + 120
    while not list(out_dir.glob("episode_*.npz")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in out, out
    assert out.strip().splitlines()[-1] == "robot-rl record-demos: stopped (SIGINT)"
    assert len(load_demos(out_dir)) >= 1  # every episode written before the signal is whole


def test_train_pixels_writes_video(tmp_path: Path) -> None:
    run = tmp_path / "run"
    main(
        [
            "train",
            "--task",
            "reach",
            "--obs",
            "pixels",
            "--image-size",
            "64",
            "--cameras",
            "wrist",
            "--total-env-steps",
            "60",
            "--eval-every",
            "60",
            "--scripted-demos",
            "1",
            "--run-dir",
            str(run),
            *TINY,
        ]
    )
    assert list((run / "videos").glob("*.gif"))


def test_train_gymnasium_env(tmp_path: Path, capsys) -> None:
    """A gymnasium env: env kwargs reach ``gymnasium.make``, the default scripted demos are skipped with the
    reason, and Pendulum's success (it reports none) is unknown rather than 0%."""
    run = tmp_path / "run"
    args = ["train", "--task", "Pendulum-v1", "--env-kwargs", '{"g": 9.0}', "--total-env-steps", "80",
            "--eval-every", "80", "--run-dir", str(run), *TINY]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "--scripted-demos 20 skipped: 'Pendulum-v1' has no scripted expert" in out
    assert "success unknown" in out and "success 0%" not in out
    assert load_run_config(run).env.env_kwargs == '{"g": 9.0}'


class PointEnv(gym.Env):
    """A point on a line that must pass x = 0.5 within 10 steps; reports success under ``success``."""

    observation_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, render_mode: str | None = None) -> None:
        self.x, self.t = np.zeros(1, np.float32), 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = self.np_random.uniform(-0.5, 0.0, 1).astype(np.float32), 0
        return self.x.copy(), {}

    def step(self, action):
        self.x = np.clip(self.x + 0.1 * np.asarray(action, np.float32), -2.0, 2.0)
        self.t += 1
        done = bool(self.x[0] > 0.5)
        return self.x.copy(), float(done), done, self.t >= 10, {"success": done}


gym.register("robot_rl_test/Point-v0", entry_point=PointEnv)


def push_right(obs: dict[str, np.ndarray]) -> np.ndarray:
    return np.ones(1, np.float32)


def test_a_foreign_env_gets_demos_from_its_users_controller(tmp_path: Path, capsys) -> None:
    """``--policy module:attr`` records demos where no scripted expert exists, filtered by the env's own success;
    ``train --demo-policy`` records them the same way; an env that reports no success is refused unless every
    episode is to be kept."""
    policy = f"{__name__}:push_right"
    out = tmp_path / "demos"
    assert main(["record-demos", "--task", "robot_rl_test/Point-v0", "--episodes", "1"]) == 2
    assert "record with your own controller: --policy module:attr" in capsys.readouterr().err
    assert main(["record-demos", "--task", "robot_rl_test/Point-v0", "--policy", policy, "--noise", "0.1",
                 "--episodes", "3", "--out", str(out)]) == 0
    assert "kept 3" in capsys.readouterr().out
    demos = load_demos(out, task="robot_rl_test/Point-v0")
    assert len(demos) == 3 and all(d.success and len(d) <= 10 for d in demos)
    assert not np.allclose(demos[0].actions, 1.0)  # the noise reached the actions

    assert main(["record-demos", "--task", "Pendulum-v1", "--policy", policy, "--episodes", "1",
                 "--out", str(tmp_path / "p")]) == 2
    assert "reports no success" in capsys.readouterr().err
    assert main(["record-demos", "--task", "Pendulum-v1", "--policy", policy, "--episodes", "2", "--keep-failed",
                 "--out", str(tmp_path / "p")]) == 0

    run = tmp_path / "run"
    assert main(["train", "--task", "robot_rl_test/Point-v0", "--demo-policy", policy, "--scripted-demos", "2",
                 "--total-env-steps", "60", "--eval-every", "60", "--run-dir", str(run), *TINY]) == 0
    assert f"2 {policy!r} demos (2/2 attempts succeeded)" in capsys.readouterr().out
    assert len(load_demos(run / "demos")) == 2


def nudge(obs: dict[str, np.ndarray]) -> np.ndarray:
    return np.full(1, 0.025, np.float32)


def test_demos_in_a_sliver_of_the_action_box_get_a_narrower_box_suggested(tmp_path: Path, capsys) -> None:
    """Pendulum's torque spans [-2, 2]; demos nudging by 2.5% of it get ``--action-scale`` suggested, demos
    recorded through that box carry it, and a run acting through the whole box refuses them."""
    wide, narrow = tmp_path / "wide", tmp_path / "narrow"
    policy = f"{__name__}:nudge"
    for out, scale in ((wide, []), (narrow, ["--action-scale", "0.1"])):
        assert main(["record-demos", "--task", "Pendulum-v1", "--policy", policy, "--episodes", "1",
                     "--keep-failed", "--out", str(out), *scale]) == 0
    capsys.readouterr()
    train = ["train", "--task", "Pendulum-v1", "--total-env-steps", "20", "--eval-every", "20", *TINY]
    assert main([*train, "--demos", str(wide), "--run-dir", str(tmp_path / "r1")]) == 0
    out = capsys.readouterr().out
    assert "at most 2.5% of the action range in dimension(s) [0]" in out and "--action-scale '[0.1]'" in out
    assert main([*train, "--demos", str(narrow), "--action-scale", "0.1", "--run-dir", str(tmp_path / "r2")]) == 0
    assert "--action-scale" not in capsys.readouterr().out
    assert main([*train, "--demos", str(narrow), "--run-dir", str(tmp_path / "r3")]) == 2
    assert "recorded with action_scale [0.1], this run acts with the env's whole action box" in capsys.readouterr().err


def test_foreign_env_scripted_teleop_is_refused_by_name(tmp_path: Path, capsys) -> None:
    assert main(["record-demos", "--task", "Pendulum-v1", "--teleop", "scripted", "--episodes", "1",
                 "--out", str(tmp_path / "d")]) == 2
    assert "no scripted corrector for 'Pendulum-v1'" in capsys.readouterr().err
    assert main(["train", "--task", "Pendulum-v1", "--teleop", "scripted", "--run-dir", str(tmp_path / "r")]) == 2
    assert "no scripted corrector" in capsys.readouterr().err


def test_demos_of_another_task_are_refused(tmp_path: Path, capsys) -> None:
    demos = tmp_path / "demos"
    assert main(["record-demos", "--task", "reach", "--episodes", "1", "--out", str(demos)]) == 0
    args = ["train", "--task", "pick_cube", "--demos", str(demos), "--total-env-steps", "20",
            "--run-dir", str(tmp_path / "run"), *TINY]
    assert main(args) == 2
    assert "recorded for task 'reach', this run is 'pick_cube'" in capsys.readouterr().err


def test_existing_run_folder_is_not_overwritten(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    args = [
        "train",
        "--task",
        "reach",
        "--total-env-steps",
        "20",
        "--eval-every",
        "20",
        "--scripted-demos",
        "0",
        "--run-dir",
        str(run),
        *TINY,
    ]
    main(args)
    assert main(args) == 2
    assert "--resume" in capsys.readouterr().err


def test_bad_flags_are_named(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--total-env-steps", "0", "--run-dir", str(tmp_path / "x")])
    assert "total_env_steps" in capsys.readouterr().err
    assert main(["train", "--task", "no_such_task", "--run-dir", str(tmp_path / "y"), *TINY]) == 2
    err = capsys.readouterr().err
    assert "no_such_task" in err and "pick_cube" in err
