"""Action gripper backends with fakes that keep the real goal fields (control_msgs, franka_msgs are not
installable here): goals carry the right widths/efforts, go out once per change, and only when ready."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("rclpy")

from robot_rl.ros.gripper import ActionGripper, load_action_types
from robot_rl.ros.hardware import GripperConfig


class FakeGripperCommand:
    """control_msgs/action/GripperCommand: Goal.command is a GripperCommand(position, max_effort)."""

    class Goal:
        def __init__(self) -> None:
            self.command = SimpleNamespace(position=0.0, max_effort=0.0)


class FakeParallelGripperCommand:
    """control_msgs/action/ParallelGripperCommand: Goal.command is a sensor_msgs/JointState."""

    class Goal:
        def __init__(self) -> None:
            self.command = SimpleNamespace(name=[], position=[], velocity=[], effort=[])


class FakeMove:
    class Goal:
        def __init__(self) -> None:
            self.width, self.speed = 0.0, 0.0


class FakeGrasp:
    class Goal:
        def __init__(self) -> None:
            self.width, self.speed, self.force = 0.0, 0.0, 0.0
            self.epsilon = SimpleNamespace(inner=0.0, outer=0.0)


class FakeClient:
    def __init__(self, name: str, ready: bool = True) -> None:
        self.name, self.ready, self.goals = name, ready, []

    def server_is_ready(self) -> bool:
        return self.ready

    def send_goal_async(self, goal):
        self.goals.append(goal)


class FakeNode:
    def get_logger(self):
        return SimpleNamespace(warning=lambda *_: None)


def make(backend: str, types: dict, **cfg):
    clients: dict[str, FakeClient] = {}

    def factory(node, action_type, name, group):
        clients[name] = FakeClient(name)
        return clients[name]

    config = GripperConfig(backend=backend, command="gripper", joint_names=("finger",), **cfg)
    return ActionGripper(FakeNode(), config, types, client_factory=factory), clients


def test_gripper_command_goals() -> None:
    gripper, clients = make("gripper_command", {"main": FakeGripperCommand}, max_effort_n=30.0)
    gripper.command(False)
    gripper.command(False)  # unchanged: nothing new is sent
    gripper.command(True)
    goals = clients["gripper"].goals
    assert [(g.command.position, g.command.max_effort) for g in goals] == [(0.0, 30.0), (0.08, 30.0)]


def test_parallel_gripper_goals() -> None:
    gripper, clients = make("parallel_gripper_command", {"main": FakeParallelGripperCommand})
    gripper.command(True)
    cmd = clients["gripper"].goals[0].command
    assert (cmd.name, cmd.position, cmd.effort) == (["finger"], [0.08], [40.0])


def test_franka_move_and_grasp_goals() -> None:
    gripper, clients = make("franka", {"move": FakeMove, "grasp": FakeGrasp}, speed_m_s=0.05)
    gripper.command(False)
    gripper.command(True)
    grasp, move = clients["gripper/grasp"].goals[0], clients["gripper/move"].goals[0]
    assert (grasp.width, grasp.speed, grasp.force, grasp.epsilon.outer) == (0.0, 0.05, 40.0, 0.08)
    assert (move.width, move.speed) == (0.08, 0.05)


def test_not_ready_server_drops_the_goal_and_retries_on_the_next_command() -> None:
    gripper, clients = make("gripper_command", {"main": FakeGripperCommand})
    clients["gripper"].ready = False
    gripper.command(False)
    assert clients["gripper"].goals == []
    clients["gripper"].ready = True
    gripper.command(False)
    assert len(clients["gripper"].goals) == 1


def test_missing_message_packages_give_a_clear_error() -> None:
    try:
        import control_msgs  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"control_msgs.*gripper\.backend: topic"):
            load_action_types("gripper_command")
    else:
        assert "main" in load_action_types("gripper_command")


class RecordingPublisherNode:
    def __init__(self) -> None:
        self.sent: list[list[float]] = []

    def create_publisher(self, msg_type, topic, qos):
        return SimpleNamespace(publish=lambda msg: self.sent.append(list(msg.data)))


@pytest.mark.parametrize(("units", "open_value"), [("m", 0.08), ("fraction", 1.0)])
def test_topic_gripper_resends_the_held_command_and_speaks_its_units(units: str, open_value: float) -> None:
    """A controller that subscribes after a change still gets the held command within resend_period_s."""
    from robot_rl.ros.gripper import TopicGripper

    now = [0.0]
    node = RecordingPublisherNode()
    gripper = TopicGripper(node, GripperConfig(backend="topic", units=units, resend_period_s=1.0),  # type: ignore[arg-type]
                           clock=lambda: now[0])
    for t in (0.0, 0.1, 0.5, 1.05, 1.5, 2.1):
        now[0] = t
        gripper.command(True)
    assert node.sent == [[open_value]] * 3  # the change at 0.0, then once a second
    now[0] = 2.2
    gripper.command(False)  # a change goes out at once
    assert node.sent[-1] == [0.0]
