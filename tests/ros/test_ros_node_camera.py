"""Camera bridge over real DDS: matches reliable (realsense default) and best-effort publishers, decodes
raw and compressed images, crops and resizes, keeps stamps and frames. (The 30 Hz no-drop figure is
``bench/ros_latency.py cameras``; here three bridges run at 15 Hz to stay light on a shared CI machine.)"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from conftest import ros_session, write_camera_config
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import QoSProfile, ReliabilityPolicy
from ros_harness import wait_for
from sensor_msgs.msg import CompressedImage, Image

from robot_rl.envs import names
from robot_rl.ros.messages import image_from_msg, image_msg
from robot_rl.ros.qos import EVENTS

DEEP_SENSOR = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT)
H, W = 240, 320  # realsense's 320x240 profile: keeps 3 bridges x 30 Hz light on a 2-core CI machine
CROP = (40, 0, 240, 240)


def frame() -> np.ndarray:
    """R encodes the column, G the row: the output's colours tell where the crop was taken."""
    rows, cols = np.mgrid[0:H, 0:W]
    return np.stack([cols * 2 // 3, rows, np.full((H, W), 77)], axis=2).astype(np.uint8)


def test_camera_bridge_qos_decoding_and_rate(tmp_path) -> None:
    cv2 = pytest.importorskip("cv2")
    inputs = {
        "reliable": ("raw", QoSProfile(depth=10)),
        "besteffort": ("raw", QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)),
        "jpeg": ("compressed", QoSProfile(depth=10)),
    }
    with ros_session("camera", tmp_path) as (procs, probe):
        pubs, outs = {}, {}
        for name, (transport, qos) in inputs.items():
            cfg = write_camera_config(tmp_path, name=name, topic=f"/cams/{name}/image_raw", input_hw_px=[H, W],
                                      transport=transport, crop_xywh_px=list(CROP), output_hw_px=[128, 128])
            procs.start("camera_bridge", name=f"camera_bridge_{name}", namespace="/rig", camera_config=cfg)
            topic = f"/cams/{name}/image_raw" + ("/compressed" if transport == "compressed" else "")
            pubs[name] = probe.node.create_publisher(CompressedImage if transport == "compressed" else Image,
                                                     topic, qos)
            # A deeper best-effort queue than the nodes' SENSOR (depth 1): this checker must see every frame.
            outs[name] = probe.collect(Image, f"/rig/{names.image_topic(name)}", DEEP_SENSOR)
        raw = frame()
        jpeg = cv2.imencode(".jpg", raw[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()

        def publish_all() -> dict[str, object]:
            stamp = probe.node.get_clock().now().to_msg()
            for name, (transport, _) in inputs.items():
                if transport == "raw":
                    pubs[name].publish(image_msg(raw, stamp, "camera_color_optical_frame"))
                else:
                    msg = CompressedImage(format="rgb8; jpeg compressed bgr8", data=jpeg)
                    msg.header.stamp, msg.header.frame_id = stamp, "camera_color_optical_frame"
                    pubs[name].publish(msg)
            return stamp

        # Wait until every bridge is connected both ways, then count 3 s at 15 Hz.
        wait_for(lambda: publish_all() and all(outs.values()), 30.0, "images from all camera bridges", procs)
        time.sleep(0.5)
        for out in outs.values():
            out.clear()
        stamps, period = [], 1.0 / 15.0
        next_t = time.monotonic()
        for _ in range(45):
            stamps.append(publish_all())
            next_t = max(next_t + period, time.monotonic())  # after a stall, re-phase: no catch-up bursts
            time.sleep(max(0.0, next_t - time.monotonic()))
        time.sleep(0.5)

        sent = {(s.sec, s.nanosec) for s in stamps}
        for name, out in outs.items():
            got = {(m.header.stamp.sec, m.header.stamp.nanosec) for _, m in out}
            # Every frame normally arrives; the bound leaves room for a shared, overloaded CI machine.
            assert len(got & sent) >= 0.8 * len(sent), f"{name}: {len(got & sent)}/{len(sent)} frames"
            msg = out[-1][1]
            img = image_from_msg(msg)
            assert (msg.encoding, img.shape) == ("rgb8", (128, 128, 3))
            assert msg.header.frame_id == "camera_color_optical_frame"
            # The crop (x 40..280, all rows) maps column colours 26..186 onto 128 columns.
            tol = 3 if name != "jpeg" else 6
            assert abs(float(img[:, 0, 0].mean()) - 41 * 2 / 3) < tol
            assert abs(float(img[:, -1, 0].mean()) - 279 * 2 / 3) < tol
            assert abs(float(img[-1, :, 1].mean()) - 239) < tol


def test_frames_of_another_size_are_refused_and_counted(tmp_path) -> None:
    """A driver streaming 320x240 into a config made for 640x480 would give the policy another field of view
    after the crop: those frames are dropped, counted in rl/images/<name>/status, and logged once."""
    with ros_session("camera_size", tmp_path) as (procs, probe):
        cfg = write_camera_config(tmp_path, name="front", topic="/cam/image_raw", input_hw_px=[480, 640],
                                  crop_xywh_px=[80, 0, 480, 480], output_hw_px=[64, 64], reliability="reliable")
        procs.start("camera_bridge", namespace="/rig", camera_config=cfg)
        pub = probe.node.create_publisher(Image, "/cam/image_raw", QoSProfile(depth=10))
        out = probe.collect(Image, f"/rig/{names.image_topic('front')}", DEEP_SENSOR)
        status = probe.collect(DiagnosticArray, f"/rig/{names.image_status_topic('front')}", EVENTS)
        small = np.zeros((240, 320, 3), np.uint8)

        def counters() -> dict[str, str]:
            return {kv.key: kv.value for kv in status[-1][1].status[0].values} if status else {}

        def send(img: np.ndarray) -> None:
            pub.publish(image_msg(img, probe.node.get_clock().now().to_msg(), "cam"))
            time.sleep(0.05)

        wait_for(lambda: send(small) or int(counters().get("wrong_size", 0)) >= 5, 30.0,
                 "wrong-size frames counted", procs)
        assert not out, "a wrong-size frame was forwarded"
        assert "dropping 320x240 frames" in status[-1][1].status[0].message
        full = np.zeros((480, 640, 3), np.uint8)
        wait_for(lambda: send(full) or out, 10.0, "a right-size frame forwarded", procs)
        assert image_from_msg(out[-1][1]).shape == (64, 64, 3)
        procs.assert_alive()
        log = procs.logs()
        assert log.count("dropping 320x240 frames") == 1, "warn once per change of size"
