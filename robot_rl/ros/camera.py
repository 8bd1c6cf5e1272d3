"""``CameraBridge``: driver image (raw or compressed) -> cropped/resized rgb8 on ``rl/images/<name>``.

Input QoS follows the publisher (``reliability: auto``): reliable when every publisher on the topic is
reliable (realsense's default), best effort otherwise. A best-effort reader matches both kinds, but with
the Kilted wheels it received only 1-13 of 150 full-size (~1 MB) frames, while reliable-to-reliable got all
of them; so the bridge waits for the publisher, then subscribes to match it. The output (small, 128x128)
is SENSOR (best effort). Stamps and frames are kept; frames that fail to decode are counted, never forwarded.
"""

from __future__ import annotations

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image

from robot_rl.ros import names
from robot_rl.ros.hardware import CameraConfig
from robot_rl.ros.images import CropResize, compressed_to_rgb
from robot_rl.ros.messages import image_from_msg, image_msg
from robot_rl.ros.qos import SENSOR


class CameraBridge:
    def __init__(self, node: Node, cfg: CameraConfig) -> None:
        self.node, self.cfg = node, cfg
        self.process = CropResize(cfg.crop_xywh_px, cfg.output_hw_px)
        self.counters = {"received": 0, "published": 0, "bad_frames": 0}
        self.group = MutuallyExclusiveCallbackGroup()
        self.pub = node.create_publisher(Image, names.image_topic(cfg.name), SENSOR)
        suffix = "/compressed" if cfg.transport == "compressed" else ""
        self.topic = node.resolve_topic_name(cfg.topic + suffix)
        self.subscription = None
        self.reliability: str | None = None
        self._timer = node.create_timer(0.2, self._connect, callback_group=self.group)
        self._connect()

    def _connect(self) -> None:
        """Subscribe once the input's publishers are known, with QoS matching them (``reliability``)."""
        if self.subscription is not None:
            return
        choice = self.cfg.reliability
        if choice == "auto":
            pubs = self.node.get_publishers_info_by_topic(self.topic)
            if not pubs:
                return
            reliable = all(p.qos_profile.reliability == ReliabilityPolicy.RELIABLE for p in pubs)
            choice = "reliable" if reliable else "best_effort"
        qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE) if choice == "reliable" else SENSOR
        msg_type, callback = (Image, self._on_raw) if self.cfg.transport == "raw" else (
            CompressedImage, self._on_compressed)
        self.subscription = self.node.create_subscription(msg_type, self.topic, callback, qos,
                                                          callback_group=self.group)
        self.reliability = choice
        self._timer.cancel()
        self.node.get_logger().info(f"camera {self.cfg.name}: subscribed {self.topic} ({choice})")

    def _on_raw(self, msg: Image) -> None:
        self.counters["received"] += 1
        try:
            rgb = image_from_msg(msg)
        except ValueError as err:
            self._bad(err)
            return
        self._publish(rgb, msg)

    def _on_compressed(self, msg: CompressedImage) -> None:
        self.counters["received"] += 1
        try:
            rgb = compressed_to_rgb(msg.format, msg.data)
        except ValueError as err:
            self._bad(err)
            return
        self._publish(rgb, msg)

    def _publish(self, rgb, src: Image | CompressedImage) -> None:
        try:
            out = self.process(rgb)
        except ValueError as err:
            self._bad(err)
            return
        self.pub.publish(image_msg(out, src.header.stamp, src.header.frame_id))
        self.counters["published"] += 1

    def _bad(self, err: Exception) -> None:
        self.counters["bad_frames"] += 1
        if self.counters["bad_frames"] in (1, 10, 100, 1000):
            self.node.get_logger().warning(f"camera {self.cfg.name}: dropped a bad frame ({err})")
