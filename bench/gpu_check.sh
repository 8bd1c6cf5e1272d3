#!/usr/bin/env bash
# Batched-simulation figures on a machine with a CUDA GPU and no network, in under 8 minutes:
#
#   bash bench/gpu_pack.sh             # where PyPI is reachable: .gpu_pack/p00, p01, ... (about 100 MB)
#   bash bench/gpu_check.sh [DEVICE]   # on the GPU machine, with .gpu_pack/ copied there; DEVICE: cuda
#
# Unpacks bench/gpu_requirements.txt's packages beside the machine's own torch and numpy, then prints MuJoCo
# Warp physics throughput and agreement with MuJoCo C on the task models (bench/warp_physics.py, the step as a
# CUDA graph) and the threads backend's scaling over the machine's cores (bench/batched_sim.py). Results' JSON
# files and the log are also copied to $OUT when it is set. Without .gpu_pack/ the packages must already be
# importable; DEVICE=cpu runs the same path on any machine.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE=${1:-cuda}
PYTHON=${PYTHON:-python3}
SITE=${GPU_CHECK_SITE:-/tmp/robot_rl_gpu_site}
started=$(date +%s)

if compgen -G ".gpu_pack/p*/site.tar.xz.part*" > /dev/null; then
  rm -rf "$SITE" && mkdir -p "$SITE"
  cat .gpu_pack/p*/site.tar.xz.part* | "$PYTHON" -c \
    "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall(sys.argv[1])" "$SITE"
  export PYTHONPATH=$SITE
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
"$PYTHON" -c "import mujoco_warp" 2> /dev/null || {
  echo "gpu_check.sh: MuJoCo Warp is not importable and .gpu_pack/ holds no parts (run bench/gpu_pack.sh where" \
       "PyPI is reachable and copy .gpu_pack/ here)" >&2
  exit 2
}
"$PYTHON" -c "import torch, mujoco, mujoco_warp, warp; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), \
'| mujoco', mujoco.__version__, '| mujoco-warp', mujoco_warp.__version__, '| warp', warp.__version__)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
echo "cores: $(nproc)"

if [ "$DEVICE" = cpu ]; then worlds=(1 64 256); else worlds=(1 1024 4096 16384); fi
marker=$(mktemp)
timeout 240 "$PYTHON" bench/warp_physics.py --device "$DEVICE" --tasks reach pick_cube --num-worlds "${worlds[@]}"
timeout 60 "$PYTHON" bench/batched_sim.py --tasks pick_cube reach --num-envs 1 16 64 256 --env-steps 2000
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT/results"
  find bench/results/warp_physics bench/results/batched_sim -name '*.json' -newer "$marker" -exec cp {} "$OUT/results/" \;
fi
echo "gpu_check.sh: done in $(( $(date +%s) - started )) s"
