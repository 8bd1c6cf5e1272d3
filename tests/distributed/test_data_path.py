"""The split's data path stores what one process stores: the same steps through ``ActorClient`` -> records ->
``Learner`` ingestion give the learner the replay (and demo buffer) that ``robot-rl train``'s step-by-step
insertion gives, transition for transition, n-step returns and discounts included; with several actors too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("grpc_tools")
pytest.importorskip("mujoco")

from robot_rl.data.replay import ReplayBuffer, ReplayConfig
from robot_rl.data.transition import EXTRAS, Transition
from robot_rl.distributed.client import ActorClient
from robot_rl.distributed.config import LearnerConfig, LinkConfig
from robot_rl.distributed.learner import Learner
from robot_rl.sim.registry import make_expert
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import EnvConfig, make_training_env
from robot_rl.training.hil import make_router

Step = tuple[dict, np.ndarray, float, dict, bool, bool, dict]


def pick_cube_steps(seed: int = 0) -> list[Step]:
    """Three pick_cube episodes: the expert to success (terminated), the policy with a human takeover in the
    middle (interventions), and random actions to the time limit (truncated)."""
    env = make_training_env("pick_cube")
    rng = np.random.default_rng(seed)
    steps: list[Step] = []
    for episode in range(3):
        obs, _ = env.reset(seed=100 + episode)
        expert = make_expert(env.unwrapped, noise_std=0.0, seed=seed)  # fresh per episode
        done, t = False, 0
        while not done:
            takeover = episode == 0 or (episode == 1 and 10 <= t < 25)
            if takeover:
                action = expert.act(env.unwrapped.scene)
            else:
                action = rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
            next_obs, reward, terminated, truncated, _ = env.step(action)
            extras = {"intervention": takeover, "grasp_penalty": 0.0}
            steps.append((obs, action, float(reward), next_obs, terminated, truncated, extras))
            obs, done, t = next_obs, terminated or truncated, t + 1
    env.close()
    assert steps[0][6]["intervention"] and any(s[4] for s in steps) and steps[-1][5], "episodes as described"
    return steps


def transitions(replay: ReplayBuffer) -> list[tuple]:
    """Every sampleable n-step transition, as exact plain values, in a canonical order."""
    batch = replay.gather(np.flatnonzero(replay._valid))
    rows = [
        (
            tuple(batch.obs["state"][i].tolist()),
            tuple(batch.action[i].tolist()),
            float(batch.reward[i]),
            float(batch.discount[i]),
            tuple(batch.next_obs["state"][i].tolist()),
        )
        for i in range(len(batch.reward))
    ]
    return sorted(rows)


def learner_and_one_process(tmp_path: Path, n_step: int) -> tuple[Learner, TrainConfig, ReplayBuffer, ReplayBuffer]:
    """A learner, and the online / demo buffers ``robot-rl train`` would fill, with the same settings."""
    train = TrainConfig(env=EnvConfig(task="pick_cube"), scripted_demos=0, replay=ReplayConfig(n_step=n_step),
                        run_dir=tmp_path / "run", progress=False)
    learner = Learner(LearnerConfig(train=train, evaluate=False), token="t" * 16)
    space, adim = learner.env.observation_space, learner.env.action_space.shape[0]
    online = ReplayBuffer(space, adim, train.replay, extras_keys=EXTRAS, seed=0)
    demo = ReplayBuffer(space, adim, train.replay, extras_keys=EXTRAS, seed=1)
    return learner, train, online, demo


@pytest.mark.parametrize("n_step", [1, 3])
def test_learner_replay_equals_one_process_replay(tmp_path: Path, n_step: int) -> None:
    steps = pick_cube_steps()
    learner, train, online, demo = learner_and_one_process(tmp_path, n_step)
    router = make_router(train, online, demo)  # one process: robot-rl train's router, step by step
    for step in steps:
        router.add(Transition(*step))
    router.flush()

    # The split: the actor's client encodes records; the learner ingests them as a push would deliver them.
    client = ActorClient(LinkConfig(), "actor-0", learner.spec, "t" * 16)
    for step in steps:
        client.add(Transition(*step), policy_version=1)
    raws = client.take_records()
    learner.ingestor.hello("actor-0", "session", 1)
    result = learner.ingestor.push("actor-0", "session", raws, {})
    assert result.accepted == len(raws) and result.duplicates == 0

    assert learner.env_steps == len(steps) and learner.episodes == 3
    assert len(learner.replay) == len(online) > 0
    assert transitions(learner.replay) == transitions(online)
    assert len(learner.demo_replay) == len(demo) > 0  # the takeover segments and the expert episode
    assert transitions(learner.demo_replay) == transitions(demo)
    for key, stored in online.arrays.items():  # step by step on both sides: even the record layout is the same
        np.testing.assert_array_equal(learner.replay.arrays[key], stored, err_msg=key)
    learner.close()


def test_two_actors_interleaved_give_one_process_transitions(tmp_path: Path) -> None:
    """Two actors' steps arriving interleaved, one push each step: every transition goes into replay as soon
    as it is complete (the learner's per-actor streams), and the replay holds exactly the transitions of both
    actors' episodes inserted one process-style, n-step windows included, none crossing between actors."""
    learner, train, online, demo = learner_and_one_process(tmp_path, n_step=3)
    router = make_router(train, online, demo)
    actors = {}
    for name, seed in (("actor-a", 0), ("actor-b", 1)):
        steps = pick_cube_steps(seed)
        for step in steps:
            router.add(Transition(*step))
        actors[name] = (steps, ActorClient(LinkConfig(), name, learner.spec, "t" * 16))
        learner.ingestor.hello(name, "session", 1)
    router.flush()

    inserted = []
    for i in range(max(len(s) for s, _ in actors.values())):
        for name, (steps, client) in actors.items():
            if i >= len(steps):
                continue
            client.add(Transition(*steps[i]), policy_version=1)
            learner.ingestor.push(name, "session", client.take_records(), {})
            inserted.append(learner.env_steps)
    # each step is in replay once the next record brings its next observation: one behind per open actor
    assert inserted[3] == 2 and learner.ingestor.open_steps() == 0
    assert learner.env_steps == sum(len(s) for s, _ in actors.values()) and learner.episodes == 6
    assert len(learner.replay) == len(online) > 0
    assert transitions(learner.replay) == transitions(online)
    assert transitions(learner.demo_replay) == transitions(demo)
    learner.close()


def test_a_learner_without_evaluations_moves_the_curriculum_on_its_actors_episodes(tmp_path: Path) -> None:
    """A real arm's learner cannot evaluate: the episodes that started at the published h are judged instead
    (as many as an evaluation has), h drops and goes out with the next weights; an episode that started on
    older weights (another h) does not count."""
    from robot_rl.training.guide import GuideConfig

    train = TrainConfig(env=EnvConfig(task="pick_cube"), scripted_demos=0, eval_episodes=2, run_dir=tmp_path / "run",
                        progress=False, guide=GuideConfig(policy="expert", stages=4))
    learner = Learner(LearnerConfig(train=train, evaluate=False), token="t" * 16)
    jump = learner.jump_start
    assert jump is not None and jump.h == jump.horizon == 80  # pick_cube's time limit
    learner._publish()  # version 1 carries h = 80
    episodes = pick_cube_steps()
    ends = [i for i, s in enumerate(episodes) if s[4] or s[5]]
    client = ActorClient(LinkConfig(), "actor-0", learner.spec, "t" * 16)
    learner.ingestor.hello("actor-0", "session", 1)

    def push(episode: int, version: int) -> None:
        first = 0 if episode == 0 else ends[episode - 1] + 1
        for i in range(first, ends[episode] + 1):
            obs, action, reward, next_obs, terminated, truncated, extras = episodes[i]
            extras = {**extras, "is_success": i == ends[episode]}  # every episode counts as a success
            client.add(Transition(obs, action, reward, next_obs, terminated, truncated, extras), version)
        learner.ingestor.push("actor-0", "session", client.take_records(), {})
        learner._log_events()

    push(0, version=1)
    assert jump.h == 80 and len(jump.outcomes) == 1
    push(1, version=1)  # the second at h = 80: judged (2/2 successes) and a stage down
    assert jump.h < 80 and jump.outcomes == []
    assert learner.weights_version == 2 and learner._h_of_version[2] == jump.h  # the actors' next h
    push(2, version=1)  # started on the old weights: not this h's
    assert jump.outcomes == []
    learner.close()


def test_paced_actors_wait_out_the_learners_first_update(tmp_path: Path) -> None:
    """The first update in a learner process compiles for tens of seconds; a simulated actor that follows the
    learner's pace must not run thousands of steps ahead meanwhile (sample efficiency would no longer compare
    with ``robot-rl train``)."""
    train = TrainConfig(env=EnvConfig(task="reach"), scripted_demos=0, run_dir=tmp_path / "run", progress=False)
    learner = Learner(LearnerConfig(train=train, evaluate=False, max_actor_lead=10), token="t" * 16)
    held: list[bool] = []
    learner.update = lambda sample=None: held.append(learner.server.hold)  # type: ignore[method-assign]
    learner._update()
    learner._updated_in_process = True  # what the real update sets
    learner.server.hold = False  # the run loop's pace check between updates
    learner._update()
    assert held == [True, False]
    learner.close()
