#!/usr/bin/env bash
# The test suite (CPU only, headless). Sets up the venv first if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] && [ -f ros2_ws/install/setup.bash ] || bash scripts/setup.sh
# The Isaac Lab adapter's tests run in a venv of their own with mjlab (scripts/setup_mjlab.sh, once)
[ -x .venv-mjlab/bin/python ] || bash scripts/setup_mjlab.sh
# The run report's browser check renders in Chromium from the system packages (installed here when running as
# root with apt; elsewhere that one test skips and says so).
if ! command -v chromium > /dev/null && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends chromium > /dev/null 2>&1 \
    || echo "scripts/test.sh: chromium did not install; the report's browser check will skip"
fi
. .venv/bin/activate
bash scripts/build_ros.sh  # the nodes run from the colcon install: rebuild it from this checkout (~2 s)
set +u  # colcon's setup scripts read unset variables
. ros2_ws/install/setup.bash
set -u
export MUJOCO_GL=${MUJOCO_GL:-egl}
# One torch.compile worker: tests run two at a time on small CI machines, beside real-time ROS nodes.
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-1}
# loadgroup: tests marked xdist_group share a worker (the MuJoCo Warp tests: one kernel compile, not two).
python -m pytest -q -n 2 --dist loadgroup --timeout 900 "$@"
