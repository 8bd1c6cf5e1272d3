"""A real arm: robot bridge, camera bridges, teleop and the policy actor (learner optional or remote).

Start the arm's driver stack first (docs/hardware.md), then:

    ros2 launch robot_rl_ros real_arm.launch.py hardware:=franka_fr3 \
        cameras:=realsense_d435_front,realsense_d405_wrist policy:=checkpoint checkpoint:=runs/...
"""

from launch import LaunchDescription
from launch.actions import ExecuteProcess, OpaqueFunction
from launch_ros.actions import Node

from robot_rl.ros.hardware import load_camera_config
from robot_rl_ros.launch_support import arg, environment, flag, names, value
from robot_rl_ros.specs import SPECS, check_rt_priority, learner_argv, share_dir


def _nodes(context):
    ns, hw = value(context, "namespace"), value(context, "hardware")
    cameras = names(context, "cameras")
    share = share_dir()
    rt = check_rt_priority(value(context, "rt_priority"), "real_arm.launch.py rt_priority")
    out = [Node(**SPECS["robot_bridge"].launch_kwargs(share, ns, overrides={"hardware_config": hw},
                                                      rt_priority=rt))]
    for cam in cameras:
        name = load_camera_config(cam).name
        out.append(Node(**SPECS["camera_bridge"].launch_kwargs(
            share, ns, f"camera_bridge_{name}", overrides={"camera_config": cam})))
    if flag(context, "teleop"):
        teleop = {"joy_topic": value(context, "joy")}
        out.append(Node(**SPECS["teleop"].launch_kwargs(share, ns, overrides=teleop)))
    classifier = value(context, "reward_classifier")
    if classifier:
        out.append(Node(**SPECS["reward_classifier"].launch_kwargs(share, ns, overrides={"classifier": classifier})))
    if flag(context, "actor"):
        actor = {"env.hardware_config": hw, "env.reward": flag(context, "reward") or bool(classifier),
                 "actor.policy": value(context, "policy"), "actor.checkpoint": value(context, "checkpoint"),
                 "actor.learner": value(context, "link"),
                 "actor.learner_address": value(context, "learner_address"),
                 "actor.intervention_mode": value(context, "intervention_mode")}
        if cameras:
            actor["env.cameras"] = cameras
        out.append(Node(**SPECS["policy_actor"].launch_kwargs(share, ns, overrides=actor, rt_priority=rt)))
    if flag(context, "learner"):
        cmd = learner_argv(value(context, "learner_address"), hw, cameras, extra=value(context, "learner_args").split(),
                           intervention_mode=value(context, "intervention_mode"))
        out.append(ExecuteProcess(cmd=cmd, output="screen"))
    return out


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([
        arg("hardware", "franka_fr3", "arm config: hardware_configs/arms/<name>.yaml or a path"),
        arg("namespace", "", "namespace of the arm's driver stack"),
        arg("cameras", "realsense_d435_front", "comma-separated camera configs (hardware_configs/cameras)"),
        arg("teleop", "true", "start the teleop node (SpaceMouse / gamepad interventions)"),
        arg("joy", "spacenav/joy", "sensor_msgs/Joy topic of the teleop device"),
        arg("actor", "true", "start the policy actor"),
        arg("policy", "checkpoint", "checkpoint | network | random | zero"),
        arg("checkpoint", "", "run folder or checkpoint file"),
        arg("reward", "false", "read reward/success from rl/reward (a reward node; implied by reward_classifier)"),
        arg("reward_classifier", "", "classifier file (robot-rl train-classifier): start the reward node"),
        arg("link", "none", "none: act with the policy; remote: stream to the learner, take its weights"),
        arg("learner", "false", "also start the learner on this machine"),
        arg("learner_address", "localhost:50051", "host:port of the learner (remote or local)"),
        arg("learner_args", "", "further arguments for robot-rl learner (learner:=true), e.g. --train.task T"),
        arg("intervention_mode", "hil", "hil: interventions also fill the demo buffer; rlif: they are the only "
            "reward (-1 before each takeover); actor and learner must agree"),
        arg("rt_priority", "0", "SCHED_FIFO priority 1-99 for robot bridge and policy actor (chrt); 0: normal"),
        *environment(),
        OpaqueFunction(function=_nodes),
    ])
