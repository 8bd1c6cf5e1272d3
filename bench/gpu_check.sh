#!/usr/bin/env bash
# The batched simulator and the parallel trainer on a machine with a CUDA GPU and no network, in under 8 minutes:
#
#   bash bench/gpu_pack.sh                  # where PyPI is reachable: .gpu_pack/p00, p01 (about 100 MB)
#   python bench/warp_kernels.py --arch 90  # optional, any machine: .gpu_pack/kernels.tar.xz (saves ~3 min)
#   bash bench/gpu_check.sh [DEVICE]        # on the GPU machine, with .gpu_pack/ copied there; DEVICE: cuda
#
# Unpacks bench/gpu_requirements.txt's packages beside the machine's own torch and numpy (and MuJoCo Warp's
# precompiled kernels into Warp's cache), then prints:
#   1. the batched env on MuJoCo Warp: env steps/s at 1,024-16,384 worlds against the bare physics
#      (bench/batched_sim.py --backend warp);
#   2. the mujoco-threads backend over the machine's cores;
#   3. two short parallel training runs (reach, pick_cube) with evaluations on the CPU env.
# Results' JSON files, the runs' metrics and the log go to $OUT when it is set. Without .gpu_pack/ the packages
# must already be importable; DEVICE=cpu runs the same path, small, on any machine.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE=${1:-cuda}
PYTHON=${PYTHON:-python3}
SITE=${GPU_CHECK_SITE:-/tmp/robot_rl_gpu_site}
RUNS=${GPU_CHECK_RUNS:-/tmp/robot_rl_gpu_runs}
started=$(date +%s)

if compgen -G ".gpu_pack/p*/site.tar.xz.part*" > /dev/null; then
  rm -rf "$SITE" && mkdir -p "$SITE"
  cat .gpu_pack/p*/site.tar.xz.part* | "$PYTHON" -c \
    "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall(sys.argv[1])" "$SITE"
  export PYTHONPATH=$SITE
fi
if [ -f .gpu_pack/kernels.tar.xz ] && [ "$DEVICE" != cpu ]; then
  export WARP_CACHE_PATH=${WARP_CACHE_PATH:-/tmp/robot_rl_warp_cache}
  mkdir -p "$WARP_CACHE_PATH"
  "$PYTHON" -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" .gpu_pack/kernels.tar.xz \
    "$WARP_CACHE_PATH"
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
mark() { echo "--- $1 ($(( $(date +%s) - started )) s)"; }
stage() {  # seconds command...: a stage that fails or runs out of time is reported, and the next one runs
  local limit=$1; shift
  timeout -s INT "$limit" "$@" || echo "gpu_check.sh: stopped with exit code $? after at most $limit s: $*"
}

if [ "$DEVICE" = cpu ]; then
  worlds=(16); warp_steps=320; threads_worlds=(16 64); train_worlds=16; train_s=(40 40); train_steps=(1600 1600)
  backend=mujoco-threads; batch=256; capacity=200000
else
  worlds=(1024 4096 16384); warp_steps=200000; threads_worlds=(64 256 1024); train_worlds=4096; train_s=(60 120)
  train_steps=(4000000 12000000); backend=warp; batch=8192; capacity=8000000
fi
marker=$(mktemp)
mark "batched env on MuJoCo Warp ($DEVICE)"
stage 200 "$PYTHON" bench/batched_sim.py --backend warp --device "$DEVICE" --tasks pick_cube reach \
  --num-envs "${worlds[@]}" --env-steps "$warp_steps"
mark "batched env on mujoco-threads"
stage 60 "$PYTHON" bench/batched_sim.py --tasks pick_cube --num-envs "${threads_worlds[@]}" --env-steps 20000

train() {  # task seconds steps demos
  mark "parallel training: $1, $train_worlds worlds on $backend ($DEVICE), at most $2 s"
  rm -rf "$RUNS/$1"
  stage "$2" "$PYTHON" -m robot_rl.cli train --task "$1" --num-envs "$train_worlds" --backend "$backend" \
    --device "$DEVICE" --warp-device "$DEVICE" --total-env-steps "$3" --scripted-demos "$4" --batch-size "$batch" \
    --updates-per-step 2 --replay.capacity "$capacity" --eval-every $(( $3 / 16 )) --agent.compile off \
    --run-dir "$RUNS/$1" --no-progress
}
train reach "${train_s[0]}" "${train_steps[0]}" 20
train pick_cube "${train_s[1]}" "${train_steps[1]}" 10
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT/results"
  find bench/results/batched_sim -name '*.json' -newer "$marker" -exec cp {} "$OUT/results/" \;
  for task in reach pick_cube; do cp "$RUNS/$task/metrics.csv" "$OUT/results/train-$task.csv" 2> /dev/null || true; done
fi
echo "gpu_check.sh: done in $(( $(date +%s) - started )) s"
