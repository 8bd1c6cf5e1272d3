"""Base policies: a frozen policy that proposes an action for every observation, which a residual learner
(``SACConfig.residual_scale``) corrects by a bounded amount.

A base is named by one string (``EnvConfig.base_policy``):

  ``expert``       the task's scripted expert (simulated robot_rl tasks; ``EnvConfig.base_noise`` degrades it)
  ``FILE.pt``      a TorchScript module: ``forward(obs: Dict[str, Tensor]) -> Tensor``, observations batched
                   as [1, ...] (images uint8 [1, H, W, 3]), the action [1, A] in the env's action units
  ``RUN_DIR``      a robot_rl run folder (``robot-rl train``, ``robot-rl train-bc``): its deterministic policy
  ``module:attr``  a Python callable ``obs -> action`` (a class is instantiated without arguments), so a policy
                   trained with another library can sit under the residual

A base with a ``reset()`` method has it called at every episode start (chunked policies forget their queue).
The base runs where the env runs (the actor's process; on a robot, the robot PC) and its action becomes the
``base_action`` observation (``BaseActionObservation``): the replay stores it once per frame, it crosses the
actor/learner link as any observation does, and the TD target finds the next state's base action in
``next_obs``. A base loaded from a file is pinned by its SHA-256 in the run's config (``pin_policies``),
so resuming, evaluating or deploying a run whose base file changed is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import gymnasium as gym
import numpy as np
import torch

from robot_rl.data.episode import Episode
from robot_rl.envs.contract import BASE_ACTION
from robot_rl.envs.wrappers import find_wrapper

if TYPE_CHECKING:
    from robot_rl.training.config import TrainConfig

EXPERT = "expert"


class BasePolicy(Protocol):
    """``obs -> action`` in the env's action units (a float32 [A] array), with a per-episode ``reset``."""

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray: ...

    def reset(self) -> None: ...


class ExpertBase:
    """The task's scripted expert, reading the simulator's state (so it runs only inside a sim env)."""

    def __init__(self, env: gym.Env, noise_std: float, seed: int) -> None:
        from robot_rl.sim import make_expert

        self.scene_env = env.unwrapped
        self.expert = make_expert(self.scene_env, noise_std=noise_std, seed=seed)  # type: ignore[arg-type]

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return self.expert.act(self.scene_env.scene)  # type: ignore[attr-defined]

    def reset(self) -> None:
        self.expert.reset()


class CallableBase:
    """Any ``obs -> action`` callable: a robot_rl policy or a user's function."""

    def __init__(self, act: Callable[[dict[str, np.ndarray]], Any], reset: Callable[[], None] | None = None) -> None:
        self.act, self._reset = act, reset

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(self.act(obs))

    def reset(self) -> None:
        if self._reset is not None:
            self._reset()


class TorchScriptBase:
    """A TorchScript module on CPU, its parameters frozen: observations batched as [1, ...] in, [1, A] out."""

    def __init__(self, path: Path) -> None:
        try:
            with warnings.catch_warnings():  # TorchScript is deprecated in torch >= 2.10, yet what users export
                warnings.simplefilter("ignore", DeprecationWarning)
                self.module = torch.jit.load(str(path), map_location="cpu")
        except RuntimeError as err:
            raise ValueError(f"base policy {path}: not a TorchScript file ({err})") from err
        self.module.eval()
        for p in self.module.parameters():
            p.requires_grad_(False)

    @torch.inference_mode()
    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        out = self.module({k: torch.as_tensor(np.asarray(v)).unsqueeze(0) for k, v in obs.items()})
        return out.reshape(-1).float().numpy()

    def reset(self) -> None:
        if hasattr(self.module, "reset"):
            self.module.reset()


def _run_folder(path: Path) -> BasePolicy:
    from robot_rl.training.bc import is_bc_run, load_bc_policy
    from robot_rl.training.loop import load_policy

    if is_bc_run(path):
        return load_bc_policy(path)

    policy, cfg = load_policy(path)
    if cfg.env.base_policy is not None:
        raise ValueError(f"base policy {path}: that run is itself a residual over {cfg.env.base_policy!r}; "
                         "use its base, or a run without one")
    if cfg.env.action_history:
        raise ValueError(f"base policy {path}: that run observes its last {cfg.env.action_history} actions "
                         "(--action-history), which a base proposing actions under a residual does not have; "
                         "continue it with --init-from instead, or use a run without an action history")
    policy.requires_grad_(False)
    return CallableBase(lambda obs: policy.act(obs, deterministic=True))


def _python_callable(name: str) -> CallableBase:
    module_name, _, attr = name.partition(":")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"base policy {name!r} cannot be imported: {err}") from err
    if isinstance(obj, type):
        obj = obj()
    if not callable(obj):
        raise ValueError(f"base policy {name!r} is a {type(obj).__name__}, not a callable obs -> action")
    reset = getattr(obj, "reset", None)
    return CallableBase(obj, reset if callable(reset) else None)


def _file_or_folder(spec: str) -> Path | None:
    """The file or run folder ``spec`` names, or None for ``expert`` and ``module:attr``."""
    if spec == EXPERT:
        return None
    path = Path(spec)
    if path.exists() or path.suffix in (".pt", ".ts") or "/" in spec:
        return path
    return None


def run_checkpoint(run: Path) -> Path:
    """The checkpoint a run folder's policy loads from: a BC run's, else ``robot-rl train``'s latest."""
    from robot_rl.training.bc import BC_CHECKPOINT, is_bc_run
    from robot_rl.training.core import CHECKPOINT

    return run / "checkpoints" / (BC_CHECKPOINT if is_bc_run(run) else CHECKPOINT)


def base_policy_digest(spec: str) -> str | None:
    """SHA-256 of the file a base is loaded from (a run folder: its config and latest checkpoint), None for a
    base that is code (the expert, ``module:attr``)."""
    path = _file_or_folder(spec)
    if path is None:
        return None
    if not path.exists():
        raise FileNotFoundError(f"base policy {spec!r}: no such file or run folder")
    files = [path] if path.is_file() else [path / "config.json", run_checkpoint(path)]
    digest = hashlib.sha256()
    for file in files:
        if not file.exists():
            raise FileNotFoundError(f"base policy {spec!r}: {file} is missing (not a finished run folder?)")
        digest.update(file.read_bytes())
    return digest.hexdigest()


def load_base_policy(spec: str, env: gym.Env, noise: float = 0.0, sha256: str | None = None,
                     seed: int = 0) -> BasePolicy:
    """The base ``spec`` names, for ``env``; ``noise`` degrades the expert; a pinned ``sha256`` that the file no
    longer matches is refused."""
    if spec != EXPERT and noise > 0:
        raise ValueError(f"base noise {noise} degrades the scripted expert only; the base is {spec!r}")
    if spec == EXPERT:
        if not hasattr(env.unwrapped, "scene"):
            raise ValueError(f"base policy 'expert': {env.unwrapped.__class__.__name__} has no scripted expert "
                             "(robot_rl's simulated tasks only)")
        return ExpertBase(env, noise, seed)
    if sha256 is not None:
        now = base_policy_digest(spec)
        if now != sha256:
            raise ValueError(f"base policy {spec!r} has changed since the run started (sha256 {sha256[:12]}..., "
                             f"now {str(now)[:12]}...): restore that file, or start a new run on the new base")
    path = _file_or_folder(spec)
    if path is None:
        return _python_callable(spec)
    if not path.exists():
        raise FileNotFoundError(f"base policy {spec!r}: no such file or run folder")
    return _run_folder(path) if path.is_dir() else TorchScriptBase(path)


def pin_policies(config: TrainConfig) -> TrainConfig:
    """A new run's config with the SHA-256 of its base and guide files recorded (a file already pinned stays)."""
    env, guide = config.env, config.guide
    if env.base_policy is not None and env.base_policy_sha256 is None:
        env = dataclasses.replace(env, base_policy_sha256=base_policy_digest(env.base_policy))
    if guide.policy is not None and guide.policy_sha256 is None:
        guide = dataclasses.replace(guide, policy_sha256=base_policy_digest(guide.policy))
    return dataclasses.replace(config, env=env, guide=guide)


class BaseActionObservation(gym.Wrapper):
    """Adds the base policy's action for each observation as ``obs["base_action"]`` (float32 [A], clipped into
    the action box); resets the base at every episode start. A base that returns the wrong shape or a
    non-finite value stops the run with its name: on a robot, no action is better than a guessed one."""

    def __init__(self, env: gym.Env, base: BasePolicy, name: str) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Dict) or BASE_ACTION in space.spaces:
            raise ValueError(f"base policy {name!r}: needs dict observations without a {BASE_ACTION!r} key, "
                             f"got {space}")
        box = env.action_space
        assert isinstance(box, gym.spaces.Box)
        self.base, self.name = base, name
        self.low, self.high = box.low.astype(np.float32), box.high.astype(np.float32)
        self.observation_space = gym.spaces.Dict(
            {**space.spaces, BASE_ACTION: gym.spaces.Box(self.low, self.high, box.shape, np.float32)})

    def reset(self, **kwargs: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self.base.reset()
        return self.with_base_action(obs), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self.with_base_action(obs), reward, terminated, truncated, info

    def with_base_action(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        action = np.asarray(self.base(obs), np.float32)
        if action.shape != self.low.shape or not np.all(np.isfinite(action)):
            raise ValueError(f"base policy {self.name!r} returned {action.tolist()}: expected finite values of "
                             f"shape {self.low.shape}")
        return {**obs, BASE_ACTION: np.clip(action, self.low, self.high)}


def base_of(env: gym.Env) -> BaseActionObservation | None:
    """The base-action wrapper inside ``env``'s wrapper chain, if any."""
    return find_wrapper(env, BaseActionObservation)


def with_base_actions(episode: Episode, wrapper: BaseActionObservation | None, where: str) -> Episode:
    """A demo recorded without a base gets the run's base action (``wrapper``'s) for each of its frames: the base
    is fed the episode's observations in order, as if it had watched the demo. One that has them, or any demo
    when the run has no base, is returned as is."""
    if wrapper is None or BASE_ACTION in episode.observations:
        return episode
    if isinstance(wrapper.base, ExpertBase):
        raise ValueError(f"{where}: these demos have no {BASE_ACTION!r} and the base policy 'expert' needs the "
                         "simulator's state to propose one; let the run record its demos (omit --demos)")
    wrapper.base.reset()
    frames = [{k: v[t] for k, v in episode.observations.items()} for t in range(len(episode) + 1)]
    actions = np.stack([wrapper.with_base_action(f)[BASE_ACTION] for f in frames])
    return dataclasses.replace(episode, observations={**episode.observations, BASE_ACTION: actions})
