"""In-process checks of the link's parts: codec, spec, assembler, replay log, ingestor, client drop policy."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("grpc_tools")

from robot_rl.agents.config import SACConfig
from robot_rl.agents.policy import ActingPolicy
from robot_rl.agents.sac import SACAgent
from robot_rl.data.replay import ReplayBuffer
from robot_rl.data.spaces import describe_space
from robot_rl.data.transition import Transition
from robot_rl.distributed.actor import PolicyHolder
from robot_rl.distributed.assembler import EpisodeAssembler
from robot_rl.distributed.client import ActorClient
from robot_rl.distributed.codec import (
    RecordError,
    decode_record,
    dump_weights,
    encode_record,
    load_weights,
)
from robot_rl.distributed.config import LinkConfig
from robot_rl.distributed.ingest import Ingestor
from robot_rl.distributed.learner import actors_ahead
from robot_rl.distributed.prior import episodes_from_replay_npz, load_prior_episodes
from robot_rl.distributed.protocol import pb
from robot_rl.distributed.replay_log import CorruptChunkError, ReplayLog
from robot_rl.distributed.spec import classifier_digest, env_spec, spec_diff
from robot_rl.distributed.testing import CounterEnv

ENV = CounterEnv()
SPACE, ADIM = ENV.observation_space, ENV.action_space.shape[0]


def episode_records(seed: int, steps: int, first_seq: int = 1, episode: int = 0) -> list[bytes]:
    """Serialized records of one CounterEnv episode (steps + end record)."""
    env = CounterEnv(episode_len=steps)
    obs, _ = env.reset(seed=seed)
    out, seq = [], first_seq
    for t in range(steps):
        nxt, r, term, _, _ = env.step(np.zeros(ADIM))
        out.append(
            encode_record(
                seq,
                episode,
                t,
                obs,
                is_step=True,
                action=np.full(ADIM, 0.1),
                reward=r,
                terminated=term,
                extras={"intervention": 1.0},
                policy_version=3,
            )
        )
        seq += 1
        obs = nxt
    out.append(encode_record(seq, episode, steps, obs, is_step=False, truncated=not term))
    return out


def test_record_round_trip_compresses_images_and_validates() -> None:
    obs, _ = ENV.reset(seed=5)
    raw = encode_record(7, 2, 0, obs, is_step=True, action=np.ones(ADIM), reward=0.5, policy_version=9)
    rec = decode_record(raw, SPACE, ADIM)
    assert (rec.seq, rec.episode, rec.index, rec.policy_version, rec.reward) == (7, 2, 0, 9, 0.5)
    for key, value in obs.items():
        np.testing.assert_array_equal(rec.obs[key], value)
    images = sum(obs[k].nbytes for k in obs if k.startswith("images/"))
    assert len(raw) < images / 10  # flat test images compress far below raw size
    wrong = CounterEnv(image_size=48).reset(seed=0)[0]
    with pytest.raises(RecordError, match="images/front"):
        decode_record(encode_record(1, 0, 0, wrong, is_step=False), SPACE, ADIM)
    with pytest.raises(RecordError, match="action"):
        decode_record(encode_record(1, 0, 0, obs, is_step=True, action=np.ones(3)), SPACE, ADIM)


def test_decompression_is_bounded() -> None:
    """A record whose image inflates beyond its declared shape is refused, never allocated."""
    obs, _ = ENV.reset(seed=0)
    rec = pb.Record.FromString(encode_record(1, 0, 0, obs, is_step=False))
    rec.obs[1].data = zlib.compress(bytes(10 * 32 * 32 * 3))
    with pytest.raises(RecordError, match="more than"):
        decode_record(rec.SerializeToString(), SPACE, ADIM)


def test_spec_diff_names_the_field() -> None:
    learner = env_spec(CounterEnv(), "t")
    actor = env_spec(CounterEnv(image_size=48), "t")
    diff = spec_diff(actor, learner)
    assert any("observation_space['images/front'].shape" in d and "[48, 48, 3]" in d for d in diff), diff
    assert spec_diff(learner, learner) == []


def test_spec_names_the_reward_classifier(tmp_path: Path) -> None:
    """An actor rewarding with a classifier and a learner without it (or with another file) disagree."""
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    a.write_bytes(b"classifier a")
    b.write_bytes(b"classifier b")
    plain = env_spec(CounterEnv(), "t")
    with_a = env_spec(CounterEnv(), "t", classifier=classifier_digest(a))
    assert classifier_digest(a) != classifier_digest(b) and classifier_digest(None) is None
    assert any(d.startswith("spec.reward.classifier: actor") for d in spec_diff(with_a, plain))
    assert spec_diff(with_a, env_spec(CounterEnv(), "t", classifier=classifier_digest(b)))
    assert spec_diff(with_a, with_a) == []


def test_spec_names_the_action_box() -> None:
    """An actor acting through a narrowed action box and a learner on the whole box disagree on what [-1, 1]
    means: the handshake refuses them."""
    from robot_rl.training.env_factory import EnvConfig, make_env_from_config

    whole = env_spec(make_env_from_config(EnvConfig("Pendulum-v1")), "Pendulum-v1")
    narrow = env_spec(make_env_from_config(EnvConfig("Pendulum-v1", action_scale="0.5")), "Pendulum-v1")
    assert any("action_space" in d and "scale" in d and "[0.5]" in d for d in spec_diff(narrow, whole))
    assert spec_diff(narrow, narrow) == []


def test_assembler_hands_out_each_transition_then_the_episode() -> None:
    cuts: list[str] = []
    asm = EpisodeAssembler(on_cut=cuts.append)
    recs = [decode_record(r, SPACE, ADIM) for r in episode_records(4, 5)]
    out = [asm.add("a", r) for r in recs]
    ready = [step for step, _ in out]
    assert ready[0] is None and all(step is not None for step in ready[1:])  # record k completes step k - 1
    for k, step in enumerate(ready[1:]):
        np.testing.assert_array_equal(step.obs["state"], recs[k].obs["state"])
        np.testing.assert_array_equal(step.next_obs["state"], recs[k + 1].obs["state"])
        assert step.done == (k == 4) and step.terminated == (k == 4) and not step.truncated
    done = out[-1][1]
    assert done is not None and all(d is None for _, d in out[:-1])
    assert len(done.episode) == 5 and done.episode.observations["state"].shape == (6, 4)
    assert done.episode.terminated and done.episode.infos["intervention"].dtype == np.bool_
    assert (done.policy_versions == 3).all()
    # A gap inside an episode: the complete transitions stay (the consumer is told to close the episode);
    # only the newest step, whose next observation never came, is dropped. Nothing is stitched across.
    assert asm.add("b", recs[0]) == (None, None)
    assert asm.add("b", recs[1])[0] is not None and asm.open_steps("b") == 1
    assert asm.add("b", recs[3]) == (None, None)
    assert cuts == ["b"] and asm.discarded_steps == 2 and asm.open_steps("b") == 0


def test_replay_log_round_trip_torn_tail_and_corruption(tmp_path: Path, caplog) -> None:
    meta = {"observation_space": describe_space(SPACE), "action_dim": ADIM}
    log = ReplayLog(tmp_path / "log", meta)
    for i in range(3):
        log.append([("a", "s", episode_records(i, 3, first_seq=1 + 4 * i))])
    log.close()
    assert sum(len(r) for _, _, r in ReplayLog(tmp_path / "log").batches()) == 12
    segment = log.segments()[0]
    size = segment.stat().st_size
    with open(segment, "ab") as f:  # an interrupted write: half a chunk header
        f.write(b"RRLC\x01\x00")
    assert sum(len(r) for _, _, r in ReplayLog(tmp_path / "log").batches()) == 12
    assert "incomplete" in caplog.text
    again = ReplayLog(tmp_path / "log", meta)
    again.open_for_append()  # truncates the torn tail, appends to a new segment
    assert segment.stat().st_size == size
    again.append([("a", "s", episode_records(9, 2, first_seq=13))])
    again.close()
    data = bytearray(segment.read_bytes())
    data[size // 2] ^= 0xFF  # flip one byte inside chunk 1 of the first segment
    segment.write_bytes(bytes(data))
    with pytest.raises(CorruptChunkError) as err:
        list(ReplayLog(tmp_path / "log").batches())
    assert err.value.path == segment and err.value.chunk == 1 and "checksum mismatch" in str(err.value)
    kept = list(ReplayLog(tmp_path / "log").batches(skip_corrupt=True))
    assert sum(len(r) for _, _, r in kept) == 12 - 4 + 3
    with pytest.raises(ValueError, match="action_dim"):
        ReplayLog(tmp_path / "log", {**meta, "action_dim": 3})


def test_ingestor_dedups_and_acks_only_after_flush(tmp_path: Path) -> None:
    log = ReplayLog(tmp_path / "log", {"observation_space": describe_space(SPACE), "action_dim": ADIM})
    episodes, steps = [], []
    ing = Ingestor(SPACE, ADIM, log, lambda done, restoring: episodes.append(done),
                   lambda actor, step, restoring: steps.append(step))
    ing.log.open_for_append()
    recs = episode_records(2, 4) + episode_records(3, 4, first_seq=6, episode=1)
    assert ing.hello("a", "s1", 1) == 0
    first = ing.push("a", "s1", recs[:7], {})
    assert (first.acked, first.expected, first.accepted) == (0, 8, 7)  # nothing durable yet
    assert len(steps) == 5 and ing.open_steps() == 1  # 4 + 1 transitions; the newest step waits for its next
    assert ing.flush() == 7 and ing.push("a", "s1", [], {}).acked == 7
    again = ing.push("a", "s1", recs[5:], {})  # resend overlapping what was taken
    assert (again.duplicates, again.accepted, again.expected) == (2, 3, 11)
    gap = ing.push("a", "s1", [episode_records(5, 1, first_seq=20)[0]], {})
    assert gap.accepted == 0 and gap.expected == 11
    ing.flush()
    assert len(episodes) == 2 and [len(e.episode) for e in episodes] == [4, 4] and ing.open_steps() == 0
    assert len(steps) == 8 and [s.done for s in steps].count(True) == 2
    with pytest.raises(KeyError, match="Hello"):
        ing.push("a", "other-session", recs, {})
    # a restart rebuilds the same state from the log alone
    restored = []
    restored_steps = []
    ing2 = Ingestor(SPACE, ADIM, ReplayLog(tmp_path / "log"), lambda done, r: restored.append((done, r)),
                    lambda actor, step, r: restored_steps.append((step, r)))
    assert ing2.restore() == 10
    assert ing2.hello("a", "s1", 1) == 10 and len(restored) == 2 and all(r for _, r in restored)
    assert len(restored_steps) == 8 and all(r for _, r in restored_steps)


def test_paced_actors_wait_only_when_ahead_of_the_updates() -> None:
    # 100 steps taken, learning from step 50: 51 steps owe an update each (ratio 1); lead 10
    assert actors_ahead(100, 40, 50, 1.0, 10, True)  # 11 unmatched
    assert not actors_ahead(100, 41, 50, 1.0, 10, True)  # 10 unmatched: within the lead
    assert actors_ahead(100, 22, 50, 2.0, 10, True)  # ratio 2: 22 calls match 11 steps, 40 unmatched
    assert not actors_ahead(100, 22, 50, 0.5, 10, True)  # ratio 0.5: 22 calls match 44 steps, 7 unmatched
    assert not actors_ahead(100, 0, 50, 1.0, 10, False)  # nothing sampleable yet: the actors must send it
    assert not actors_ahead(40, 0, 50, 1.0, 10, True)  # before learning starts
    assert not actors_ahead(100, 0, 50, 1.0, 0, True) and not actors_ahead(100, 0, 50, 0.0, 10, True)  # off


def test_policy_swaps_continue_one_exploration_stream() -> None:
    cfg = SACConfig(hidden_dims=(32, 32), num_critics=2, cnn_channels=(8, 8, 8, 8), image_latent_dim=32)
    holder = PolicyHolder(lambda: ActingPolicy(cfg, SPACE, ENV.action_space, seed=3))
    obs, _ = ENV.reset(seed=0)
    before = holder.active.act(obs)
    holder.load(pb.Weights(version=1, publish_time=0.0, state=dump_weights(holder.active)))  # same weights
    assert holder.maybe_swap() and holder.version == 1
    after = holder.active.act(obs)
    assert not np.allclose(before, after)  # the spare's own copy of the seed would repeat `before` exactly


def test_weights_payload_is_actor_only() -> None:
    cfg = SACConfig(hidden_dims=(32, 32), num_critics=2, cnn_channels=(8, 8, 8, 8), image_latent_dim=32)
    learner = SACAgent(cfg, SPACE, ENV.action_space, seed=0)
    actor = ActingPolicy(cfg, SPACE, ENV.action_space, seed=1)  # what actor processes build: no critics
    assert not any("critic" in name for name, _ in actor.named_parameters())
    data = dump_weights(learner.policy)
    assert len(data) < 0.5 * sum(p.numel() * 4 for p in learner.critic.parameters()) + 200_000
    assert load_weights(actor, data) is None  # no jump-start guide in this run
    assert load_weights(actor, dump_weights(learner.policy, guide_h=12)) == 12
    obs, _ = ENV.reset(seed=0)
    np.testing.assert_allclose(
        actor.act(obs, deterministic=True), learner.act(obs, deterministic=True), atol=1e-6
    )
    import io

    import torch

    assert set(torch.load(io.BytesIO(data), weights_only=True)) == {"encoder", "actor"}


def test_client_drop_policy_counts_and_cuts(caplog) -> None:
    """Learner unreachable and a tiny buffer: new steps are refused (counted, logged), the episode is cut."""
    client = ActorClient(LinkConfig(port=1), "a", {}, "x" * 20, buffer_mb=0.02)
    env = CounterEnv(episode_len=50)
    obs, _ = env.reset(seed=0)
    recorded = []
    for _ in range(20):
        nxt, r, term, trunc, _ = env.step(np.zeros(ADIM))
        recorded.append(client.add(Transition(obs, np.zeros(ADIM), r, nxt, term, trunc)))
        obs = nxt
    n = sum(recorded)
    assert 0 < n < 20 and all(recorded[:n]) and not any(recorded[n:])
    assert client.counters["dropped_steps"] == 20 - n and client.counters["dropped_episodes"] == 1
    assert "send buffer full" in caplog.text
    items = list(client._inbox)
    assert (
        items[-1]["is_step"] is False and items[-1]["cut"] is True
    )  # the episode ends where recording stopped
    assert len(items) == n + 1
    client.close()


def test_prior_replay_from_npz_and_log(tmp_path: Path) -> None:
    buf = ReplayBuffer(SPACE, ADIM, extras_keys={"intervention": np.bool_, "grasp_penalty": np.float32})
    env = CounterEnv(episode_len=4)
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            nxt, r, term, trunc, _ = env.step(np.zeros(ADIM))
            buf.add(obs, np.zeros(ADIM), r, nxt, term, trunc, {"intervention": False, "grasp_penalty": 0.0})
            obs, done = nxt, term or trunc
    (tmp_path / "single" / "checkpoints").mkdir(parents=True)
    buf.save(tmp_path / "single" / "checkpoints" / "replay.npz")
    episodes = load_prior_episodes(tmp_path / "single", SPACE, ADIM)
    assert [len(e) for e in episodes] == [4, 4, 4]
    assert [e.terminated for e in episodes] == [True, False, True]
    np.testing.assert_array_equal(episodes[1].observations["state"][:, 1], np.arange(5))
    meta = {"observation_space": describe_space(SPACE), "action_dim": ADIM}
    log = ReplayLog(tmp_path / "dist" / "replay_log", meta)
    log.append([("a", "s", episode_records(1, 3)), ("b", "s", episode_records(2, 2))])
    log.close()
    assert [len(e) for e in load_prior_episodes(tmp_path / "dist", SPACE, ADIM)] == [3, 2]
    with pytest.raises(ValueError, match="differ"):
        episodes_from_replay_npz(tmp_path / "single" / "checkpoints" / "replay.npz", SPACE, 3)


def test_token_is_required(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("ROBOT_RL_TOKEN", raising=False)
    with pytest.raises(ValueError, match="ROBOT_RL_TOKEN"):
        LinkConfig().token()
    (tmp_path / "t").write_text("short\n")
    with pytest.raises(ValueError, match="too short"):
        LinkConfig(token_file=tmp_path / "t").token()
    (tmp_path / "t").write_text("0123456789abcdef0123\n")
    assert LinkConfig(token_file=tmp_path / "t").token() == "0123456789abcdef0123"


def test_schema_compiles_with_the_expected_service() -> None:
    service = pb.DESCRIPTOR.services_by_name["Learner"]
    assert [m.name for m in service.methods] == ["Hello", "Push", "SubscribeWeights"]
    assert service.methods_by_name["SubscribeWeights"].server_streaming
    assert pb.DESCRIPTOR.package == "robot_rl.link.v1"
