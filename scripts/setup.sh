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
python -m pip install --quiet -e ".[sim,dev]"
