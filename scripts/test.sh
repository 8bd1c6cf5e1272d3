#!/usr/bin/env bash
# The test suite (CPU only, headless). Sets up the venv first if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
. .venv/bin/activate
export MUJOCO_GL=${MUJOCO_GL:-egl}
python -m pytest -q -n 2 --timeout 900 "$@"
