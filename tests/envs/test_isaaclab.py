"""The Isaac Lab adapter (``robot_rl.envs.isaaclab``) against mjlab, a real implementation of Isaac Lab's
vectorised env API (``ManagerBasedRlEnv``: observation groups, auto-reset inside ``step``, termination terms)
on MuJoCo Warp's CPU device. mjlab pins MuJoCo 3.11, so it lives in its own venv (``scripts/setup_mjlab.sh``,
made by ``scripts/test.sh``) and these tests drive that interpreter. Isaac Lab itself (Python 3.12, Isaac Sim)
does not install on these machines: only its import guard is tested here."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from robot_rl.envs.isaaclab import make_isaaclab_worlds

ROOT = Path(__file__).resolve().parents[2]
MJLAB_PYTHON = Path(os.environ.get("ROBOT_RL_MJLAB_PYTHON", ROOT / ".venv-mjlab" / "bin" / "python"))
TASK = "Mjlab-Cartpole-Balance"
needs_mjlab = pytest.mark.skipif(not MJLAB_PYTHON.exists(), reason=f"no mjlab venv at {MJLAB_PYTHON}: run "
                                 "bash scripts/setup_mjlab.sh (scripts/test.sh does)")
pytestmark = pytest.mark.xdist_group("mjlab")  # one worker compiles MuJoCo Warp's kernels, once

STEP_SEMANTICS = """
import json, sys, torch
from robot_rl.envs.isaaclab import make_isaaclab_worlds
worlds = make_isaaclab_worlds("mjlab", sys.argv[1], 4, "cpu", 0, success_term="time_out",
                              overrides={"episode_length_s": 0.1})
obs, _ = worlds.reset(seed=3)
assert obs["state"].shape[0] == 4 and worlds.single_action_space.shape == (1,), (obs["state"].shape,)
previous, ends, checked = obs["state"], 0, 0
for _ in range(12):
    worlds.actions.uniform_(-1, 1)
    obs, reward, terminated, truncated, info = worlds.step(worlds.actions)
    ended = terminated | truncated
    final = info["final_obs"]["state"]
    assert reward.shape == (4,) and reward.dtype == torch.float32
    assert torch.equal(final[~ended], obs["state"][~ended])  # a running world: its next observation
    assert torch.equal(final[ended], previous[ended])  # a time-out: its own last observation, not the next episode's
    assert bool(info["final_info"]["is_success"][ended].all()) and not info["final_info"]["is_success"][~ended].any()
    assert not torch.equal(obs["state"][ended], previous[ended]) or not ended.any()
    ends += int(ended.sum())
    previous = obs["state"]
errors = []
for kwargs in ({"obs_group": "nope"}, {"success_term": "nope"}, {"overrides": {"no_such_field": 1}}):
    try:
        make_isaaclab_worlds("mjlab", sys.argv[1], 2, "cpu", 0, **kwargs)
    except ValueError as err:
        errors.append(str(err))
print(json.dumps({"ends": ends, "errors": errors}))
"""


def run_mjlab(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([str(MJLAB_PYTHON), *args], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@needs_mjlab
def test_mjlab_worlds_keep_isaac_labs_step_semantics_in_the_batched_interface() -> None:
    """Shapes and dtypes; auto-reset worlds hand back their own last observation as the final one; success from
    the named termination term exactly where a world ended; bad names refused naming what exists."""
    out = json.loads(run_mjlab("-c", STEP_SEMANTICS, TASK).stdout.strip().splitlines()[-1])
    assert out["ends"] >= 4  # 5-step episodes in 12 steps: every world ended at least once
    obs_group, success_term, override = out["errors"]
    assert "'nope'" in obs_group and "actor" in obs_group
    assert "'nope'" in success_term and "time_out" in success_term
    assert "no_such_field" in override


@needs_mjlab
def test_the_parallel_trainer_runs_an_mjlab_task_unchanged(tmp_path: Path) -> None:
    run = tmp_path / "run"
    out = run_mjlab("-m", "robot_rl.cli", "train", "--backend", "mjlab", "--task", TASK, "--num-envs", "8",
                    "--success-term", "time_out", "--env-kwargs", '{"episode_length_s": 0.5}',
                    "--total-env-steps", "400", "--learning-starts", "100", "--eval-every", "200",
                    "--batch-size", "32", "--agent.num-critics", "2", "--agent.hidden-dims", "32", "32",
                    "--torch-threads", "1", "--no-progress", "--run-dir", str(run)).stdout
    assert f"8 worlds of {TASK} on mjlab (cpu)" in out
    assert "[200 steps] eval: success" in out and "(8/8 at any step" in out.split("[400 steps] eval:")[1]
    assert (run / "checkpoints" / "latest.pt").exists() and (run / "learning_curve.png").exists()
    resumed = run_mjlab("-m", "robot_rl.cli", "train", "--resume", str(run), "--total-env-steps", "600",
                        "--no-progress").stdout
    assert "resumed" in resumed and "[600 steps] eval" in resumed


@pytest.mark.skipif(importlib.util.find_spec("isaaclab") is not None, reason="Isaac Lab is installed here")
def test_without_isaac_lab_the_backend_says_what_to_install() -> None:
    with pytest.raises(ImportError, match=r"--backend isaaclab needs Isaac Lab \(Python 3\.12 with Isaac Sim"):
        make_isaaclab_worlds("isaaclab", "Isaac-Lift-Cube-Franka-v0", 4, "cpu", 0)


@pytest.mark.skipif(importlib.util.find_spec("mjlab") is not None, reason="mjlab is installed in this venv")
def test_without_mjlab_the_backend_says_it_needs_its_own_venv() -> None:
    with pytest.raises(ImportError, match="its own venv"):
        make_isaaclab_worlds("mjlab", TASK, 4, "cpu", 0)
