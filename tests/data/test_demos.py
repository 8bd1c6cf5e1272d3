"""Demo recordings: write/load round trip, atomic writes, corruption and mismatch detection."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from robot_rl.data import demos as demos_mod
from robot_rl.data.demos import DemoFormatError, DemoMeta, DemoWriter, load_demos, load_demos_into
from robot_rl.data.episode import Episode
from robot_rl.data.replay import ReplayBuffer, ReplayConfig
from robot_rl.envs.contract import ACTION_DIM, STATE_DIM, CameraSpec, ContractSpec

CONTRACT = ContractSpec(cameras=(CameraSpec("wrist", 16, 16),))
META = DemoMeta(task="pick_cube", contract=CONTRACT)
ROWS = np.arange(16, dtype=np.uint8)  # a smooth, compressible test image


def make_episode(t: int, success: bool, seed: int = 0) -> Episode:
    rng = np.random.default_rng(seed)
    return Episode(
        observations={
            "state": rng.normal(size=(t + 1, STATE_DIM)).astype(np.float32),
            "images/wrist": np.broadcast_to(ROWS[:, None, None], (t + 1, 16, 16, 3)).copy(),
        },
        actions=rng.uniform(-1, 1, (t, ACTION_DIM)).astype(np.float32),
        rewards=np.r_[np.zeros(t - 1), float(success)].astype(np.float32),
        terminated=success,
        truncated=not success,
        infos={
            "intervention": np.arange(t) < 2,
            "safety_clipped": np.arange(t) == 1,
            "is_success": np.r_[np.zeros(t - 1, bool), success],
        },
    )


def assert_same(a: Episode, b: Episode) -> None:
    assert a.observations.keys() == b.observations.keys() and a.infos.keys() == b.infos.keys()
    for k in a.observations:
        np.testing.assert_array_equal(a.observations[k], b.observations[k])
        assert a.observations[k].dtype == b.observations[k].dtype
    for k in a.infos:
        np.testing.assert_array_equal(a.infos[k], b.infos[k])
        assert a.infos[k].dtype == b.infos[k].dtype
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_array_equal(a.rewards, b.rewards)
    assert (a.terminated, a.truncated) == (b.terminated, b.truncated)


@pytest.fixture
def recorded(tmp_path):
    episodes = [make_episode(5, True, 0), make_episode(7, False, 1), make_episode(3, True, 2)]
    writer = DemoWriter(tmp_path / "demos", META)
    paths = [writer.write(e) for e in episodes]
    return tmp_path / "demos", episodes, paths


def test_round_trip_and_layout(recorded) -> None:
    path, episodes, paths = recorded
    assert [p.name for p in paths] == ["episode_000000.npz", "episode_000001.npz", "episode_000002.npz"]
    meta = json.loads((path / "meta.json").read_text())
    assert meta["format"] == "robot_rl.demos" and meta["format_version"] == 1 and meta["task"] == "pick_cube"
    assert ContractSpec.from_dict(meta["contract"]) == CONTRACT
    assert meta["observation_space"]["images/wrist"] == {"shape": [16, 16, 3], "dtype": "uint8"}
    assert meta["created"] and meta["code_version"].startswith("robot_rl ")
    loaded = load_demos(path)
    assert len(loaded) == 3
    for a, b in zip(episodes, loaded):
        assert_same(a, b)
    assert [len(e) for e in load_demos(path, only_successful=True)] == [5, 3]
    image = zipfile.ZipFile(paths[0]).getinfo("obs/images/wrist.npy")
    assert image.compress_size < episodes[0].observations["images/wrist"].nbytes / 4  # images are compressed


def test_writer_appends_after_existing_episodes(recorded) -> None:
    path, _, _ = recorded
    assert DemoWriter(path, META).write(make_episode(2, True)).name == "episode_000003.npz"
    assert len(load_demos(path)) == 4
    with pytest.raises(DemoFormatError, match="does not match"):
        DemoWriter(path, DemoMeta(task="other_task", contract=CONTRACT))


def test_writer_rejects_bad_episode(tmp_path) -> None:
    episode = make_episode(3, True)
    episode.observations["state"] = episode.observations["state"][:, :5]
    with pytest.raises(ValueError, match=r"episode_000000.npz.*'state'"):
        DemoWriter(tmp_path, META).write(episode)
    assert not list(tmp_path.glob("episode_*"))


def test_leftover_temp_file_is_ignored_and_reported(recorded) -> None:
    path, _, _ = recorded
    (path / "episode_000003.npz.tmp").write_bytes(b"half an episode")
    with pytest.warns(UserWarning, match=r"episode_000003.npz.tmp"):
        loaded = load_demos(path)
    assert len(loaded) == 3


def test_failed_write_leaves_no_episode(recorded, monkeypatch) -> None:
    path, _, _ = recorded

    def crash(f, **arrays) -> None:
        f.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(demos_mod.np, "savez_compressed", crash)
    with pytest.raises(KeyboardInterrupt):
        DemoWriter(path, META).write(make_episode(4, True))
    monkeypatch.undo()
    assert sorted(p.name for p in path.iterdir()) == [
        "episode_000000.npz",
        "episode_000001.npz",
        "episode_000002.npz",
        "meta.json",
    ]
    assert len(load_demos(path)) == 3


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupt_file_named_in_error(recorded, damage: str) -> None:
    path, _, paths = recorded
    data = bytearray(paths[1].read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        mid = len(data) // 3
        data[mid : mid + 64] = bytes(b ^ 0xFF for b in data[mid : mid + 64])
    paths[1].write_bytes(bytes(data))
    with pytest.raises(DemoFormatError, match=r"episode_000001.npz"):
        load_demos(path)


def test_shape_mismatch_named(recorded) -> None:
    path, _, paths = recorded
    arrays = dict(np.load(paths[2]))
    arrays["obs/images/wrist"] = arrays["obs/images/wrist"][:, :8]
    np.savez_compressed(paths[2], **arrays)
    with pytest.raises(DemoFormatError, match=r"episode_000002.npz.*'images/wrist'") as err:
        load_demos(path)
    assert str(err.value).count("episode_000002.npz") == 1, "the path is named once"


def test_action_shape_error_says_shape(recorded) -> None:
    path, _, paths = recorded
    arrays = dict(np.load(paths[0]))
    arrays["actions"] = arrays["actions"][:, :5]
    np.savez_compressed(paths[0], **arrays)
    with pytest.raises(DemoFormatError, match=r"episode_000000.npz: actions expected shape \[\d+, 7\], got") as err:
        load_demos(path)
    assert "finite" not in str(err.value) and str(err.value).count("episode_000000.npz") == 1


def test_bad_meta(recorded) -> None:
    path, _, _ = recorded
    meta = json.loads((path / "meta.json").read_text())
    (path / "meta.json").write_text(json.dumps({**meta, "format_version": 99}))
    with pytest.raises(DemoFormatError, match=r"meta.json.*format_version"):
        load_demos(path)
    (path / "meta.json").unlink()
    with pytest.raises(DemoFormatError, match=r"meta.json"):
        load_demos(path)


def test_load_into_replay(recorded) -> None:
    path, episodes, _ = recorded
    buf = ReplayBuffer(
        CONTRACT.observation_space(), ACTION_DIM, ReplayConfig(capacity=100), extras_keys=("intervention",)
    )
    assert load_demos_into(buf, path) == 3
    assert len(buf) == sum(len(e) for e in episodes) and buf.num_records == len(buf) + 3
    batch = buf.sample(16)
    assert batch.obs["images/wrist"].shape == (16, 16, 16, 3)


def test_demos_of_a_gymnasium_env_round_trip_without_a_robot_contract(tmp_path):
    """A foreign env's demos: its own spaces in meta.json (no contract), episodes recorded by the same rollout
    as ours (success from whatever key it reports), and ``load_demos`` refusing them for another task."""
    from robot_rl.training.env_factory import make_training_env
    from robot_rl.training.record import rollout_episode

    env = make_training_env("Pendulum-v1")
    writer = DemoWriter(tmp_path, DemoMeta.for_env("Pendulum-v1", env))
    episode = rollout_episode(env, lambda _obs: np.zeros(1, np.float32), seed=3)
    writer.write(episode)
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["contract"] is None and meta["action_dim"] == 1 and meta["task"] == "Pendulum-v1"
    (loaded,) = load_demos(tmp_path, task="Pendulum-v1")
    np.testing.assert_array_equal(loaded.observations["state"], episode.observations["state"])
    np.testing.assert_array_equal(loaded.actions, episode.actions)
    with pytest.raises(DemoFormatError, match="recorded for task 'Pendulum-v1', this run is 'reach'"):
        load_demos(tmp_path, task="reach")
    with pytest.raises(ValueError, match="without a contract, give the observation_space"):
        DemoMeta(task="x", contract=None)
