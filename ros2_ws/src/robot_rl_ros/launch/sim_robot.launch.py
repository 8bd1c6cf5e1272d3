"""The MuJoCo sim robot behind ROS 2, with the robot bridge, camera bridges and the policy actor:

    ros2 launch robot_rl_ros sim_robot.launch.py task:=reach policy:=checkpoint checkpoint:=runs/<run>
"""

from launch import LaunchDescription
from launch.actions import OpaqueFunction
from launch_ros.actions import Node

from robot_rl.ros.hardware import load_camera_config
from robot_rl_ros.launch_support import arg, environment, flag, names, value
from robot_rl_ros.specs import SPECS, share_dir


def _nodes(context):
    ns, hw, task = value(context, "namespace"), value(context, "hardware"), value(context, "task")
    cameras = names(context, "cameras")  # sim camera names: front, wrist
    share = share_dir()
    sim = {"hardware_config": hw, "sim.task": task}
    if cameras:
        sim["sim.cameras"] = cameras
    out = [
        Node(**SPECS["sim_robot"].launch_kwargs(share, ns, overrides=sim)),
        Node(**SPECS["robot_bridge"].launch_kwargs(share, ns, overrides={"hardware_config": hw})),
    ]
    for cam in cameras:
        name = load_camera_config(f"sim_{cam}").name
        out.append(Node(**SPECS["camera_bridge"].launch_kwargs(
            share, ns, f"camera_bridge_{name}", overrides={"camera_config": f"sim_{cam}"})))
    if flag(context, "actor"):
        actor = {"env.hardware_config": hw, "actor.policy": value(context, "policy"),
                 "actor.checkpoint": value(context, "checkpoint")}
        if cameras:
            actor["env.cameras"] = [f"sim_{c}" for c in cameras]
        else:
            actor["env.privileged_task"] = task  # state policies trained in sim read the task's goal
        out.append(Node(**SPECS["policy_actor"].launch_kwargs(share, ns, overrides=actor)))
    return out


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([
        arg("namespace", "sim", "namespace of the simulated arm"),
        arg("hardware", "sim_panda", "arm config of the sim robot (crisp-style topics)"),
        arg("task", "reach", "sim task: reach, pick_cube, peg_insert, push"),
        arg("cameras", "", "comma-separated sim cameras to render and bridge (front,wrist); empty: state"),
        arg("actor", "true", "start the policy actor"),
        arg("policy", "zero", "checkpoint | network | random | zero"),
        arg("checkpoint", "", "run folder or checkpoint file (policy:=checkpoint)"),
        *environment(),
        OpaqueFunction(function=_nodes),
    ])
