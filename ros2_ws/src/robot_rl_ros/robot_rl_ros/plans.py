"""What each launch file starts, as plain data: its arguments and, for given argument values, the nodes and
processes it starts (pure Python, no ``launch`` import).

A launch file is ``describe("<name>")`` (``launch_support``): the arguments become ``DeclareLaunchArgument``s,
the plan becomes ``launch_ros`` Nodes built from the shared node specs. Tests check plans directly and run
the launch files for real. An argument that sets a node parameter takes its default from that parameter's
dataclass, so ``ros2 launch`` with no arguments gives every node its own defaults; ``hardware`` has no default
where it names a real arm (the bridge would otherwise command whichever arm a default names).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from robot_rl_ros.specs import check_rt_priority, learner_argv


@dataclass(frozen=True)
class Argument:
    name: str
    default: str | None
    """None: required (``ros2 launch`` refuses to start without it)."""
    description: str


@dataclass(frozen=True)
class NodePlan:
    spec: str
    namespace: str
    name: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    rt_priority: int = 0


@dataclass(frozen=True)
class ProcessPlan:
    cmd: tuple[str, ...]


Plan = NodePlan | ProcessPlan


def default_of(cls: type, name: str) -> str:
    """A dataclass field's default as a launch argument value (booleans lower case, tuples comma-joined)."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    value = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return str(value)


def flag(args: Mapping[str, str], name: str) -> bool:
    return args[name].strip().lower() in ("1", "true", "yes", "on")


def names(args: Mapping[str, str], name: str) -> list[str]:
    return [v.strip() for v in args[name].split(",") if v.strip()]


def action_history(text: str) -> int:
    """The ``action_history`` launch argument as a number of steps."""
    from robot_rl.envs.action_history import check_action_history

    try:
        steps = int(text)
    except ValueError:
        raise ValueError(f"real_arm.launch.py action_history must be a whole number of steps, got {text!r}") from None
    check_action_history(steps, "real_arm.launch.py action_history")
    return steps


def recording(args: Mapping[str, str]) -> dict[str, str]:
    """The actor's recording parameters, when ``record:=DIR`` is given."""
    return {"actor.record": args["record"], "actor.record_task": args["record_task"]} if args["record"] else {}


# --- sim_robot.launch.py ---
def _sim_robot_arguments() -> list[Argument]:
    from robot_rl.ros.actor import PolicyActorConfig
    from robot_rl.ros.params import SimRobotConfig, SimRobotParams

    return [
        Argument("namespace", "sim", "namespace of the simulated arm"),
        Argument("hardware", default_of(SimRobotParams, "hardware_config"),
                 "arm config of the sim robot (crisp-style topics)"),
        Argument("task", default_of(SimRobotConfig, "task"), "sim task: reach, pick_cube, peg_insert, push"),
        Argument("cameras", default_of(SimRobotConfig, "cameras"),
                 "comma-separated sim cameras to render and bridge (front,wrist); empty: state"),
        Argument("actor", "true", "start the policy actor"),
        Argument("policy", default_of(PolicyActorConfig, "policy"), "checkpoint | network | random | zero"),
        Argument("checkpoint", default_of(PolicyActorConfig, "checkpoint"),
                 "run folder or checkpoint file (policy:=checkpoint)"),
        Argument("record", default_of(PolicyActorConfig, "record"),
                 "record every episode into this new rosbag2 folder (MCAP; link:=none)"),
        Argument("record_task", default_of(PolicyActorConfig, "record_task"), "task name of the recorded episodes"),
    ]


def _sim_robot(args: Mapping[str, str]) -> list[Plan]:
    from robot_rl.ros.hardware import load_camera_config

    ns, hw, task, cameras = args["namespace"], args["hardware"], args["task"], names(args, "cameras")
    sim: dict[str, Any] = {"hardware_config": hw, "sim.task": task}
    if cameras:
        sim["sim.cameras"] = cameras
    out: list[Plan] = [NodePlan("sim_robot", ns, overrides=sim),
                       NodePlan("robot_bridge", ns, overrides={"hardware_config": hw})]
    for cam in cameras:
        name = load_camera_config(f"sim_{cam}").name
        out.append(NodePlan("camera_bridge", ns, f"camera_bridge_{name}", {"camera_config": f"sim_{cam}"}))
    if flag(args, "actor"):
        # The sim robot publishes rl/reward (a real arm does not): the actor reads it.
        actor: dict[str, Any] = {"env.hardware_config": hw, "env.reward": True, "actor.policy": args["policy"],
                                 "actor.checkpoint": args["checkpoint"], **recording(args)}
        if cameras:
            actor["env.cameras"] = [f"sim_{c}" for c in cameras]
        else:
            actor["env.privileged_task"] = task  # state policies trained in sim read the task's goal
        out.append(NodePlan("policy_actor", ns, overrides=actor))
    return out


# --- real_arm.launch.py ---
def _real_arm_arguments() -> list[Argument]:
    from robot_rl.ros.actor import PolicyActorConfig
    from robot_rl.ros.params import RosEnvConfig
    from robot_rl.ros.teleop import TeleopConfig

    return [
        Argument("hardware", None, "arm config: hardware_configs/arms/<name>.yaml or a path (required)"),
        Argument("namespace", "", "namespace of the arm's driver stack"),
        Argument("cameras", default_of(RosEnvConfig, "cameras"),
                 "comma-separated camera configs (hardware_configs/cameras)"),
        Argument("teleop", "true", "start the teleop node (SpaceMouse / gamepad interventions)"),
        Argument("joy", default_of(TeleopConfig, "joy_topic"), "sensor_msgs/Joy topic of the teleop device"),
        Argument("actor", "true", "start the policy actor"),
        Argument("policy", default_of(PolicyActorConfig, "policy"),
                 "checkpoint | network | random | zero (holds still)"),
        Argument("checkpoint", default_of(PolicyActorConfig, "checkpoint"), "run folder or checkpoint file"),
        Argument("record", default_of(PolicyActorConfig, "record"),
                 "record every episode into this new rosbag2 folder (MCAP; link:=none)"),
        Argument("record_task", default_of(PolicyActorConfig, "record_task"), "task name of the recorded episodes"),
        Argument("reward", default_of(RosEnvConfig, "reward"),
                 "read reward/success from rl/reward (a reward node; implied by reward_classifier)"),
        Argument("reward_classifier", "", "classifier file (robot-rl train-classifier): start the reward node"),
        Argument("link", default_of(PolicyActorConfig, "learner"),
                 "none: act with the policy; remote: stream to the learner, take its weights"),
        Argument("base_policy", default_of(PolicyActorConfig, "base_policy"),
                 "link:=remote: learn a residual over this base policy file (it acts here, next to the arm; "
                 "with learner:=true the learner learns over the same file)"),
        Argument("action_history", str(default_of(PolicyActorConfig, "action_history")),
                 "link:=remote: observe the last N actions sent to the arm (commands still in flight on an arm "
                 "whose commands act late); with learner:=true the learner observes the same"),
        Argument("guide_policy", default_of(PolicyActorConfig, "guide_policy"),
                 "link:=remote: jump-start RL with this guide file acting first in each episode (h drawn per "
                 "episode; with learner:=true the learner gets the same guide)"),
        Argument("learner", "false", "also start the learner on this machine"),
        Argument("learner_address", default_of(PolicyActorConfig, "learner_address"),
                 "host:port of the learner (remote or local)"),
        Argument("learner_args", "", "further arguments for robot-rl learner (learner:=true), e.g. --train.task T"),
        Argument("intervention_mode", default_of(PolicyActorConfig, "intervention_mode"),
                 "hil: interventions also fill the demo buffer; rlif: they are the only reward (-1 before each "
                 "takeover); actor and learner must agree"),
        Argument("rt_priority", "0", "SCHED_FIFO priority 1-99 for robot bridge and policy actor (chrt); 0: normal"),
    ]


def _real_arm(args: Mapping[str, str]) -> list[Plan]:
    from robot_rl.ros.hardware import load_camera_config

    ns, hw, cameras = args["namespace"], args["hardware"], names(args, "cameras")
    rt = check_rt_priority(args["rt_priority"], "real_arm.launch.py rt_priority")
    out: list[Plan] = [NodePlan("robot_bridge", ns, overrides={"hardware_config": hw}, rt_priority=rt)]
    for cam in cameras:
        name = load_camera_config(cam).name
        out.append(NodePlan("camera_bridge", ns, f"camera_bridge_{name}", {"camera_config": cam}))
    if flag(args, "teleop"):
        out.append(NodePlan("teleop", ns, overrides={"joy_topic": args["joy"]}))
    classifier = args["reward_classifier"]
    if classifier:
        out.append(NodePlan("reward_classifier", ns, overrides={"classifier": classifier}))
    if flag(args, "actor"):
        actor: dict[str, Any] = {
            "env.hardware_config": hw, "env.reward": flag(args, "reward") or bool(classifier),
            "actor.policy": args["policy"], "actor.checkpoint": args["checkpoint"], "actor.learner": args["link"],
            "actor.learner_address": args["learner_address"], "actor.intervention_mode": args["intervention_mode"],
            **recording(args)}
        if args["base_policy"]:
            actor["actor.base_policy"] = args["base_policy"]
        if args["guide_policy"]:
            actor["actor.guide_policy"] = args["guide_policy"]
        history = action_history(args["action_history"])
        if history:
            actor["actor.action_history"] = history
        if cameras:
            actor["env.cameras"] = cameras
        out.append(NodePlan("policy_actor", ns, overrides=actor, rt_priority=rt))
    if flag(args, "learner"):
        out.append(ProcessPlan(tuple(learner_argv(args["learner_address"], hw, cameras,
                                                  extra=args["learner_args"].split(),
                                                  intervention_mode=args["intervention_mode"],
                                                  base_policy=args["base_policy"],
                                                  guide_policy=args["guide_policy"],
                                                  action_history=action_history(args["action_history"])))))
    return out


# --- robot_bridge.launch.py ---
def _robot_bridge_arguments() -> list[Argument]:
    from robot_rl.ros.params import BridgeParams

    return [Argument("hardware", default_of(BridgeParams, "hardware_config"),
                     "arm config: hardware_configs/arms/<name>.yaml or a path"),
            Argument("namespace", "", "namespace of the arm (driver topics resolve inside it)")]


def _robot_bridge(args: Mapping[str, str]) -> list[Plan]:
    return [NodePlan("robot_bridge", args["namespace"], overrides={"hardware_config": args["hardware"]})]


# --- learner.launch.py ---
def _learner_arguments() -> list[Argument]:
    from robot_rl.distributed.config import LinkConfig
    from robot_rl.training.config import TrainConfig

    return [
        Argument("address", f"{default_of(LinkConfig, 'host')}:{default_of(LinkConfig, 'port')}",
                 "host:port the learner listens on (0.0.0.0:<port> for actors on other machines)"),
        Argument("hardware", None, "the actor's arm config (the learner builds the same spaces; required)"),
        Argument("cameras", "", "the actor's comma-separated camera configs"),
        Argument("intervention_mode", default_of(TrainConfig, "intervention_mode"),
                 "hil | rlif: must match the actor's (real_arm.launch.py)"),
        Argument("learner_args", "", "further arguments for robot-rl learner"),
    ]


def _learner(args: Mapping[str, str]) -> list[Plan]:
    return [ProcessPlan(tuple(learner_argv(args["address"], args["hardware"], names(args, "cameras"),
                                           extra=args["learner_args"].split(),
                                           intervention_mode=args["intervention_mode"])))]


LAUNCH_FILES: dict[str, tuple[Callable[[], list[Argument]], Callable[[Mapping[str, str]], list[Plan]]]] = {
    "sim_robot": (_sim_robot_arguments, _sim_robot),
    "real_arm": (_real_arm_arguments, _real_arm),
    "robot_bridge": (_robot_bridge_arguments, _robot_bridge),
    "learner": (_learner_arguments, _learner),
}
"""Launch file stem (``<stem>.launch.py``) -> (its arguments, its plan for given argument values)."""


def plan(launch_file: str, **args: str) -> list[Plan]:
    """The plan of ``launch_file`` for ``args`` over its defaults (a missing required argument raises)."""
    arguments, build = LAUNCH_FILES[launch_file]
    values = {a.name: a.default for a in arguments()}
    unknown = set(args) - set(values)
    if unknown:
        raise ValueError(f"{launch_file}.launch.py: unknown argument(s) {sorted(unknown)}")
    values.update(args)
    missing = [k for k, v in values.items() if v is None]
    if missing:
        raise ValueError(f"{launch_file}.launch.py: required argument(s) {missing} not given")
    return build(values)  # type: ignore[arg-type]
