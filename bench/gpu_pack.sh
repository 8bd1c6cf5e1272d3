#!/usr/bin/env bash
# Packs what bench/gpu_check.sh needs beside a machine's own torch and numpy (bench/gpu_requirements.txt and
# their dependencies, installed for the target Python) for a GPU machine without package registries, as
# compressed parts small enough to carry one at a time:
#
#   bash bench/gpu_pack.sh [PYTHON_VERSION] [PART_MB]      # defaults: 3.12, 56
#
# writes .gpu_pack/p00/site.tar.xz.part00, .gpu_pack/p01/site.tar.xz.part01, ...; gpu_check.sh joins and
# unpacks them. Left out: numpy (the machine's torch brings it), Warp's tests and examples, and Warp's CPU
# compiler library (warp-clang, 69 MB: kernels for a CUDA device are compiled by NVRTC inside warp.so).
# KEEP_CPU=1 keeps the CPU compiler, for trying the pack on Warp's CPU device.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON_VERSION=${1:-3.12}
PART_MB=${2:-56}
DEST=.gpu_pack
PIP=${PIP:-.venv/bin/pip}
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
"$PIP" install --quiet --target "$site" --only-binary=:all: --python-version "$PYTHON_VERSION" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform linux_x86_64 --platform any -r bench/gpu_requirements.txt
rm -rf "$site"/numpy "$site"/numpy.libs "$site"/numpy-*.dist-info "$site"/bin "$site"/warp/tests "$site"/warp/examples
[ "${KEEP_CPU:-0}" = 1 ] || rm -f "$site"/warp/bin/warp-clang.so
rm -rf "$DEST" && mkdir -p "$DEST"
tar -C "$site" -cf - . | xz -9 -T0 | split -b "${PART_MB}M" -d - "$DEST/site.tar.xz.part"
for part in "$DEST"/site.tar.xz.part*; do
  folder="$DEST/p${part##*.part}"
  mkdir -p "$folder" && mv "$part" "$folder/"
done
du -sh "$DEST"/p*
