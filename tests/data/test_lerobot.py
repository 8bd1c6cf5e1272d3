"""Demos <-> LeRobot datasets (v3.0). The `lerobot` package itself does not install beside our torch range, so
what we write is read back as LeRobot's loader reads it, by other libraries: the parquet frames with Hugging Face
`datasets` under the features LeRobot derives from ``info.json``, the tasks with pandas, the videos with OpenCV's
own FFmpeg."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("av")
from test_demos import META, assert_same, make_episode

from robot_rl.data.demos import DemoFormatError
from robot_rl.envs.names import ACTION_NAMES
from robot_rl.formats.lerobot import DatasetMapping, read_lerobot_dataset, write_lerobot_dataset

EPISODES = [make_episode(5, True, 0), make_episode(7, False, 1), make_episode(4, True, 2)]
IMAGE = "images/wrist"


def split_images(episode):
    rest = {k: v for k, v in episode.observations.items() if k != IMAGE}
    return episode.observations[IMAGE], type(episode)(rest, episode.actions, episode.rewards, episode.terminated,
                                                      episode.truncated, episode.infos)


def hf_features(info: dict):
    """The `datasets` features LeRobot's loader casts the frames to (its get_hf_features_from_features)."""
    import datasets

    out = {}
    for key, ft in info["features"].items():
        if ft["dtype"] == "video":
            continue
        if ft["shape"] == [1]:
            out[key] = datasets.Value(ft["dtype"])
        else:
            out[key] = datasets.Sequence(length=ft["shape"][0], feature=datasets.Value(ft["dtype"]))
    return datasets.Features(out)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_lerobot_dataset(tmp_path_factory.mktemp("lerobot") / "ds", META, EPISODES)


def test_round_trip_is_lossless_for_state_actions_and_flags_and_images_within_the_codec(dataset) -> None:
    meta, back = read_lerobot_dataset(dataset)
    assert meta.task == "pick_cube" and meta.contract == META.contract and meta.space() == META.space()
    for a, b in zip(EPISODES, back, strict=True):
        image_a, rest_a = split_images(a)
        image_b, rest_b = split_images(b)
        assert_same(rest_a, rest_b)
        error = np.abs(image_a.astype(int) - image_b.astype(int))
        assert error.mean() < 1.0 and error.max() <= 4, (error.mean(), error.max())
        np.testing.assert_array_equal(image_a[-1], image_b[-1])  # the final observation is kept exactly


def test_the_dataset_reads_as_lerobots_loader_reads_it(dataset) -> None:
    import cv2
    import datasets
    import pandas as pd

    info = json.loads((dataset / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["total_episodes"] == 3 and info["total_frames"] == 16
    assert info["features"]["action"]["names"] == list(ACTION_NAMES)
    frames = datasets.Dataset.from_parquet(sorted(str(p) for p in (dataset / "data").glob("*/*.parquet")),
                                           features=hf_features(info))
    assert len(frames) == 16 and frames["episode_index"] == [0] * 5 + [1] * 7 + [2] * 4
    np.testing.assert_array_equal(np.asarray(frames["action"], np.float32),
                                  np.concatenate([e.actions for e in EPISODES]))
    np.testing.assert_array_equal(np.asarray(frames["observation.state"], np.float32),
                                  np.concatenate([e.observations["state"][:-1] for e in EPISODES]))
    assert frames["next.done"] == [False] * 4 + [True] + [False] * 6 + [True] + [False] * 3 + [True]
    np.testing.assert_allclose(frames["timestamp"][:3], [0.0, 0.1, 0.2], atol=1e-6)

    episodes = datasets.Dataset.from_parquet(str(dataset / "meta/episodes/chunk-000/file-000.parquet"))
    assert episodes["length"] == [5, 7, 4] and episodes["tasks"] == [["pick_cube"]] * 3
    assert episodes["dataset_from_index"] == [0, 5, 12] and episodes["dataset_to_index"] == [5, 12, 16]
    key = "observation.images.wrist"
    assert episodes[f"videos/{key}/from_timestamp"] == pytest.approx([0.0, 0.5, 1.2])
    tasks = pd.read_parquet(dataset / "meta/tasks.parquet")
    assert tasks.loc["pick_cube"].task_index == 0  # LeRobot looks tasks up by their string

    capture = cv2.VideoCapture(str(dataset / f"videos/{key}/chunk-000/file-000.mp4"))
    decoded = []
    while (frame := capture.read())[0]:
        decoded.append(cv2.cvtColor(frame[1], cv2.COLOR_BGR2RGB))
    assert len(decoded) == 16 and decoded[0].shape == (16, 16, 3)
    first = EPISODES[1].observations[IMAGE][0]
    assert np.abs(decoded[5].astype(int) - first.astype(int)).mean() < 1.0  # episode 1 starts at 0.5 s

    stats = json.loads((dataset / "meta/stats.json").read_text())
    assert np.asarray(stats[key]["mean"]).shape == (3, 1, 1) and stats["action"]["count"] == [16]


def test_a_dataset_from_another_tool_needs_a_mapping_and_every_feature_accounted_for(dataset, tmp_path) -> None:
    foreign = tmp_path / "foreign"
    shutil.copytree(dataset, foreign)
    (foreign / "meta/robot_rl.json").unlink()
    (foreign / "meta/robot_rl_final.npz").unlink()
    with pytest.raises(DemoFormatError, match="give a mapping file"):
        read_lerobot_dataset(foreign)
    mapping = DatasetMapping(task="pick_cube", images={"wrist": "observation.images.wrist"},
                             infos={"intervention": "complementary_info.intervention"})
    with pytest.raises(DemoFormatError, match=r"info\.json: feature\(s\) \['complementary_info\.is_success', "
                                              r"'complementary_info\.safety_clipped'\] are not in the mapping"):
        read_lerobot_dataset(foreign, mapping)
    mapping = DatasetMapping(task="pick_cube", images={"wrist": "observation.images.wrist"},
                             infos={"intervention": "complementary_info.intervention"},
                             ignore=("complementary_info.is_success", "complementary_info.safety_clipped"))
    meta, back = read_lerobot_dataset(foreign, mapping)
    assert meta.contract is not None and meta.contract.cameras == META.contract.cameras
    for a, b in zip(EPISODES, back, strict=True):
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.observations["state"][:-1], b.observations["state"][:-1])
        np.testing.assert_array_equal(b.observations["state"][-1], b.observations["state"][-2])  # no final frame
        assert b.terminated  # next.done at the last frame
        np.testing.assert_array_equal(a.infos["intervention"], b.infos["intervention"].astype(bool))
    bad = DatasetMapping(task="t", observations={"state": "observation.joints"},
                         ignore=("complementary_info.is_success",))
    with pytest.raises(DemoFormatError, match=r"feature\(s\) \['complementary_info.intervention'"):
        read_lerobot_dataset(foreign, bad)


def test_mapping_file_errors_name_the_file(tmp_path) -> None:
    file = tmp_path / "map.yaml"
    file.write_text("task: pick\nstate: observation.state\n")
    with pytest.raises(ValueError, match=r"map\.yaml: not a dataset mapping \(unknown field\(s\) \['state'\]\)"):
        DatasetMapping.load(file)
    file.write_text("task: pick\nimages: {front: observation.images.top}\nignore: [x]\n")
    assert DatasetMapping.load(file) == DatasetMapping(task="pick", images={"front": "observation.images.top"},
                                                       ignore=("x",))


def test_existing_folder_is_refused(dataset) -> None:
    with pytest.raises(FileExistsError, match="ds"):
        write_lerobot_dataset(dataset, META, EPISODES)


def test_full_colour_lossless_video_keeps_sharp_coloured_edges(tmp_path) -> None:
    from robot_rl.formats.lerobot import VideoSettings

    episode = make_episode(4, True, 0)
    image = np.zeros((5, 16, 16, 3), np.uint8)
    image[:, 4:12, 4:12] = (220, 30, 30)  # a red block: yuv420p smears its edges
    episode.observations[IMAGE] = image
    errors = {}
    for pix in ("yuv420p", "yuv444p"):
        path = write_lerobot_dataset(tmp_path / pix, META, [episode], VideoSettings(crf=0, pix_fmt=pix))
        info = json.loads((path / "meta/info.json").read_text())
        assert info["features"]["observation.images.wrist"]["info"]["video.pix_fmt"] == pix
        (back,) = read_lerobot_dataset(path)[1]
        errors[pix] = np.abs(back.observations[IMAGE].astype(int) - image.astype(int))[:-1].max()
    assert errors["yuv444p"] <= 2 < errors["yuv420p"]
