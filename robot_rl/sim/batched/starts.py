"""``StartPool``: episode starts made by the CPU env's own ``reset``, kept as tensors for backends that cannot
run it per world.

A GPU backend steps every world at once, so it cannot let one world settle for the 200 physics steps a reset
takes while the others play on. Instead it copies a start from this pool: the complete state a CPU env is in
after ``reset`` (MuJoCo's integration state, the sensors' values, the impedance target, the gripper latch,
the wrist sensor's tare and, with domain randomisation, the model parameters the reset drew). The starts'
distribution is therefore the CPU env's exactly, over as many draws as the pool holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch

from robot_rl.sim.batched.physics import EpisodeStarts
from robot_rl.sim.env import ArmEnv

STATE_FIELDS = ("qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat", "qacc_warmstart", "sensordata")
"""What of ``MjData`` a start restores: the integration state (with the solver's warm start) and the sensors
the first observation reads."""

RANDOMISED_MODEL_FIELDS = ("geom_friction", "body_mass", "body_inertia", "body_invweight0", "body_subtreemass",
                           "dof_invweight0", "dof_damping", "actuator_gainprm", "actuator_biasprm")
"""What of ``MjModel`` the CPU env's domain randomisation changes at reset (``mj_setConst`` included) and a
start therefore carries when randomisation is on."""


def randomises_model(env: ArmEnv) -> bool:
    r = env.cfg.randomization
    return any(x is not None for x in (r.friction_scale, r.mass_scale, r.joint_damping_scale,
                                        r.actuator_gain_scale))


@dataclass
class Start:
    """One CPU env's state as a start: ``data`` and ``model`` fields (numpy) and its env-side state."""

    data: dict[str, np.ndarray]
    model: dict[str, np.ndarray]
    episode: EpisodeStarts

    @staticmethod
    def of(env: ArmEnv, with_model: bool) -> Start:
        d, m = env.scene.data, env.scene.model
        return Start(
            data={f: np.array(getattr(d, f), copy=True) for f in STATE_FIELDS},
            model={f: np.array(getattr(m, f), copy=True) for f in RANDOMISED_MODEL_FIELDS} if with_model else {},
            episode=EpisodeStarts.of_envs([env], torch.device("cpu"), torch.float64),
        )


@dataclass
class StartPool:
    """``size`` starts: ``data[field]`` and ``model[field]`` are (size, ...) tensors, ``episode`` the env-side
    state."""

    data: dict[str, torch.Tensor]
    model: dict[str, torch.Tensor]
    episode: EpisodeStarts

    @property
    def size(self) -> int:
        return len(self.episode.target_pos)

    @staticmethod
    def of(starts: Sequence[Start], device: torch.device, dtype: torch.dtype) -> StartPool:
        def stack(rows: list[np.ndarray]) -> torch.Tensor:
            return torch.as_tensor(np.stack(rows), dtype=dtype, device=device)

        episodes = [s.episode for s in starts]
        return StartPool(
            data={f: stack([s.data[f] for s in starts]) for f in starts[0].data},
            model={f: stack([s.model[f] for s in starts]) for f in starts[0].model},
            episode=EpisodeStarts(
                target_pos=torch.cat([e.target_pos for e in episodes]).to(device, dtype),
                target_mat=torch.cat([e.target_mat for e in episodes]).to(device, dtype),
                gripper_open=torch.cat([e.gripper_open for e in episodes]).to(device),
                wrench_bias=torch.cat([e.wrench_bias for e in episodes]).to(device, dtype),
            ),
        )

    @staticmethod
    def build(envs: Sequence[ArmEnv], size: int, seed: int, device: torch.device, dtype: torch.dtype) -> StartPool:
        """Reset the CPU envs ``size`` times in all (start ``j`` with seed ``seed + j``, so the pool does not
        depend on how many envs share the work), one thread per env."""
        with_model = randomises_model(envs[0])
        shares = np.array_split(np.arange(size), len(envs))

        def run(k: int) -> list[Start]:
            env, out = envs[k], []
            for j in shares[k]:
                env.reset(seed=seed + int(j))
                out.append(Start.of(env, with_model))
            return out

        with ThreadPoolExecutor(len(envs)) as pool:
            starts = [s for share in pool.map(run, range(len(envs))) for s in share]
        return StartPool.of(starts, device, dtype)

    def episodes(self, picks: torch.Tensor) -> EpisodeStarts:
        e = self.episode
        return EpisodeStarts(e.target_pos[picks], e.target_mat[picks], e.gripper_open[picks], e.wrench_bias[picks])
