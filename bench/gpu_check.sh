#!/usr/bin/env bash
# Batched-simulation figures on a machine with a CUDA GPU and no network, in under 8 minutes:
#
#   bash bench/gpu_wheels.sh            # where PyPI is reachable: wheels into .gpu_wheels/p*/ (about 180 MB)
#   bash bench/gpu_check.sh [DEVICE]    # on the GPU machine, with .gpu_wheels/ copied there; DEVICE: cuda
#
# Installs bench/gpu_requirements.txt from those wheels into a venv that sees the machine's own torch, then
# prints MuJoCo Warp physics throughput and agreement with MuJoCo C on the task models (bench/warp_physics.py,
# the step as a CUDA graph) and the threads backend's scaling over the machine's cores (bench/batched_sim.py).
# The results' JSON files are also copied to $OUT when it is set. DEVICE=cpu runs the same path on any machine.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE=${1:-cuda}
PYTHON=${PYTHON:-python3}
VENV=${GPU_CHECK_VENV:-/tmp/robot_rl_gpu_check}
WHEELS=.gpu_wheels/wheels
started=$(date +%s)

if compgen -G ".gpu_wheels/p*/wheels.tar.part*" > /dev/null; then
  rm -rf "$WHEELS" && mkdir -p "$WHEELS"
  cat .gpu_wheels/p*/wheels.tar.part* | tar -x -C "$WHEELS"
fi
[ -d "$WHEELS" ] || { echo "gpu_check.sh: no wheels in .gpu_wheels/ (run bench/gpu_wheels.sh and copy .gpu_wheels/ here)" >&2; exit 2; }
if [ ! -x "$VENV/bin/python" ]; then
  # A venv that also sees $PYTHON's own packages (its torch), whether $PYTHON is a system or a venv python.
  "$PYTHON" -m venv "$VENV"
  "$PYTHON" -c "import site; print('\n'.join(site.getsitepackages()))" \
    > "$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/_host_packages.pth"
fi
"$VENV/bin/python" -m pip install --quiet --no-index --find-links "$WHEELS" -r bench/gpu_requirements.txt
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
py="$VENV/bin/python"
"$py" -c "import torch, mujoco, mujoco_warp, warp; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), \
'| mujoco', mujoco.__version__, '| mujoco-warp', mujoco_warp.__version__, '| warp', warp.__version__)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
echo "cores: $(nproc)"

if [ "$DEVICE" = cpu ]; then worlds=(1 64 256); else worlds=(1 1024 4096 16384); fi
marker=$(mktemp)
timeout 330 "$py" bench/warp_physics.py --device "$DEVICE" --tasks reach pick_cube --num-worlds "${worlds[@]}"
timeout 90 "$py" bench/batched_sim.py --tasks pick_cube reach --num-envs 1 16 64 256 --env-steps 3000
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT/results"
  find bench/results/warp_physics bench/results/batched_sim -name '*.json' -newer "$marker" -exec cp {} "$OUT/results/" \;
fi
echo "gpu_check.sh: done in $(( $(date +%s) - started )) s"
