"""Every node stops cleanly on SIGINT (Ctrl-C, and what ``ros2 launch`` sends first) and on SIGTERM: exit status
0, one ``stopped (...)`` line, no traceback. The sim robot, bridge and policy actor run a live control loop when
the signal comes (the actor is mid-episode), the camera bridge forwards frames, the teleop and reward nodes
publish; a second policy actor is stopped while it waits for a bridge that never answers. The running actor
records its episodes (with a camera): the episode the signal cut is kept in the recording, marked interrupted."""

from __future__ import annotations

import signal
import time

import pytest

pytest.importorskip("rclpy")
from conftest import ros_session
from ros_harness import wait_for
from sensor_msgs.msg import JointState

from robot_rl.envs import names
from robot_rl.rewards.classifier import save_classifier
from robot_rl.rewards.testing import TINY_CONFIG, synthetic_frames
from robot_rl.rewards.train import train_classifier
from robot_rl.ros.qos import EVENTS

NS = "/down"
STOP_BOUND_S = 5.0  # ros2 launch escalates to SIGTERM after 5 s


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_every_node_stops_cleanly(tmp_path, sig) -> None:
    model, report = train_classifier(synthetic_frames(), TINY_CONFIG)
    classifier = tmp_path / "classifier.pt"
    save_classifier(classifier, model, report.threshold, report.as_dict())
    with ros_session(f"shutdown_{sig.name}", tmp_path) as (procs, probe):
        procs.start("sim_robot", namespace=NS, **{"sim.cameras": ["front"]})
        procs.start("robot_bridge", namespace=NS)
        procs.start("camera_bridge", namespace=NS, camera_config="sim_front")
        recording = tmp_path / "recording"
        procs.start("policy_actor", namespace=NS, **{"actor.policy": "random", "env.privileged_task": "reach",
                                                     "env.cameras": ["sim_front"], "actor.record": str(recording),
                                                     "actor.record_task": "reach"})
        procs.start("teleop", namespace=NS)
        procs.start("reward_classifier", namespace=NS, classifier=str(classifier))
        procs.start("policy_actor", name="lonely_actor", namespace="/nobody",
                    **{"actor.policy": "zero", "env.reset_timeout_s": 120.0})
        echoes = probe.collect(JointState, f"{NS}/{names.EXECUTED_ACTION}", EVENTS)
        wait_for(lambda: len(echoes) > 20, 60.0, "the actor stepping", procs)
        time.sleep(1.0)
        procs.assert_alive()
        sent = time.monotonic()
        for proc in procs.procs.values():
            proc.send_signal(sig)
        for key, proc in procs.procs.items():
            try:
                code = proc.wait(timeout=max(0.1, sent + STOP_BOUND_S - time.monotonic()))
            except Exception:  # report which one hung
                code = None
            assert code == 0, f"{key} exited {code} after {sig.name}\n{procs.logs()}"
        log = procs.logs()
        assert "Traceback" not in log and "KeyboardInterrupt" not in log, log
        for key in procs.procs:
            name = key.rsplit("/", 1)[1]
            text = (procs.log_dir / f"{key.strip('/').replace('/', '_')}.log").read_text()
            assert text.count(f"stopped ({sig.name}") == 1, f"{name}: no single stop line\n{text[-2000:]}"
    assert_recorded(recording, len(echoes))


def assert_recorded(recording, echoed: int) -> None:
    """Every step the actor took is in its recording, at the bridge's stamps, the last episode interrupted."""
    from robot_rl.formats.rosbag import read_episodes_bag

    meta, episodes = read_episodes_bag(recording)
    assert meta.task == "reach" and set(meta.space().spaces) == {"state", "privileged", "images/front"}
    steps = sum(len(e) for e in episodes)
    assert steps >= 20 and abs(steps - echoed) <= 2, (steps, echoed)  # an echo may cross the stop either way
    assert episodes[-1].truncated and not episodes[-1].terminated
    assert episodes[0].observations["images/front"].std() > 0  # camera frames, not blanks
