"""``BatchedEnvConfig``: how many worlds, on which backend; ``WarpConfig``: the MuJoCo Warp backend's settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from robot_rl.envs.action_history import check_action_history

BACKENDS = ("mujoco-threads", "warp")
"""``mujoco-threads``: MuJoCo C worlds stepped by native threads (MuJoCo releases the GIL inside ``mj_step``),
the fast path on a many-core CPU. ``warp``: MuJoCo Warp, every world in one kernel launch, on a CUDA GPU (or
Warp's CPU device, a correctness path); needs ``pip install 'robot_rl[warp]'``."""


def _positive_int(owner: str, name: str, value: object, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}.{name} must be a positive integer{' or None' if optional else ''}, got {value!r}")


@dataclass(frozen=True)
class WarpConfig:
    device: str = "auto"
    """Warp device: ``auto`` (the first CUDA GPU where there is one, else Warp's CPU device), ``cuda``,
    ``cuda:1``, ``cpu``."""
    start_pool: int = 1024
    """Episode starts are drawn from this many resets of the CPU env, made once at construction."""
    nconmax: int = 64
    """Contacts allocated per world (MuJoCo Warp's ``put_data`` takes it per world)."""
    njmax: int = 512
    """Constraint rows allocated per world."""
    cuda_graph: bool = True
    """On a GPU, replay the physics steps of a control step as one captured CUDA graph."""

    def __post_init__(self) -> None:
        for name in ("start_pool", "nconmax", "njmax"):
            _positive_int("WarpConfig", name, getattr(self, name))
        if not (self.device in ("auto", "cpu") or self.device.startswith("cuda")):
            raise ValueError(f"WarpConfig.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {self.device!r}")


@dataclass(frozen=True)
class BatchedEnvConfig:
    num_envs: int = 64
    backend: str = "mujoco-threads"
    num_threads: int | None = None
    """CPU threads stepping the worlds (``mujoco-threads``) or making the start pool (``warp``); None: one per
    CPU core this process may use."""
    autoreset: bool = True
    """Reset a world in the same step it ends (its last observation in ``infos["final_obs"]``). False: worlds
    that end wait for ``reset(options={"reset_mask": mask})``."""
    seed: int | None = None
    """Seeds the env's own draws (observation noise, the warp backend's start pool and picks) until a
    ``reset(seed=...)``; None: fresh entropy."""
    warp: WarpConfig = field(default_factory=WarpConfig)
    action_history: int = 0
    """Observe each world's last N actions (``previous_actions``, as ``robot_rl.envs.action_history`` adds it to
    a single env); 0: none."""

    def __post_init__(self) -> None:
        _positive_int("BatchedEnvConfig", "num_envs", self.num_envs)
        check_action_history(self.action_history, "BatchedEnvConfig.action_history")
        if self.backend not in BACKENDS:
            raise ValueError(
                f"BatchedEnvConfig.backend {self.backend!r} is unknown; available backends: {list(BACKENDS)}"
            )
        _positive_int("BatchedEnvConfig", "num_threads", self.num_threads, optional=True)
