"""``TrainConfig``: everything ``robot-rl train`` takes, with its defaults in one place."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import tyro

from robot_rl.agents.config import SACConfig
from robot_rl.data.replay import ReplayConfig
from robot_rl.data.symmetry import SymmetryConfig
from robot_rl.teleop.base import TeleopName
from robot_rl.teleop.corrector import CorrectorConfig
from robot_rl.training.env_factory import EnvConfig
from robot_rl.training.guide import GuideConfig

PresetName = Literal["quickstart", "rlpd", "residual"]
ISAACLAB_BACKENDS = ("isaaclab", "mjlab")
"""``--backend`` values whose worlds are another simulator's tasks behind Isaac Lab's vectorised env API."""
PRESETS: dict[str, SACConfig] = {
    "quickstart": SACConfig(num_critics=2, hidden_dims=(128, 128), utd_ratio=8),
    "rlpd": SACConfig(),
    "residual": SACConfig(num_critics=2, hidden_dims=(128, 128), utd_ratio=8, residual_scale=0.2,
                          critic_warmup_updates=2_000),
}
"""The learner recipes a run is started from by name (``--preset``). ``quickstart``, the default, learns in
minutes on a laptop CPU (reach: ~95% deterministic success after 5k env steps, docs/benchmarks.md): 2 critics
of 128x128 at UTD 8. ``rlpd`` is the full RLPD/SERL recipe, ``SACConfig``'s own defaults: an ensemble of 10
critics of 256x256 at UTD 4 (a GPU machine is advised; it is also what runs with interventions want).
``residual`` is ``quickstart`` as a bounded residual over a frozen base policy (``--base-policy``): corrections
of at most 0.2 of the action's half-range, and 2,000 critic updates on the base's behaviour before the actor
moves (docs/architecture.md)."""


@dataclass(frozen=True)
class ParallelConfig:
    """Many simulated worlds at once (``robot_rl.sim.batched``) instead of one env: ``--num-envs N``."""

    num_envs: int = 0
    """0: one env (the classic loop, or ``--actors``). N > 0: N worlds of the batched simulator acting with
    one batched forward pass per step, their transitions in a replay on the learner's device (robot_rl tasks,
    state observations)."""
    backend: Literal["auto", "mujoco-threads", "warp", "isaaclab", "mjlab"] = "auto"
    """Where the worlds come from. robot_rl's tasks: ``warp`` (MuJoCo Warp), ``mujoco-threads`` (MuJoCo C on
    CPU threads), ``auto`` (Warp where a CUDA GPU and the ``warp`` extra are present, else threads). Other
    simulators' tasks through Isaac Lab's vectorised env API: ``isaaclab`` (``--task`` an Isaac Lab task id)
    or ``mjlab`` (an mjlab task id); they are evaluated on their own worlds (``robot_rl.envs.isaaclab``)."""
    obs_group: str | None = None
    """``isaaclab`` / ``mjlab``: the observation group the policy sees (None: ``policy``, else ``actor``)."""
    success_term: str | None = None
    """``isaaclab`` / ``mjlab``: the termination term that means the task was done (None: success unknown,
    evaluation reports the return)."""
    updates_per_step: int = 2
    """Agent updates (each ``utd_ratio`` critic steps and an actor step) per vector step of all worlds: with 16
    worlds and batches of 512, pick_cube reached 90% 4x sooner in wall time than one env (docs/benchmarks.md)."""
    num_threads: int | None = None
    """CPU threads stepping the worlds (mujoco-threads) or making Warp's start pool; None: one per core."""
    warp_device: str | None = None
    """MuJoCo Warp's device (``cuda``, ``cuda:1``, ``cpu``); None: ``WarpConfig``'s default."""
    start_pool: int | None = None
    """MuJoCo Warp: resets of the CPU env that episode starts are drawn from; None: ``WarpConfig``'s default."""

    def __post_init__(self) -> None:
        if self.backend not in ISAACLAB_BACKENDS and (self.obs_group or self.success_term):
            raise ValueError(f"ParallelConfig: --obs-group / --success-term name parts of an Isaac Lab API env; "
                             f"--backend {self.backend} has neither")
        if self.num_envs < 0 or self.updates_per_step < 1:
            raise ValueError(f"ParallelConfig: num_envs must be >= 0 and updates_per_step >= 1, got "
                             f"{self.num_envs} / {self.updates_per_step}")


@dataclass(frozen=True)
class TrainConfig:
    env: Annotated[EnvConfig, tyro.conf.arg(name="")] = field(default_factory=EnvConfig)
    """Task, observations, cameras and reward source."""
    parallel: Annotated[ParallelConfig, tyro.conf.arg(name="")] = field(default_factory=ParallelConfig)
    """``--num-envs N``: train on N simulated worlds at once (``robot_rl.training.parallel``)."""
    demos: Path | None = None
    """Folder of recorded demos (``robot-rl record-demos``). Without it, ``scripted_demos`` are recorded."""
    scripted_demos: int = 20
    """Successful demos recorded with the task's scripted expert (or ``demo_policy``) when ``demos`` is not
    given (0: no demos); failed attempts are retried, up to 10 per demo."""
    demo_policy: str | None = None
    """What records ``scripted_demos`` instead of the task's scripted expert, named as a base policy is
    (``module:attr`` controller, run folder, TorchScript file; ``robot_rl.training.base_policy``): how an env
    from another library gets demos from its user's own controller."""
    demo_noise: float = 0.1
    """Action noise std of the scripted expert (or ``demo_policy``) when recording demos."""
    total_env_steps: int = 5_000
    learning_starts: int = 300
    """Env steps before the first update (the replay must hold a few batches)."""
    random_steps: int = 0
    """Initial env steps with uniformly random actions (RLPD with demos needs none)."""
    batch_size: int = 256
    eval_every: int = 1_000
    """Env steps between deterministic evaluations on held-out seeds."""
    eval_episodes: int = 20
    checkpoint_every: int = 5_000
    seed: int = 0
    run_dir: Path | None = None
    """Run folder; default ``runs/<task>-<obs>-<time>``."""
    resume: Path | None = None
    """Continue the run in this folder from its latest checkpoint (config is read from the folder)."""
    init_from: Path | None = None
    """Start this new run with the agent of another run folder (or checkpoint file): every network, the critics
    and their targets, the temperature and the optimisers; not its replay or counters. The sim-to-real path:
    pretrain with ``--num-envs`` on the batched simulator, continue on one env, the actor/learner link or the
    ROS 2 path with demos and interventions (docs/sim_to_real.md). Agent settings must match the source's."""
    device: str = "cpu"
    torch_threads: int = 2
    """Intra-op threads; keep small when several processes share the CPU."""
    retained_heap_mb: int = 256
    """Freed heap the learner process keeps for reuse (glibc), so each update's buffers are not faulted in
    again: +16% updates/s for a 10-critic learner on CPU (docs/benchmarks.md). 0: the C library's defaults."""
    video: Literal["auto", "on", "off"] = "auto"
    """Evaluation video: ``auto`` records for pixel runs."""
    record_episodes: bool = False
    """Record every training episode (observations, executed actions, rewards, interventions, boundaries) as a
    rosbag2 recording (MCAP) under ``<run>/recordings/train-NNN``; ``robot-rl import-demos`` reads it back."""
    progress: bool = True
    """Show a progress bar."""
    actors: int = 0
    """0: one process. N > 0: one learner plus N local sim actor processes over loopback gRPC (needs the
    ``dist`` extra; see docs/distributed.md)."""
    preset: PresetName = "quickstart"
    """The named recipe the ``agent`` defaults come from (``PRESETS``): ``quickstart`` (CPU) or ``rlpd`` (the
    full RLPD recipe); ``--agent.*`` flags override single fields of it."""
    agent: SACConfig = field(default_factory=lambda: PRESETS["quickstart"])
    """Learner; the defaults are those of ``preset``."""
    replay: ReplayConfig = field(default_factory=lambda: ReplayConfig(n_step=3))
    # --- human in the loop (docs/human_in_the_loop.md) ---
    teleop: TeleopName = "none"
    """Interventions from this device while training; ``scripted``: the task's expert corrects the policy
    when it drifts (simulation; with ``actors`` each sim actor gets its own corrector)."""
    intervention_mode: Literal["hil", "rlif"] = "hil"
    """``hil``: task reward, interventions also go to the demo buffer (HIL-SERL). ``rlif``: no task reward;
    -1 on the last policy step before each takeover (RLIF)."""
    interventions_to_demos: bool = True
    """Also store intervention transitions in the demo buffer (sampled 50/50 with online data)."""
    corrector: CorrectorConfig = field(default_factory=CorrectorConfig)
    """The scripted corrector (``--teleop scripted``)."""
    guide: GuideConfig = field(default_factory=GuideConfig)
    """Jump-start RL: a guide policy acts for the first h steps of each training episode (``--guide.policy``)."""
    symmetry: SymmetryConfig = field(default_factory=SymmetryConfig)
    """Symmetry augmentation by the task's declared group (``--symmetry.mode random|copies``)."""

    @classmethod
    def from_preset(cls, preset: str, **fields: object) -> TrainConfig:
        """A config whose agent is ``PRESETS[preset]`` (unless ``fields`` give one)."""
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; presets: {sorted(PRESETS)}")
        return cls(**{"preset": preset, "agent": PRESETS[preset], **fields})  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        for name in ("total_env_steps", "batch_size", "eval_every", "eval_episodes", "checkpoint_every"):
            if getattr(self, name) <= 0:
                raise ValueError(f"TrainConfig.{name} must be > 0, got {getattr(self, name)}")
        for name in ("learning_starts", "random_steps", "scripted_demos", "torch_threads", "actors",
                     "retained_heap_mb"):
            if getattr(self, name) < 0:
                raise ValueError(f"TrainConfig.{name} must be >= 0, got {getattr(self, name)}")
        if self.demo_noise < 0:
            raise ValueError(f"TrainConfig.demo_noise must be >= 0, got {self.demo_noise}")
        if self.demos is not None and not Path(self.demos).exists():
            raise ValueError(f"TrainConfig.demos: no such folder {self.demos}")
        if self.guide.policy is None and (self.guide.noise > 0 or self.guide.policy_sha256 is not None):
            raise ValueError("TrainConfig.guide: --guide.noise is set without a guide (--guide.policy)")
        if self.parallel.num_envs > 0:
            self._check_parallel()
        if self.init_from is not None and not Path(self.init_from).exists():
            raise ValueError(f"TrainConfig.init_from: no such run folder or checkpoint {self.init_from}")
        if self.agent.anchor_weight > 0 and self.init_from is None and self.resume is None:
            raise ValueError(f"--agent.anchor-weight {self.agent.anchor_weight} holds the actor near the policy a "
                             "run starts from: give that run with --init-from RUN (or set it to 0)")
        if self.record_episodes and self.actors > 0:
            raise ValueError(f"TrainConfig.record_episodes records the single-process loop; drop --actors "
                             f"{self.actors}, or record the policy with `robot-rl eval RUN --record DIR`")
        if self.teleop not in ("none", "scripted") and self.actors > 0:
            raise ValueError(
                f"TrainConfig.teleop={self.teleop!r} cannot drive {self.actors} actor processes; with --actors "
                "use 'scripted', or run `robot-rl actor --teleop DEVICE` where the device is"
            )

    def _check_parallel(self) -> None:
        """What the many-worlds trainer does not do, refused with the flag to drop."""
        n = self.parallel.num_envs
        refused = [
            (self.actors > 0, f"--actors {self.actors}"),
            (self.teleop != "none", f"--teleop {self.teleop}"),
            (self.guide.policy is not None, f"--guide.policy {self.guide.policy!r}"),
            (self.env.obs != "state", f"--obs {self.env.obs} (the batched simulator renders no cameras)"),
            (self.env.env_factory is not None, f"--env-factory {self.env.env_factory!r}"),
            (self.env.base_policy is not None, f"--base-policy {self.env.base_policy!r}"),
            (self.env.reward_classifier is not None, f"--reward-classifier {self.env.reward_classifier}"),
            (self.record_episodes, "--record-episodes (record its policy with `robot-rl eval RUN --record DIR`)"),
        ]
        for bad, flag in refused:
            if bad:
                raise ValueError(f"TrainConfig: --num-envs {n} trains simulated worlds in one process; it does not "
                                 f"take {flag}")
