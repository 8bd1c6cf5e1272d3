"""ReplayBuffer: frame de-duplication, wrap-around, n-step maths, determinism, validation, checkpoints."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from robot_rl.data.episode import Episode
from robot_rl.data.replay import ReplayBuffer, ReplayConfig
from robot_rl.data.transition import EXTRAS

H = W = 8
A = 2
SPACE = gym.spaces.Dict(
    {
        "state": gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
        "images/wrist": gym.spaces.Box(0, 255, (H, W, 3), np.uint8),
    }
)

NO_EXTRAS = {"intervention": False, "grasp_penalty": 0.0}


def obs_of(ep: int, t: int) -> dict[str, np.ndarray]:
    """A frame that encodes (episode id, time step): state = [ep, t, 0], image filled with t."""
    return {
        "state": np.array([ep, t, 0.0], np.float32),
        "images/wrist": np.full((H, W, 3), t % 256, np.uint8),
    }


def make_episode(ep: int, rewards: list[float], terminated: bool, truncated: bool = False,
                 intervention: list[bool] | None = None) -> Episode:
    """Episode ``ep``; the policy acts throughout unless ``intervention`` flags the steps a human took."""
    t = len(rewards)
    flags = np.zeros(t, np.bool_) if intervention is None else np.asarray(intervention, np.bool_)
    frames = [obs_of(ep, i) for i in range(t + 1)]
    return Episode(
        observations={k: np.stack([f[k] for f in frames]) for k in SPACE.spaces},
        actions=np.stack([np.full(A, 0.01 * i + ep, np.float32) for i in range(t)]).reshape(t, A),
        rewards=np.asarray(rewards, np.float32),
        terminated=terminated,
        truncated=truncated,
        infos={"intervention": flags, "grasp_penalty": -0.1 * np.arange(t, dtype=np.float32)},
    )


def add_steps(buf: ReplayBuffer, episode: Episode, ep: int, close: bool = True) -> None:
    """Insert ``episode`` step by step as an actor would."""
    t = len(episode)
    for i in range(t):
        last = close and i == t - 1
        buf.add(
            obs_of(ep, i),
            episode.actions[i],
            float(episode.rewards[i]),
            obs_of(ep, i + 1),
            terminated=last and episode.terminated,
            truncated=last and not episode.terminated,
            extras={k: episode.infos[k][i] for k in EXTRAS},
        )


def make_buffer(capacity: int = 64, n_step: int = 1, gamma: float = 0.5, seed: int = 0) -> ReplayBuffer:
    return ReplayBuffer(SPACE, A, ReplayConfig(capacity, n_step, gamma), extras_keys=EXTRAS, seed=seed)


def all_transitions(buf: ReplayBuffer):
    """Every sampleable transition, in record order: (obs state [N, 3], next state [N, 3], batch)."""
    starts = np.flatnonzero(buf._valid)
    batch = buf.gather(starts)
    return batch.obs["state"].numpy(), batch.next_obs["state"].numpy(), batch


def test_frames_are_stored_once() -> None:
    buf = make_buffer(capacity=100)
    add_steps(buf, make_episode(0, [0.0] * 10, terminated=True), ep=0)
    images = buf.arrays["frames/images/wrist"]
    assert images.shape == (100, H, W, 3) and images.dtype == np.uint8
    assert sorted(k for k in buf.arrays if k.startswith("frames/")) == ["frames/images/wrist", "frames/state"]
    assert buf.num_records == 11  # 10 steps + 1 final frame, not 20
    assert len(buf) == 10
    image_bytes = sum(v.nbytes for k, v in buf.arrays.items() if "images" in k)
    assert image_bytes == 100 * H * W * 3  # one frame per record: no separate next_obs storage
    batch = buf.sample(32)
    assert batch.obs["images/wrist"].dtype == torch.uint8
    assert torch.equal(batch.next_obs["state"][:, 1], batch.obs["state"][:, 1] + 1)


def test_per_step_and_episode_insertion_agree() -> None:
    a, b = make_buffer(), make_buffer()
    eps = [make_episode(0, [1, 2, 3], True), make_episode(1, [4, 5], False, True)]
    for i, e in enumerate(eps):
        add_steps(a, e, i)
        b.add_episode(e)
    for key, arr in a.arrays.items():
        np.testing.assert_array_equal(arr, b.arrays[key], err_msg=key)
    assert len(a) == len(b) == 5


@pytest.mark.parametrize("terminated", [True, False])
def test_n_step_returns_at_episode_end(terminated: bool) -> None:
    buf = make_buffer(n_step=3, gamma=0.5)
    buf.add_episode(make_episode(0, [1, 2, 3, 4, 5], terminated, truncated=not terminated))
    s, ns, batch = all_transitions(buf)
    np.testing.assert_array_equal(s[:, 1], [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(ns[:, 1], [3, 4, 5, 5, 5])  # n' = 3, 3, 3, 2, 1
    np.testing.assert_allclose(batch.reward.numpy(), [2.75, 4.5, 6.25, 6.5, 5.0])
    tail = [0.0, 0.0, 0.0] if terminated else [0.125, 0.25, 0.5]
    np.testing.assert_allclose(batch.discount.numpy(), [0.125, 0.125, *tail])


def test_n_step_window_stops_where_the_actor_changes() -> None:
    """Policy, policy, human (takeover), human, policy (hand-back), terminal: n = 3, gamma = 0.5. No window
    mixes actors, so a policy step is never credited with the corrections after a takeover."""
    buf = make_buffer(n_step=3, gamma=0.5)
    flags = [False, False, True, True, False]
    buf.add_episode(make_episode(0, [1, 2, 3, 4, 5], terminated=True, intervention=flags))
    s, ns, batch = all_transitions(buf)
    np.testing.assert_array_equal(s[:, 1], [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(ns[:, 1], [2, 2, 4, 4, 5])  # n' = 2, 1 | 2, 1 | 1 (terminal)
    np.testing.assert_allclose(batch.reward.numpy(), [1 + 0.5 * 2, 2, 3 + 0.5 * 4, 4, 5])
    np.testing.assert_allclose(batch.discount.numpy(), [0.25, 0.5, 0.25, 0.5, 0.0])
    np.testing.assert_array_equal(batch.extras["intervention"].numpy(), flags)


def test_n_step_one() -> None:
    buf = make_buffer(n_step=1, gamma=0.9)
    buf.add_episode(make_episode(0, [1, 2, 3], terminated=True))
    buf.add_episode(make_episode(1, [4, 5], terminated=False, truncated=True))
    s, ns, batch = all_transitions(buf)
    np.testing.assert_array_equal(ns[:, 1], s[:, 1] + 1)
    np.testing.assert_array_equal(ns[:, 0], s[:, 0])
    np.testing.assert_allclose(batch.reward.numpy(), [1, 2, 3, 4, 5])
    np.testing.assert_allclose(batch.discount.numpy(), [0.9, 0.9, 0.0, 0.9, 0.9])


def test_open_episode_waits_for_full_window_then_truncates() -> None:
    buf = make_buffer(n_step=3, gamma=0.5)
    add_steps(buf, make_episode(0, [1, 2, 3, 4, 5], terminated=False), ep=0, close=False)
    # obs_5 is still pending (the next step's obs), so steps 2..4 wait until their 3-step window is stored
    assert buf.episode_open and len(buf) == 2
    s, ns, batch = all_transitions(buf)
    np.testing.assert_array_equal(s[:, 1], [0, 1])
    np.testing.assert_array_equal(ns[:, 1], [3, 4])
    np.testing.assert_allclose(batch.discount.numpy(), [0.125] * 2)
    assert buf.end_episode() and not buf.end_episode()
    _, ns, batch = all_transitions(buf)
    assert len(buf) == 5
    np.testing.assert_array_equal(ns[:, 1], [3, 4, 5, 5, 5])
    np.testing.assert_allclose(batch.discount.numpy(), [0.125, 0.125, 0.125, 0.25, 0.5])


def test_open_episode_must_continue() -> None:
    buf = make_buffer()
    buf.add(obs_of(0, 0), np.zeros(A), 0.0, obs_of(0, 1), False, False, NO_EXTRAS)
    with pytest.raises(ValueError, match="end_episode"):
        buf.add(obs_of(1, 0), np.zeros(A), 0.0, obs_of(1, 1), False, False, NO_EXTRAS)
    assert buf.num_records == 1


def test_streams_interleave_without_mixing_episodes() -> None:
    """Three actors' episodes arrive step by step, interleaved, beside whole demo episodes: the transitions
    are exactly those of the same episodes inserted one after another, and each is sampleable as soon as its
    n-step window is in."""
    eps = [
        make_episode(0, [1, 2, 3, 4, 5], terminated=True, intervention=[False, True, True, False, False]),
        make_episode(1, [6, 7, 8], terminated=False, truncated=True),
        make_episode(2, [9, 10, 11, 12], terminated=True),
    ]
    sequential = make_buffer(n_step=3, gamma=0.5)
    for i, e in enumerate(eps):
        add_steps(sequential, e, i)
    interleaved = make_buffer(n_step=3, gamma=0.5)
    streams = [interleaved.stream(f"actor-{i}") for i in range(3)]
    cursor = [0, 0, 0]
    order = [0, 1, 2, 2, 0, 1, 1, 2, 0, 0, 2, 0]  # 5 + 3 + 4 steps
    for n, i in enumerate(order):
        t, e = cursor[i], eps[i]
        last = t == len(e) - 1
        streams[i].add(obs_of(i, t), e.actions[t], float(e.rewards[t]), obs_of(i, t + 1), last and e.terminated,
                       last and e.truncated, {k: e.infos[k][t] for k in EXTRAS})
        cursor[i] += 1
        if i == 2 and t == 1:  # a whole episode in between, while all three are open
            assert interleaved.open_streams == ["actor-0", "actor-1", "actor-2"]
            interleaved.add_episode(make_episode(7, [0.5, 0.5], terminated=True))
            sequential.add_episode(make_episode(7, [0.5, 0.5], terminated=True))
        if n == 4:  # actor 0's step 1 is in, so is the takeover frame that ends step 0's window
            s, _, _ = all_transitions(interleaved)
            assert {(int(ep), int(t)) for ep, t in s[:, :2]} == {(7, 0), (7, 1), (0, 0)}
    assert not interleaved.episode_open

    def rows(buf: ReplayBuffer) -> list[tuple]:
        s, ns, batch = all_transitions(buf)
        return sorted(zip(map(tuple, s.tolist()), map(tuple, ns.tolist()), batch.reward.tolist(),
                          batch.discount.tolist(), batch.action.numpy().round(6).tolist().__iter__()))

    assert len(interleaved) == len(sequential) == 14
    assert rows(interleaved) == rows(sequential)
    _, ns, batch = all_transitions(interleaved)
    np.testing.assert_array_equal(batch.next_obs["images/wrist"][:, 0, 0, 0].numpy(), ns[:, 1])


def test_a_stream_ends_by_itself() -> None:
    buf = make_buffer(n_step=2)
    a, b = buf.stream("a"), buf.stream("b")
    a.add(obs_of(0, 0), np.zeros(A), 1.0, obs_of(0, 1), False, False, NO_EXTRAS)
    b.add(obs_of(1, 0), np.zeros(A), 2.0, obs_of(1, 1), False, False, NO_EXTRAS)
    assert a.end_episode() and not a.end_episode() and buf.open_streams == ["b"]
    s, ns, batch = all_transitions(buf)
    np.testing.assert_array_equal(s[:, :2], [[0, 0]])  # b's step waits for its window
    np.testing.assert_array_equal(ns[:, :2], [[0, 1]])
    np.testing.assert_allclose(batch.discount.numpy(), [0.5])  # truncated: bootstrapped after 1 step


Record = tuple[int, int, bool, bool]  # (episode, t, is_step, terminated)


def reference_valid(records: list[Record], capacity: int, n: int) -> set[tuple[int, int]]:
    """Brute force: (episode, t) of every start whose n-step window and next frame are still in the ring."""
    total = len(records)
    out = set()
    for g in range(max(0, total - capacity), total):
        ep, t, is_step, _ = records[g]
        if not is_step:
            continue
        k = 0
        while True:
            k += 1
            if records[g + k - 1][3] or k == n or g + k >= total or not records[g + k][2]:
                break
        if g + k < total:  # the next frame of the window was written (not pending)
            out.add((ep, t))
    return out


@pytest.mark.parametrize("n_step", [1, 3])
def test_wrap_around_never_mixes_episodes(n_step: int) -> None:
    capacity = 11
    buf = make_buffer(capacity=capacity, n_step=n_step, gamma=0.9)
    records: list[Record] = []  # every record ever written
    rng = np.random.default_rng(1)
    for ep in range(40):
        length = int(rng.integers(1, 16))  # some episodes are longer than the ring
        terminated = bool(rng.integers(2))
        episode = make_episode(ep, list(rng.normal(size=length)), terminated, not terminated)
        per_step = ep % 2 == 0
        add_steps(buf, episode, ep) if per_step else buf.add_episode(episode)
        records += [(ep, t, True, terminated and t == length - 1) for t in range(length)]
        records.append((ep, length, False, False))
        s, ns, batch = all_transitions(buf)
        assert {(int(a), int(b)) for a, b in s[:, :2]} == reference_valid(records, capacity, n_step)
        assert np.array_equal(s[:, 0], ns[:, 0]), "obs and next_obs from different episodes"
        n_eff = ns[:, 1] - s[:, 1]
        assert np.all((n_eff >= 1) & (n_eff <= n_step))
        np.testing.assert_array_equal(batch.next_obs["images/wrist"][:, 0, 0, 0].numpy(), ns[:, 1])
        assert len(buf) == len(s)
    assert buf.num_records == capacity


def test_wrap_around_with_open_long_episode() -> None:
    buf = make_buffer(capacity=8, n_step=2)
    episode = make_episode(0, list(range(20)), terminated=True)
    add_steps(buf, episode, ep=0, close=False)  # 20 steps into 8 records, episode still open
    s, ns, _ = all_transitions(buf)
    # the ring holds obs_12..obs_19; obs_20 is pending, so steps 18 and 19 wait for their 2-step window
    order = np.argsort(s[:, 1])
    np.testing.assert_array_equal(s[order, 1], [12, 13, 14, 15, 16, 17])
    np.testing.assert_array_equal(ns[order, 1], s[order, 1] + 2)


@pytest.mark.parametrize("n_step", [1, 3])
def test_wrap_around_with_interleaved_streams(n_step: int) -> None:
    """Random interleavings of three streams and whole episodes in a small ring: exactly the starts whose
    window is written and still in the ring are valid, and no window crosses into another episode."""
    capacity = 13
    buf = make_buffer(capacity=capacity, n_step=n_step, gamma=0.9)
    rng = np.random.default_rng(2)
    serial: dict[tuple[int, int], int] = {}  # (episode, t) -> write serial of its record
    ends: dict[int, tuple[int, bool]] = {}  # episode -> (length, terminated), once closed
    total = 0
    open_eps: dict[int, tuple[Episode, int]] = {}  # stream -> (episode, next t)
    next_ep = 0
    for _ in range(300):
        stream = int(rng.integers(4))
        if stream == 3:  # a whole episode
            length, term = int(rng.integers(1, 6)), bool(rng.integers(2))
            buf.add_episode(make_episode(next_ep, list(rng.normal(size=length)), term, not term))
            for t in range(length + 1):
                serial[(next_ep, t)] = total
                total += 1
            ends[next_ep] = (length, term)
            next_ep += 1
        else:
            if stream not in open_eps:
                length, term = int(rng.integers(1, 12)), bool(rng.integers(2))
                open_eps[stream] = (make_episode(next_ep, list(rng.normal(size=length)), term, not term), 0)
                next_ep += 1
            episode, t = open_eps[stream]
            ep = int(episode.observations["state"][0, 0])
            last = t == len(episode) - 1
            buf.add(obs_of(ep, t), episode.actions[t], float(episode.rewards[t]), obs_of(ep, t + 1),
                    last and episode.terminated, last and episode.truncated,
                    {k: episode.infos[k][t] for k in EXTRAS}, stream=f"s{stream}")
            serial[(ep, t)] = total
            total += 1
            if last:
                serial[(ep, t + 1)] = total
                total += 1
                ends[ep] = (len(episode), episode.terminated)
                del open_eps[stream]
            else:
                open_eps[stream] = (episode, t + 1)

        expected = set()
        for (ep, t), g in serial.items():
            length, term = ends.get(ep, (None, False))
            if g < total - capacity or t == length:  # overwritten, or a final record
                continue
            k = 1
            while k < n_step and not (length is not None and (t + k == length)):
                k += 1
            if length is not None and t + k > length:
                k = length - t
            if term and t + k >= length:
                k = length - t
            if (ep, t + k) in serial:  # the window's next frame is written
                expected.add((ep, t))
        s, ns, _ = all_transitions(buf)
        assert {(int(a), int(b)) for a, b in s[:, :2]} == expected
        assert np.array_equal(s[:, 0], ns[:, 0]), "obs and next_obs from different episodes"
        n_eff = ns[:, 1] - s[:, 1]
        assert np.all((n_eff >= 1) & (n_eff <= n_step))


def test_sampling_is_deterministic_per_seed() -> None:
    bufs = [make_buffer(seed=s) for s in (7, 7, 8)]
    for b in bufs:
        for ep in range(4):
            b.add_episode(make_episode(ep, [1.0] * 6, terminated=ep % 2 == 0, truncated=ep % 2 == 1))
    x, y, z = (b.sample(64) for b in bufs)
    assert torch.equal(x.obs["state"], y.obs["state"]) and torch.equal(x.reward, y.reward)
    assert not torch.equal(x.obs["state"], z.obs["state"])


def test_batch_shapes_dtypes_and_extras() -> None:
    buf = make_buffer(n_step=2)
    buf.add_episode(make_episode(0, [1, 2, 3, 4], terminated=True, intervention=[True, False, True, False]))
    batch = buf.sample(16, device="cpu")
    assert len(batch) == 16
    assert batch.obs["state"].shape == (16, 3) and batch.obs["state"].dtype == torch.float32
    assert batch.next_obs["images/wrist"].shape == (16, H, W, 3)
    assert batch.action.shape == (16, A) and batch.reward.shape == (16,) and batch.discount.shape == (16,)
    t = batch.obs["state"][:, 1].long()
    assert batch.extras["intervention"].dtype == torch.bool
    assert torch.equal(batch.extras["intervention"], t % 2 == 0)
    assert torch.allclose(batch.extras["grasp_penalty"], -0.1 * t.float())


def test_empty_buffer_sample_raises() -> None:
    with pytest.raises(ValueError, match="no sampleable"):
        make_buffer().sample(4)


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda o: o.pop("state"), "missing \\['state'\\]"),
        (lambda o: o.update(state=np.zeros(4, np.float32)), "'state'"),
        (lambda o: o.update({"images/wrist": np.zeros((H, W, 3), np.float32)}), "'images/wrist'"),
        (lambda o: o.update(state=np.array([np.nan, 0, 0], np.float32)), "'state'.*NaN"),
    ],
)
def test_bad_observation_raises_naming_key(mutate, match: str) -> None:
    buf = make_buffer()
    bad = obs_of(0, 0)
    mutate(bad)
    extras = {"intervention": False, "grasp_penalty": 0.0}
    with pytest.raises(ValueError, match=match):
        buf.add(bad, np.zeros(A), 0.0, obs_of(0, 1), False, False, extras)
    with pytest.raises(ValueError, match=match):
        buf.add(obs_of(0, 0), np.zeros(A), 0.0, bad, False, False, extras)
    assert buf.num_records == 0 and len(buf) == 0


def test_bad_action_reward_extras_raise() -> None:
    buf = make_buffer()
    o, o1 = obs_of(0, 0), obs_of(0, 1)
    ok = {"intervention": False, "grasp_penalty": 0.0}
    with pytest.raises(ValueError, match="action"):
        buf.add(o, np.zeros(A + 1), 0.0, o1, False, False, ok)
    with pytest.raises(ValueError, match="action"):
        buf.add(o, np.array([np.nan, 0.0]), 0.0, o1, False, False, ok)
    with pytest.raises(ValueError, match="reward"):
        buf.add(o, np.zeros(A), float("inf"), o1, False, False, ok)
    with pytest.raises(ValueError, match="missing \\['grasp_penalty'\\]"):
        buf.add(o, np.zeros(A), 0.0, o1, False, False, {"intervention": True})
    with pytest.raises(ValueError, match="unknown \\['foo'\\]"):
        buf.add(o, np.zeros(A), 0.0, o1, False, False, {**ok, "foo": 1.0})
    episode = make_episode(0, [1.0], True)
    del episode.infos["grasp_penalty"]
    with pytest.raises(ValueError, match="grasp_penalty"):
        buf.add_episode(episode)
    assert buf.num_records == 0


def test_save_load_round_trip(tmp_path) -> None:
    buf = make_buffer(capacity=16, n_step=3, seed=3)
    for ep in range(5):  # wraps the ring
        buf.add_episode(make_episode(ep, [float(ep)] * 4, terminated=ep % 2 == 0, truncated=ep % 2 == 1))
    add_steps(buf, make_episode(9, [1.0] * 4, False), ep=9, close=False)  # an open episode
    buf.sample(8)  # advance the RNG
    path = buf.save(tmp_path / "replay.npz")
    expected = buf.sample(32)

    other = make_buffer(capacity=16, n_step=3, seed=123)
    other.load(path)
    got = other.sample(32)
    assert len(other) == len(buf) and other.episode_open
    for key in ("state", "images/wrist"):
        assert torch.equal(got.obs[key], expected.obs[key])
        assert torch.equal(got.next_obs[key], expected.next_obs[key])
    assert torch.equal(got.reward, expected.reward) and torch.equal(got.discount, expected.discount)
    assert torch.equal(got.extras["intervention"], expected.extras["intervention"])
    # the restored open episode continues where it stopped
    other.add(obs_of(9, 4), np.zeros(A), 1.0, obs_of(9, 5), True, False, NO_EXTRAS)
    assert not other.episode_open

    with pytest.raises(ValueError, match="capacity"):
        make_buffer(capacity=32).load(path)


def test_save_load_keeps_every_open_stream(tmp_path) -> None:
    buf = make_buffer(capacity=32, n_step=3)
    a, b = buf.stream("a"), buf.stream("b")
    for t in range(3):
        a.add(obs_of(1, t), np.zeros(A), 1.0, obs_of(1, t + 1), False, False, NO_EXTRAS)
        b.add(obs_of(2, t), np.zeros(A), 2.0, obs_of(2, t + 1), False, False, NO_EXTRAS)
    other = make_buffer(capacity=32, n_step=3)
    other.load(buf.save(tmp_path / "replay.npz"))
    assert other.open_streams == ["a", "b"] and len(other) == len(buf) == 0
    for replay in (buf, other):  # both go on the same way
        replay.add(obs_of(1, 3), np.zeros(A), 1.0, obs_of(1, 4), True, False, NO_EXTRAS, stream="a")
        replay.end_episode("b")
    assert all_transitions(other)[1].tolist() == all_transitions(buf)[1].tolist()
    assert len(other) == 7 and not other.episode_open


def test_a_checkpoint_of_another_format_is_refused_by_number(tmp_path) -> None:
    import json

    buf = make_buffer(capacity=16, n_step=3, seed=3)
    buf.add_episode(make_episode(0, [0.0] * 4, terminated=True))
    with np.load(buf.save(tmp_path / "v2.npz")) as z:
        files = {k: z[k] for k in z.files if k != "meta"}
        meta = json.loads(str(z["meta"]))
    np.savez(tmp_path / "v1.npz", **files, meta=np.array(json.dumps({**meta, "format_version": 1})))
    with pytest.raises(ValueError, match="format_version=1; this robot_rl reads format 2"):
        make_buffer(capacity=16, n_step=3).load(tmp_path / "v1.npz")


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="n_step"):
        ReplayConfig(n_step=0)
    with pytest.raises(ValueError, match="gamma"):
        ReplayConfig(gamma=1.5)
    with pytest.raises(ValueError, match="capacity"):
        ReplayConfig(capacity=3, n_step=3)
