"""The ``warp`` backend: N worlds in MuJoCo Warp, on a CUDA GPU or Warp's CPU device.

The worlds live in Warp arrays; the env reads and writes them through zero-copy torch views (``wp.to_torch``),
so nothing crosses to the host inside the step loop. On a GPU the ``substeps`` physics steps of one control
step are captured once as a CUDA graph and replayed (one launch instead of hundreds of kernel launches), on
the stream torch uses, so torch's writes of the controls and Warp's steps stay in order without a sync.
Episodes start from a ``StartPool`` of the CPU env's resets (see there for why). Domain randomisation that
changes the model is carried per world: the model fields it touches are allocated per world
(``put_model(batch_sizes=...)``) and a start writes its own values into them.
"""

from __future__ import annotations

import numpy as np
import torch

from robot_rl.envs.geometry_torch import matrix_to_quat
from robot_rl.sim.batched.config import WarpConfig
from robot_rl.sim.batched.physics import EpisodeStarts, Physics
from robot_rl.sim.batched.starts import STATE_FIELDS, StartPool
from robot_rl.sim.env import ArmEnv
from robot_rl.sim.readings import WorldReadings

INSTALL = "pip install 'robot_rl[warp]'  (mujoco-warp and the mujoco release of the same number)"


def import_warp():
    """``(warp, mujoco_warp)``, or an error naming what is missing and the install command."""
    import mujoco

    try:
        import mujoco_warp
        import warp
    except ImportError as error:
        raise ImportError(f"the warp backend needs MuJoCo Warp ({error}); install it with: {INSTALL}") from None
    if mujoco_warp.__version__ != mujoco.__version__:
        raise ImportError(
            f"the warp backend needs mujoco-warp of the same version as mujoco, found mujoco-warp "
            f"{mujoco_warp.__version__} with mujoco {mujoco.__version__}; install a matching pair with: {INSTALL}"
        )
    warp.config.log_level = warp.LOG_WARNING  # else one line per kernel module loaded
    return warp, mujoco_warp


def warp_device(wp, requested: str) -> str:
    if requested != "auto":
        return requested
    return "cuda" if wp.is_cuda_available() else "cpu"


class WarpPhysics(Physics):
    name = "warp"

    def __init__(self, template: ArmEnv, num_worlds: int, config: WarpConfig, pool: StartPool,
                 device: str) -> None:
        wp, mjw = import_warp()
        self.wp, self.mjw = wp, mjw
        self.wp_device = wp.get_device(device)
        torch_device = torch.device(str(wp.device_to_torch(self.wp_device)))
        super().__init__(template, num_worlds, torch_device, torch.float32)
        self.pool = pool
        model = template.scene.model
        with wp.ScopedDevice(self.wp_device):
            self.model = mjw.put_model(model, batch_sizes={f: num_worlds for f in pool.model})
            self.data = mjw.put_data(model, template.scene.data, nworld=num_worlds, nconmax=config.nconmax,
                                     njmax=config.njmax)
        self.state = {f: wp.to_torch(getattr(self.data, f)) for f in STATE_FIELDS}
        self.model_fields = {f: wp.to_torch(getattr(self.model, f)) for f in pool.model}
        self.use_graph = config.cuda_graph and self.wp_device.is_cuda
        self.stream = wp.stream_from_torch(torch.cuda.current_stream(torch_device)) if self.wp_device.is_cuda else None
        self._graphs: dict[int, object] = {}
        self._readings = WorldReadings(self.layout, self.state["sensordata"], self.state["qpos"],
                                       self.state["mocap_pos"])

    def readings(self) -> WorldReadings:
        r = self._readings
        return WorldReadings(self.layout, r.sensordata, r.qpos, r.mocap_pos)

    def control(self, target_pos: torch.Tensor, target_mat: torch.Tensor, gripper_ctrl: torch.Tensor) -> None:
        self.state["mocap_pos"][:, self.target_mocap] = target_pos
        self.state["mocap_quat"][:, self.target_mocap] = matrix_to_quat(target_mat)
        self.state["ctrl"][:, self.gripper_actuator] = gripper_ctrl

    def step(self, nstep: int) -> None:
        if not self.use_graph:
            with self.wp.ScopedDevice(self.wp_device):
                for _ in range(nstep):
                    self.mjw.step(self.model, self.data)
            return
        with self.wp.ScopedStream(self.stream):
            if nstep not in self._graphs:
                self._load_kernels()
                with self.wp.ScopedCapture() as capture:  # records the launches; runs nothing yet
                    for _ in range(nstep):
                        self.mjw.step(self.model, self.data)
                self._graphs[nstep] = capture.graph
            self.wp.capture_launch(self._graphs[nstep])

    def start_episodes(self, worlds: np.ndarray, seeds: list[int | None],
                       generator: torch.Generator) -> EpisodeStarts:
        # Distinct starts for the worlds that start together, as far as the pool allows.
        if len(worlds) <= self.pool.size:
            picks = torch.randperm(self.pool.size, generator=generator, device=self.device)[: len(worlds)]
        else:
            picks = torch.randint(self.pool.size, (len(worlds),), generator=generator, device=self.device)
        return self.load(worlds, self.pool, picks)

    def load(self, worlds: np.ndarray, pool: StartPool, picks: torch.Tensor) -> EpisodeStarts:
        rows = torch.as_tensor(worlds, device=self.device)
        for field, values in pool.data.items():
            self.state[field][rows] = values[picks].to(self.device, self.dtype).reshape(self.state[field][rows].shape)
        for field, values in pool.model.items():
            target = self.model_fields[field]
            target[rows] = values[picks].to(self.device, self.dtype).reshape(target[rows].shape)
        return pool.episodes(picks)

    # --- internals -----------------------------------------------------------------------------------
    def _load_kernels(self) -> None:
        """One step with the state put back after it: Warp compiles and loads MuJoCo Warp's kernels at their
        first launch, which a graph capture cannot do."""
        saved = {f: v.clone() for f, v in self.state.items()}
        self.mjw.step(self.model, self.data)
        for field, values in saved.items():
            self.state[field].copy_(values)
