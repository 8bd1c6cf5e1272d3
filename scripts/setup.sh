#!/usr/bin/env bash
# One-time set-up on a fresh machine: a venv in .venv with robot_rl and its sim + dev extras.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -d .venv ] || "$PYTHON" -m venv .venv
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# CPU build of torch first (GPU users: install your CUDA torch build before this script; the package
# itself only asks for a range).
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[sim,dist,ros,dev]"
# ROS 2: robots use their system install (ROS_DISTRO is set there). Elsewhere the PyPI Kilted wheels give real
# rclpy over DDS for the ROS tests and the sim robot node.
if [ -z "${ROS_DISTRO:-}" ]; then
  python -m pip install --quiet "ros-kilted-rclpy[fastrtps]" ros-kilted-sensor-msgs ros-kilted-geometry-msgs \
    ros-kilted-std-msgs ros-kilted-std-srvs ros-kilted-trajectory-msgs ros-kilted-diagnostic-msgs
fi
# The ament_python package with the nodes (console scripts + launch/config as data). On a robot with a ROS
# workspace, `colcon build` it instead.
python -m pip install --quiet ./ros2_ws/src/robot_rl_ros
