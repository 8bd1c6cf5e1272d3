#!/usr/bin/env bash
# A second venv, .venv-mjlab, with mjlab (Isaac Lab's vectorised env API on MuJoCo Warp) and robot_rl: the
# tests run robot_rl's Isaac Lab adapter against it. mjlab pins mujoco 3.11, robot_rl's own venv has MuJoCo 4,
# so the two cannot share a venv. The CPU build of torch is pinned as in scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -d .venv-mjlab ] || "$PYTHON" -m venv .venv-mjlab
.venv-mjlab/bin/python -m pip install --quiet --upgrade pip
.venv-mjlab/bin/python -m pip install --quiet "torch==2.13.0"
.venv-mjlab/bin/python -m pip install --quiet "mjlab==1.6.0" "torch==2.13.0" "gymnasium>=1.0"
# robot_rl's core needs nothing mjlab does not bring besides gymnasium; its sim extra would replace mjlab's MuJoCo
.venv-mjlab/bin/python -m pip install --quiet --no-deps -e .
