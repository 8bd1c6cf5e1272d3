"""``BatchedEnvConfig``: how many worlds, on which backend, stepped by how many threads."""

from __future__ import annotations

from dataclasses import dataclass

BACKENDS = ("mujoco-threads",)
"""Batched backends this installation can run. ``mujoco-threads``: one MuJoCo C world per MjData, stepped by a
pool of native threads (MuJoCo releases the GIL inside ``mj_step``)."""


@dataclass(frozen=True)
class BatchedEnvConfig:
    num_envs: int = 64
    backend: str = "mujoco-threads"
    num_threads: int | None = None
    """Worker threads stepping the worlds; None: one per CPU core this process may use (at most num_envs)."""
    autoreset: bool = True
    """Reset a world in the same step it ends (its last observation in ``infos["final_obs"]``). False: worlds
    that end wait for ``reset(options={"reset_mask": mask})``."""

    def __post_init__(self) -> None:
        if isinstance(self.num_envs, bool) or not isinstance(self.num_envs, int) or self.num_envs < 1:
            raise ValueError(f"BatchedEnvConfig.num_envs must be a positive integer, got {self.num_envs!r}")
        if self.backend not in BACKENDS:
            hint = (
                " (the MuJoCo Warp backend is not part of this version of robot_rl)"
                if self.backend in ("warp", "mujoco-warp")
                else ""
            )
            raise ValueError(
                f"BatchedEnvConfig.backend {self.backend!r} is unknown{hint}; available backends: {list(BACKENDS)}"
            )
        if self.num_threads is not None and (
            isinstance(self.num_threads, bool) or not isinstance(self.num_threads, int) or self.num_threads < 1
        ):
            raise ValueError(
                f"BatchedEnvConfig.num_threads must be a positive integer or None, got {self.num_threads!r}"
            )
