#!/usr/bin/env bash
# Build the ROS 2 package robot_rl_ros with colcon into ros2_ws/install, as on a robot (run in the venv).
set -euo pipefail
cd "$(dirname "$0")/../ros2_ws"
command -v colcon > /dev/null || . ../.venv/bin/activate
colcon build --event-handlers console_cohesion- console_stderr- summary- > build.log 2>&1 || { cat build.log; exit 1; }
rm -f build.log
