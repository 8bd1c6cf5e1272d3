#!/usr/bin/env bash
# One-time set-up on a fresh machine: a venv in .venv with robot_rl and its sim, warp, dist, ros, data and dev extras,
# and the ROS 2 package robot_rl_ros built with colcon into ros2_ws/install (the layout `ros2 launch` uses on a
# robot).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -d .venv ] || "$PYTHON" -m venv .venv
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# CPU build of torch first (GPU users: install your CUDA torch build before this script; the package
# itself only asks for a range).
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[sim,warp,dist,ros,data,dev]"
# ROS 2: robots use their system install (ROS_DISTRO is set there). Elsewhere the PyPI Kilted wheels give real
# rclpy over DDS for the ROS tests and the sim robot node, and launch/launch_ros come as pure-Python wheels
# built from the ROS 2 repositories (../shared/wheels/ros2-launch; without them the launch tests skip).
if [ -z "${ROS_DISTRO:-}" ]; then
  python -m pip install --quiet "ros-kilted-rclpy[fastrtps]" ros-kilted-sensor-msgs ros-kilted-geometry-msgs \
    ros-kilted-std-msgs ros-kilted-std-srvs ros-kilted-trajectory-msgs ros-kilted-diagnostic-msgs
  LAUNCH_WHEELS=../shared/wheels/ros2-launch
  if ls "$LAUNCH_WHEELS"/launch_ros-*.whl > /dev/null 2>&1; then
    # --no-deps: their ament_index_python is the Kilted wheel of another distribution name
    python -m pip install --quiet --no-deps --no-warn-conflicts "$LAUNCH_WHEELS"/*.whl osrf-pycommon
  fi
fi
# The ament_python package with the nodes, built as on a robot: cd ros2_ws && colcon build.
python -m pip install --quiet "colcon-common-extensions>=0.3"
bash scripts/build_ros.sh
