"""ament_python package of robot_rl's ROS 2 nodes (``colcon build`` or plain ``pip install``)."""

import os
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "robot_rl_ros"
HERE = Path(__file__).resolve().parent
HARDWARE = HERE.parents[2] / "hardware_configs"  # the repository's hardware_configs/, shipped in share/


def hardware_files(kind: str) -> list[str]:
    return sorted(os.path.relpath(p, HERE) for p in (HARDWARE / kind).glob("*.yaml"))


CONSOLE_SCRIPTS = [
    "robot_bridge = robot_rl_ros.nodes.robot_bridge:main",
    "camera_bridge = robot_rl_ros.nodes.camera_bridge:main",
    "policy_actor = robot_rl_ros.nodes.policy_actor:main",
    "sim_robot = robot_rl_ros.nodes.sim_robot:main",
    "teleop = robot_rl_ros.nodes.teleop:main",
    "reward_classifier = robot_rl_ros.nodes.reward_classifier:main",
]

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/hardware_configs/arms", hardware_files("arms")),
        (f"share/{PACKAGE}/hardware_configs/cameras", hardware_files("cameras")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="robot_rl developers",
    maintainer_email="robot-rl@example.com",
    description="ROS 2 nodes of robot_rl (bridges, policy actor, teleop, sim robot, reward classifier)",
    license="Apache-2.0",
    entry_points={"console_scripts": CONSOLE_SCRIPTS},
)
