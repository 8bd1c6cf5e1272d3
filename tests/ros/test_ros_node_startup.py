"""A user's mistake at start-up ends a node with one line naming the setting, the value and the cause, never a
traceback: a hardware config missing a safety field, a gripper backend whose message package is absent, an
unknown policy name, a truncated checkpoint. Real node processes."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy")
import yaml
from conftest import HARDWARE, ros_session

TIMEOUT_S = 60


def exit_line(procs, spec: str, **params) -> str:
    """Start ``spec``, wait for it to exit non-zero, return its whole output (asserting no traceback)."""
    proc = procs.start(spec, **params)
    code = proc.wait(timeout=TIMEOUT_S)
    log = procs.logs()
    assert code != 0, f"{spec} started despite the bad setting:\n{log}"
    assert "Traceback" not in log, log
    return log


def test_startup_errors_are_one_line(tmp_path) -> None:
    data = yaml.safe_load((HARDWARE / "arms" / "sim_panda.yaml").read_text())
    del data["arm"]["safety"]["workspace_high_m"]
    no_box = tmp_path / "no_box.yaml"
    no_box.write_text(yaml.safe_dump(data))
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    from robot_rl.training.config import TrainConfig
    from robot_rl.training.env_factory import EnvConfig
    from robot_rl.training.run_dir import RunDir

    RunDir(run).create(TrainConfig(env=EnvConfig(task="reach")))
    truncated = run / "checkpoints" / "latest.pt"
    truncated.write_bytes(b"PK\x03\x04 not a whole zip")

    with ros_session("startup", tmp_path) as (procs, _):
        log = exit_line(procs, "robot_bridge", hardware_config=str(no_box))
        assert "missing field(s) ['workspace_high_m']" in log and str(no_box) in log

        try:
            import franka_msgs  # noqa: F401
        except ImportError:
            log = exit_line(procs, "robot_bridge", name="bridge_franka", hardware_config="franka_fr3_franka_gripper")
            assert "gripper backend 'franka' needs franka_msgs" in log

        log = exit_line(procs, "policy_actor", name="actor_bad_policy", **{"actor.policy": "foo"})
        assert "parameter actor.policy = 'foo': expected one of ['checkpoint', 'network', 'random', 'zero']" in log

        log = exit_line(procs, "policy_actor", name="actor_bad_checkpoint",
                        **{"actor.policy": "checkpoint", "actor.checkpoint": str(run)})
        assert f"{truncated}: not a readable checkpoint" in log
