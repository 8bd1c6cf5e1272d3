#!/usr/bin/env bash
# Downloads the wheels bench/gpu_check.sh installs (bench/gpu_requirements.txt and their dependencies) for a
# GPU machine without package registries, and packs them as parts small enough to carry one at a time:
#
#   bash bench/gpu_wheels.sh [PYTHON_VERSION] [PART_MB]     # defaults: 3.12, 58
#
# writes .gpu_wheels/p00/wheels.tar.part00, .gpu_wheels/p01/wheels.tar.part01, ... (with the checkout, each
# under the 64 MiB a device call carries); gpu_check.sh joins them.
# numpy is left out: the target machine's torch brings it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON_VERSION=${1:-3.12}
PART_MB=${2:-58}
DEST=.gpu_wheels
PIP=${PIP:-.venv/bin/pip}
rm -rf "$DEST"
mkdir -p "$DEST/download"
"$PIP" download --quiet --only-binary=:all: --python-version "$PYTHON_VERSION" \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 --platform linux_x86_64 --platform any \
  -d "$DEST/download" -r bench/gpu_requirements.txt
rm -f "$DEST"/download/numpy-*.whl
tar -C "$DEST/download" -cf "$DEST/wheels.tar" .
split -b "${PART_MB}M" -d "$DEST/wheels.tar" "$DEST/wheels.tar.part"
rm -rf "$DEST/download" "$DEST/wheels.tar"
for part in "$DEST"/wheels.tar.part*; do
  folder="$DEST/p${part##*.part}"
  mkdir -p "$folder"
  mv "$part" "$folder/"
done
du -sh "$DEST"/p*
