"""The three loops that collect experience (``robot-rl train``, the gRPC actor, the ROS 2 policy actor) hand on
the same transitions for the same seeded env and policy: each is the shared ``step_env`` in a different loop."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.data.transition import EnvStep, Transition
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import EnvConfig, make_training_env
from robot_rl.training.loop import Trainer

STEPS = 40  # one reach episode


class SeededResets(gym.Wrapper):
    """Every loop resets with its own seed rule; here all of them get the same episode."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return self.env.reset(seed=12345)


def policy(obs: dict[str, np.ndarray], deterministic: bool = False) -> np.ndarray:
    """A fixed function of the observation (no randomness), so the action sequence depends on the env alone."""
    return np.tanh(3.0 * obs["state"][:7] + np.arange(7) * 0.1).astype(np.float32)


def as_rows(transitions: list[Transition]) -> list[tuple]:
    return [(t.obs["state"].tobytes(), t.obs["privileged"].tobytes(), t.action.tobytes(), t.reward,
             t.next_obs["state"].tobytes(), t.terminated, t.truncated, tuple(sorted(t.extras.items())))
            for t in transitions]


def single_process(tmp_path: Path) -> list[Transition]:
    trainer = Trainer(TrainConfig(env=EnvConfig(task="reach"), total_env_steps=STEPS, learning_starts=10 * STEPS,
                                  scripted_demos=0, eval_every=10 * STEPS, progress=False, torch_threads=1,
                                  run_dir=tmp_path / "run"))
    trainer.env = SeededResets(trainer.env)
    trainer.agent.act = policy  # type: ignore[method-assign]
    seen: list[Transition] = []
    add = trainer.router.add
    trainer.router.add = lambda t: (seen.append(t), add(t))  # type: ignore[method-assign]
    trainer.run()
    return seen


class RecordingClient:
    """The actor's link as far as its loop sees it: what it is handed, and an idle learner."""

    error = None
    stop_requested = hold = False

    def __init__(self) -> None:
        self.added: list[tuple[Transition, int]] = []

    def add(self, t: Transition, policy_version: int = 0) -> bool:
        self.added.append((t, policy_version))
        return True

    def end_episode(self) -> None: ...

    def drain(self, timeout_s: float) -> bool:
        return True

    def pending(self) -> int:
        return 0

    def close(self) -> None: ...

    def status(self) -> dict[str, Any]:
        return {}


class FixedPolicy:
    version = 1

    class active:
        act = staticmethod(policy)

    def maybe_swap(self) -> bool:
        return False


def grpc_actor() -> list[Transition]:
    pytest.importorskip("grpc")
    from robot_rl.distributed.actor import Actor
    from robot_rl.distributed.config import ActorConfig

    actor = Actor(ActorConfig(env=EnvConfig(task="reach"), max_steps=STEPS), token="t" * 16,
                  env=SeededResets(make_training_env("reach")))
    actor.client = RecordingClient()  # type: ignore[assignment]
    actor.policy = FixedPolicy()  # type: ignore[assignment]
    actor.run()
    out = []
    for t, version in actor.client.added:
        assert version == 1 and set(t.extras) == {"intervention", "grasp_penalty", "is_success"}
        out.append(dataclasses.replace(t, extras={k: v for k, v in t.extras.items() if k != "is_success"}))
    return out


def ros_actor() -> list[Transition]:
    from robot_rl.ros.actor import run_actor

    class Link:
        def __init__(self) -> None:
            self.steps: list[EnvStep] = []

        def add(self, step: EnvStep) -> None:
            self.steps.append(step)

        def sync(self, policy: Any) -> None: ...

        def close(self) -> None: ...

    class Policy:
        act = staticmethod(policy)

    link = Link()
    run_actor(SeededResets(make_training_env("reach")), Policy(), link, episodes=1)
    return [s.transition for s in link.steps]


def test_the_three_loops_hand_on_the_same_transitions(tmp_path: Path) -> None:
    one = single_process(tmp_path)
    assert len(one) == STEPS and one[-1].truncated
    assert as_rows(grpc_actor()) == as_rows(one)
    assert as_rows(ros_actor()) == as_rows(one)
