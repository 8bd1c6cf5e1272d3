"""Episodes as rosbag2/MCAP recordings: lossless round trip, every file opened by an independent MCAP reader,
damaged recordings refused with the file named."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("rosbags")
from test_demos import META, assert_same, make_episode

from robot_rl.data.demos import DemoFormatError, DemoMeta
from robot_rl.envs.contract import ContractSpec
from robot_rl.envs.names import EXECUTED_NAMES, STATE_NAMES
from robot_rl.formats.rosbag import EpisodeBagWriter, read_episodes_bag, write_episodes_bag

EPISODES = [make_episode(5, True, 0), make_episode(7, False, 1), make_episode(3, True, 2)]


def mcap_messages(bag) -> list[tuple[str, int, object]]:
    """Every message of the bag's MCAP file as (topic, log time, decoded), read by the mcap library."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    (file,) = bag.glob("*.mcap")
    with open(file, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        return [(ch.topic, m.log_time, dec) for _, ch, m, dec in reader.iter_decoded_messages(log_time_order=True)]


def test_demos_to_bag_to_demos_is_lossless_and_an_independent_reader_sees_the_ros_messages(tmp_path) -> None:
    bag = write_episodes_bag(tmp_path / "rec", META, EPISODES, start_ns=10**18)
    meta, loaded = read_episodes_bag(bag)
    assert meta.task == META.task and meta.contract == META.contract and meta.space() == META.space()
    assert len(loaded) == len(EPISODES)
    for a, b in zip(EPISODES, loaded):
        assert_same(a, b)

    messages = mcap_messages(bag)
    topics = [t for t, _, _ in messages]
    assert topics[0] == "/rl/recording" and json.loads(messages[0][2].data)["task"] == "pick_cube"
    assert topics.count("/rl/robot_state") == sum(len(e) + 1 for e in EPISODES)
    assert topics.count("/rl/executed_action") == sum(len(e) for e in EPISODES)
    assert [t for t in (json.loads(m.data)["event"] for t_, _, m in messages if t_ == "/rl/episode")] == \
        ["start", "end"] * 3
    state = next(m for t, _, m in messages if t == "/rl/robot_state")
    assert list(state.name) == list(STATE_NAMES)
    np.testing.assert_array_equal(np.asarray(state.position, np.float32), EPISODES[0].observations["state"][0])
    assert state.header.stamp.sec == 10**9  # stamped at the recording's clock
    image = next(m for t, _, m in messages if t == "/rl/images/wrist")
    assert (image.height, image.width, image.encoding, image.step) == (16, 16, "rgb8", 48)
    action = next(m for t, _, m in messages if t == "/rl/executed_action")
    assert list(action.name) == list(EXECUTED_NAMES)
    np.testing.assert_array_equal(np.asarray(action.position[:7], np.float32), EPISODES[0].actions[0])
    assert action.position[EXECUTED_NAMES.index("intervention")] == 1.0
    times = [t for _, t, _ in messages]
    assert times == sorted(times)
    control_dt = int(1e9 / META.contract.control_hz)
    state_stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
                    for topic, _, m in messages if topic == "/rl/robot_state"][:6]
    assert np.all(np.diff(state_stamps) == control_dt)  # the control rate
    assert state_stamps[0] == 10**18 and abs(times[0] - 10**18) < 10  # logged at the first step's time


def test_metadata_yaml_describes_an_mcap_bag_that_ros2_bag_info_reads(tmp_path) -> None:
    import yaml

    bag = write_episodes_bag(tmp_path / "rec", META, EPISODES[:1])
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["storage_identifier"] == "mcap" and info["version"] == 9
    counts = {t["topic_metadata"]["name"]: t["message_count"] for t in info["topics_with_message_count"]}
    assert counts["/rl/robot_state"] == 6 and counts["/rl/reward"] == 5
    types = {t["topic_metadata"]["name"]: t["topic_metadata"]["type"] for t in info["topics_with_message_count"]}
    assert types["/rl/images/wrist"] == "sensor_msgs/msg/Image"


def test_a_run_stopped_mid_episode_keeps_its_steps_as_a_truncated_interrupted_episode(tmp_path) -> None:
    ep = EPISODES[1]
    writer = EpisodeBagWriter(tmp_path / "rec", META)
    writer.begin({k: v[0] for k, v in ep.observations.items()}, 0, {"is_success": "|b1"})
    for t in range(3):
        writer.step(ep.actions[t], float(ep.rewards[t]), {k: v[t + 1] for k, v in ep.observations.items()},
                    (t + 1) * 100_000_000, {"is_success": False})
    writer.close()
    _, (loaded,) = read_episodes_bag(tmp_path / "rec")
    assert len(loaded) == 3 and loaded.truncated and not loaded.terminated
    np.testing.assert_array_equal(loaded.actions, ep.actions[:3])
    end = [json.loads(m.data) for t, _, m in mcap_messages(tmp_path / "rec") if t == "/rl/episode"][-1]
    assert end["interrupted"] and end["steps"] == 3


def test_an_episode_the_recording_ends_inside_is_left_out_by_name_and_the_finished_ones_read(tmp_path) -> None:
    writer = EpisodeBagWriter(tmp_path / "rec", META)
    writer.write_episode(EPISODES[0])
    ep = EPISODES[1]
    writer.begin({k: v[0] for k, v in ep.observations.items()})
    writer.step(ep.actions[0], 0.0, {k: v[1] for k, v in ep.observations.items()}, infos={"is_success": False})
    writer.writer.close()  # the file as far as it got: no end event for episode 1
    with pytest.warns(UserWarning, match=r"rec episode 1: the recording ends inside this episode .* 1 finished"):
        _, episodes = read_episodes_bag(tmp_path / "rec")
    assert len(episodes) == 1
    assert_same(episodes[0], EPISODES[0])


def test_a_truncated_bag_is_refused_naming_the_file(tmp_path) -> None:
    bag = write_episodes_bag(tmp_path / "rec", META, EPISODES)
    (file,) = bag.glob("*.mcap")
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])
    with pytest.raises(DemoFormatError, match=r"rec"):
        read_episodes_bag(bag)


def test_a_bag_without_the_recording_topic_is_refused(tmp_path) -> None:
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    with Writer(tmp_path / "other", version=9, storage_plugin=StoragePlugin.MCAP) as w:
        conn = w.add_connection("/chatter", "std_msgs/msg/String", typestore=store)
        w.write(conn, 1, store.serialize_cdr(store.types["std_msgs/msg/String"](data="hi"), "std_msgs/msg/String"))
    with pytest.raises(DemoFormatError, match=r"other: no /rl/recording topic"):
        read_episodes_bag(tmp_path / "other")


def test_existing_folder_is_not_overwritten_and_stamps_must_not_go_back(tmp_path) -> None:
    write_episodes_bag(tmp_path / "rec", META, EPISODES[:1])
    with pytest.raises(FileExistsError, match="rec"):
        EpisodeBagWriter(tmp_path / "rec", META)
    writer = EpisodeBagWriter(tmp_path / "rec2", DemoMeta(task="reach", contract=ContractSpec()))
    obs = {"state": np.zeros(len(STATE_NAMES), np.float32)}
    writer.begin(obs, 5_000)
    with pytest.raises(ValueError, match="before the last one"):
        writer.step(np.zeros(7), 0.0, obs, 4_000)
    writer.close()
