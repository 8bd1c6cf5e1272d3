"""``CameraBridge``: driver image (raw or compressed) -> cropped/resized rgb8 on ``rl/images/<name>``.

Input QoS follows the publisher (``reliability: auto``): reliable when every publisher on the topic is
reliable (realsense's default), best effort otherwise. A best-effort reader matches both kinds, but with
the Kilted wheels it received only 1-13 of 150 full-size (~1 MB) frames, while reliable-to-reliable got all
of them; so the bridge waits for the publisher, then subscribes to match it. The output (small, 128x128)
is SENSOR (best effort). Stamps and frames are kept. Frames that fail to decode, or whose size is not the
config's ``input_hw_px`` (a crop of them would be another field of view), are dropped, counted and logged (once
per change of size); the counters go out on ``rl/images/<name>/status`` (DiagnosticArray, 1 Hz).
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CompressedImage, Image

from robot_rl.envs import names
from robot_rl.ros.drops import DropLog
from robot_rl.ros.hardware import CameraConfig
from robot_rl.ros.images import CropResize, compressed_to_rgb, require_opencv
from robot_rl.ros.messages import image_from_msg, image_msg
from robot_rl.ros.qos import EVENTS, SENSOR

CAMERA_DROPS = ("bad_frames", "wrong_size", "callback_errors")


class CameraBridge:
    def __init__(self, node: Node, cfg: CameraConfig) -> None:
        self.node, self.cfg = node, cfg
        if cfg.transport == "compressed":
            require_opencv()
        self.process = CropResize(cfg.crop_xywh_px, cfg.output_hw_px)
        self.received = self.published = 0
        self.drops = DropLog(node.get_logger().warning, CAMERA_DROPS)
        self._wrong_size: tuple[int, int] | None = None
        self.group = MutuallyExclusiveCallbackGroup()
        self.pub = node.create_publisher(Image, names.image_topic(cfg.name), SENSOR)
        self.status_pub = node.create_publisher(DiagnosticArray, names.image_status_topic(cfg.name), EVENTS)
        node.create_timer(1.0, self._publish_status, callback_group=self.group)
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

    @property
    def counters(self) -> dict[str, int]:
        return {"received": self.received, "published": self.published, **self.drops.counts}

    def _on_raw(self, msg: Image) -> None:
        self._frame(msg, lambda: image_from_msg(msg))

    def _on_compressed(self, msg: CompressedImage) -> None:
        self._frame(msg, lambda: compressed_to_rgb(msg.format, msg.data))

    def _frame(self, msg: Image | CompressedImage, decode) -> None:
        """Decode, check the size, crop/resize, publish; anything unusable is dropped and counted."""
        self.received += 1
        try:
            rgb = decode()
        except (ValueError, RuntimeError) as err:
            self.drops.drop("bad_frames", f"camera {self.cfg.name}: {err}")
            return
        except Exception as err:  # a decoder's own error type: never kill the node for a frame
            self.drops.drop("callback_errors", f"camera {self.cfg.name}: {type(err).__name__}: {err}")
            return
        size = (int(rgb.shape[0]), int(rgb.shape[1]))
        if size != tuple(self.cfg.input_hw_px):
            self.drops.counts["wrong_size"] += 1
            if size != self._wrong_size:
                self._wrong_size = size
                h, w = self.cfg.input_hw_px
                self.node.get_logger().warning(
                    f"camera {self.cfg.name}: dropping {size[1]}x{size[0]} frames from {self.topic}; the config "
                    f"expects {w}x{h} (input_hw_px); set the driver's profile or the config")
            return
        self._wrong_size = None
        out = self.process(rgb)
        self.pub.publish(image_msg(out, msg.header.stamp, msg.header.frame_id))
        self.published += 1

    def _publish_status(self) -> None:
        counters = self.counters
        level = DiagnosticStatus.OK if self.subscription is not None and self.published else DiagnosticStatus.WARN
        status = DiagnosticStatus(level=level, name=f"{self.node.get_name()}: camera {self.cfg.name}",
                                  hardware_id=self.cfg.driver)
        if self.subscription is None:
            status.message = f"waiting for a publisher on {self.topic}"
        else:
            status.message = f"{self.topic} ({self.reliability})"
            if self._wrong_size is not None:
                h, w = self._wrong_size
                status.message += f"; dropping {w}x{h} frames (input_hw_px {list(self.cfg.input_hw_px)})"
        status.values = [KeyValue(key=k, value=str(v)) for k, v in counters.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.status_pub.publish(msg)
