"""Behaviour cloning from demos (``robot-rl train-bc``), with action chunking: the policy a residual learner or a
jump-start guide builds on.

The network is the learner's observation encoder (state, or proprio + cameras: ``SACConfig``'s encoder fields)
and an MLP that predicts the next ``chunk`` actions, tanh-squashed into the action box, trained by masked MSE
against the demo's actions (steps past an episode's end are masked, not padded with guesses). At run time a
``ChunkedPolicy`` either executes each predicted chunk open-loop and predicts again when it is used up, or
predicts every step and acts on the temporal ensemble of every chunk that covers the step (ACT's exponential
weights, the oldest prediction weighted most), which smooths the seams between chunks.

A BC run folder holds ``config.json`` (its ``BCConfig``) and ``checkpoints/bc_policy.pt`` (network, observation
space, action size); ``--base-policy RUN_DIR`` loads it as a base.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import gymnasium as gym
import numpy as np
import torch
import tyro
from torch import nn

from robot_rl.agents.config import SACConfig
from robot_rl.agents.encoders import ObservationEncoder
from robot_rl.agents.networks import mlp
from robot_rl.data.augmentation import shift_observation
from robot_rl.data.demos import load_demos
from robot_rl.data.episode import Episode
from robot_rl.data.spaces import describe_space, space_from_description
from robot_rl.envs.contract import BASE_ACTION
from robot_rl.training.env_factory import EnvConfig, make_env_from_config, success_criterion
from robot_rl.training.evaluate import EVAL_SEED_BASE, EvalResult, evaluate
from robot_rl.training.run_dir import RunDir, read_checkpoint
from robot_rl.utils.atomic import atomic_write
from robot_rl.utils.config_io import from_jsonable, to_jsonable

BC_CHECKPOINT = "bc_policy.pt"
BC_FORMAT = 1


@dataclass(frozen=True)
class BCConfig:
    """``robot-rl train-bc``: behaviour cloning with action chunking from a demo folder."""

    demos: Path
    """Folder of recorded demos (``robot-rl record-demos``, or a run's ``demos/``)."""
    env: Annotated[EnvConfig, tyro.conf.arg(name="")] = field(default_factory=EnvConfig)
    """The env the policy is evaluated in (task, observations); the demos must have been recorded in it."""
    chunk: int = 4
    """Actions predicted per step (k); 1 is plain one-step BC."""
    execution: Literal["ensemble", "open_loop"] = "ensemble"
    """``ensemble``: predict every step, act on the weighted mean of all chunks covering it; ``open_loop``:
    execute each chunk whole, then predict the next."""
    ensemble_decay: float = 0.1
    """m of the ensemble weights exp(-m * i), i = 0 for the oldest prediction of a step (ACT: 0.01 at 50 Hz)."""
    hidden_dims: tuple[int, ...] = (256, 256)
    """Hidden widths of the MLP head."""
    encoder: SACConfig = field(default_factory=SACConfig)
    """Observation encoder settings (only the observation fields of the learner's config are used)."""
    steps: int = 3_000
    """Gradient steps."""
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 1e-4
    eval_episodes: int = 50
    """Deterministic evaluation episodes on held-out seeds after training (0: none; real arms: none)."""
    seed: int = 0
    run_dir: Path | None = None
    """Run folder; default ``runs/bc-<task>-<obs>-<time>``."""
    torch_threads: int = 2
    device: str = "cpu"

    def __post_init__(self) -> None:
        for name in ("chunk", "steps", "batch_size", "torch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"BCConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.eval_episodes < 0:
            raise ValueError(f"BCConfig.eval_episodes must be >= 0, got {self.eval_episodes}")
        if self.execution not in ("ensemble", "open_loop"):
            raise ValueError(f"BCConfig.execution must be 'ensemble' or 'open_loop', got {self.execution!r}")
        if not (math.isfinite(self.ensemble_decay) and self.ensemble_decay >= 0):
            raise ValueError(f"BCConfig.ensemble_decay must be a finite number >= 0, got {self.ensemble_decay}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"BCConfig.lr must be a finite number > 0, got {self.lr}")
        if self.env.base_policy is not None:
            raise ValueError(f"BCConfig.env.base_policy={self.env.base_policy!r}: behaviour cloning learns the demos' "
                             "actions, not a residual; drop --base-policy")
        if not Path(self.demos).exists():
            raise ValueError(f"BCConfig.demos: no such folder {self.demos}")


class ChunkNetwork(nn.Module):
    """Observations -> the next ``chunk`` actions, [B, chunk, A] in the action box."""

    def __init__(self, space: gym.spaces.Dict, action_space: gym.spaces.Box, chunk: int,
                 hidden_dims: tuple[int, ...], encoder: SACConfig) -> None:
        super().__init__()
        self.space, self.chunk, self.action_dim = space, chunk, int(action_space.shape[0])
        self.encoder = ObservationEncoder(space, encoder)
        self.head = mlp(self.encoder.out_dim, hidden_dims, chunk * self.action_dim)
        low, high = torch.as_tensor(action_space.low), torch.as_tensor(action_space.high)
        self.register_buffer("scale", ((high - low) / 2).float())
        self.register_buffer("bias", ((high + low) / 2).float())

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        out = torch.tanh(self.head(self.encoder(obs))).view(-1, self.chunk, self.action_dim)
        return out * self.scale + self.bias


class ChunkedPolicy:
    """Acting with a ``ChunkNetwork``: ``obs -> action`` one step at a time, ``reset()`` at episode starts."""

    def __init__(self, network: ChunkNetwork, execution: str, ensemble_decay: float) -> None:
        self.network = network.eval().requires_grad_(False)
        self.execution, self.decay = execution, ensemble_decay
        self.keys = sorted(network.space.spaces)
        self.reset()

    def reset(self) -> None:
        self.queue: deque[np.ndarray] = deque()  # open loop: the rest of the current chunk
        self.history: deque[np.ndarray] = deque(maxlen=self.network.chunk)  # ensemble: chunks, oldest first

    @torch.inference_mode()
    def predict(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """The network's chunk for one observation: [chunk, A]."""
        x = {k: torch.as_tensor(np.asarray(obs[k])).unsqueeze(0) for k in self.keys}
        return self.network(x)[0].numpy()

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        if self.execution == "open_loop":
            if not self.queue:
                self.queue.extend(self.predict(obs))
            return self.queue.popleft().astype(np.float32)
        self.history.append(self.predict(obs))
        return temporal_ensemble(list(self.history), self.decay)


def temporal_ensemble(chunks: list[np.ndarray], decay: float) -> np.ndarray:
    """The action for the current step from ``chunks`` [oldest ... newest], each [k, A] predicted one step after
    the previous: chunk j (of n) covers this step at its row n - 1 - j. Weights exp(-decay * j), normalised."""
    n = len(chunks)
    rows = np.stack([c[n - 1 - j] for j, c in enumerate(chunks)])
    weights = np.exp(-decay * np.arange(n))
    return (weights @ rows / weights.sum()).astype(np.float32)


def chunk_targets(episodes: list[Episode], chunk: int) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Per demo step: its observation, the next ``chunk`` demo actions [N, chunk, A] and a mask [N, chunk] that
    is False past the episode's end."""
    obs: dict[str, list[np.ndarray]] = {}
    targets, masks = [], []
    for ep in episodes:
        t, a = len(ep), ep.actions
        index = np.arange(t)[:, None] + np.arange(chunk)[None, :]
        masks.append(index < t)
        targets.append(a[np.minimum(index, t - 1)])
        for k, v in ep.observations.items():
            if k != BASE_ACTION:
                obs.setdefault(k, []).append(v[:t])
    return {k: np.concatenate(v) for k, v in obs.items()}, np.concatenate(targets), np.concatenate(masks)


def train_bc(config: BCConfig, say: Any = print) -> tuple[RunDir, EvalResult | None]:
    """Train, save the run folder, and evaluate on held-out seeds (when ``eval_episodes`` > 0)."""
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)
    episodes = load_demos(config.demos, task=None if config.env.env_factory else config.env.task)
    if not episodes:
        raise ValueError(f"train-bc: {config.demos} holds no demo episodes")
    env = make_env_from_config(config.env)
    space = env.observation_space
    obs, targets, masks = chunk_targets(episodes, config.chunk)
    if set(obs) != set(space.spaces):
        raise ValueError(f"train-bc: the demos' observation keys {sorted(obs)} are not the env's "
                         f"{sorted(space.spaces)} (record the demos with the same --task/--obs)")
    run = RunDir(config.run_dir or RunDir.default_path(f"bc-{config.env.task}", config.env.obs))
    run.create(config)  # claims the folder before the training time is spent
    network = ChunkNetwork(space, env.action_space, config.chunk, config.hidden_dims, config.encoder)
    network.to(config.device)
    data = {k: torch.as_tensor(v, device=config.device) for k, v in obs.items()}
    target = torch.as_tensor(targets, dtype=torch.float32, device=config.device)
    mask = torch.as_tensor(masks, dtype=torch.float32, device=config.device).unsqueeze(-1)
    network.encoder.update_normalizer(data)
    optimizer = torch.optim.AdamW(network.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    generator = torch.Generator(config.device).manual_seed(config.seed)
    augment = bool(network.encoder.image_keys) and config.encoder.image_augmentation
    n = len(target)
    say(f"train-bc: {len(episodes)} demos, {n} steps, chunk {config.chunk}, {config.steps} gradient steps")
    for step in range(1, config.steps + 1):
        idx = torch.randint(n, (min(config.batch_size, n),), generator=generator, device=config.device)
        batch = {k: v[idx] for k, v in data.items()}
        if augment:  # the learner's DrQ shifts: a few demos' images are otherwise memorised pixel by pixel
            batch = shift_observation(batch, config.encoder.augmentation_pad, generator, network.encoder.image_keys)
        err = (network(batch) - target[idx]).square() * mask[idx]
        loss = err.sum() / (mask[idx].sum() * network.action_dim)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % max(1, config.steps // 5) == 0 or step == config.steps:
            say(f"train-bc: step {step}, loss {loss.item():.5f}")

    state = {"format": BC_FORMAT, "network": network.state_dict(), "observation_space": describe_space(space),
             "action_low": env.action_space.low.tolist(), "action_high": env.action_space.high.tolist(),
             "chunk": config.chunk, "hidden_dims": list(config.hidden_dims), "encoder": to_jsonable(config.encoder),
             "execution": config.execution, "ensemble_decay": config.ensemble_decay}
    atomic_write(run.checkpoints / BC_CHECKPOINT, lambda f: torch.save(state, f))
    result = None
    if config.eval_episodes > 0:
        policy = ChunkedPolicy(network.cpu(), config.execution, config.ensemble_decay)
        result = evaluate(policy, env, config.eval_episodes, EVAL_SEED_BASE,
                          criterion=success_criterion(config.env, env), reset=policy.reset)
        run.log("eval", config.steps, result.metrics())
    run.close()
    return run, result


def is_bc_run(path: Path) -> bool:
    return (Path(path) / "checkpoints" / BC_CHECKPOINT).exists()


def load_bc_policy(path: Path) -> ChunkedPolicy:
    """The ``ChunkedPolicy`` of a BC run folder, on CPU, executed as the run was configured (everything it needs
    is in its checkpoint: a robot PC needs neither the demos nor the simulator)."""
    file = Path(path) / "checkpoints" / BC_CHECKPOINT
    state = read_checkpoint(file, entry="network")
    if state.get("format") != BC_FORMAT:
        raise ValueError(f"{file}: BC checkpoint format {state.get('format')!r}; this robot_rl reads format "
                         f"{BC_FORMAT}")
    space = space_from_description(state["observation_space"])
    low, high = np.asarray(state["action_low"], np.float32), np.asarray(state["action_high"], np.float32)
    encoder = from_jsonable(SACConfig, state["encoder"], where=f"{file} encoder")
    network = ChunkNetwork(space, gym.spaces.Box(low, high, dtype=np.float32), int(state["chunk"]),
                           tuple(state["hidden_dims"]), encoder)
    network.load_state_dict(state["network"])
    return ChunkedPolicy(network, state["execution"], float(state["ensemble_decay"]))


def bc_run_env(path: Path) -> EnvConfig:
    """The env a BC run folder's policy was trained for (its ``config.json``), to evaluate it on."""
    run = RunDir(Path(path))
    return from_jsonable(EnvConfig, run.read_config().get("env", {}), where=f"{run.path / 'config.json'} env")
