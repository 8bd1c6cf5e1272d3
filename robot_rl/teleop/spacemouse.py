"""3Dconnexion SpaceMouse over raw HID (``pip install hidapi``, imported lazily); reports parsed here.

HID input reports (little-endian int16 counts, about +-350 at full deflection):
  id 1, 7 bytes    translation x, y, z (bytes 1-6)            SpaceNavigator, SpaceMouse Compact
  id 1, 13 bytes   translation (bytes 1-6) + rotation (7-12)   SpaceMouse Wireless / Pro Wireless / Enterprise
  id 2, 7 bytes    rotation rx, ry, rz (bytes 1-6)
  id 3             button bitmask, little-endian from byte 1 (bit 0 left / menu, bit 1 right / fit)

The raw frame is x right, y toward the operator, z down; ``parse_report`` turns it into x right, y away
from the operator, z up (a 180 degree turn about x, applied to translations and rotations alike), as
normalised floats. ``JoyConfig`` (default ``spacemouse_hid()``) then maps those axes into the robot frame.
On Linux the hidraw node must be readable: a udev rule such as
``KERNEL=="hidraw*", ATTRS{idVendor}=="256f", MODE="0666"`` (and ``046d`` for old SpaceNavigators).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from robot_rl.teleop.joy import JoyConfig, JoyDevice, spacemouse_hid

VENDOR_IDS = (0x256F, 0x046D)  # 3Dconnexion; Logitech (older SpaceNavigator / SpaceExplorer)
MAX_BUTTONS = 32
_FLIP = (1.0, -1.0, -1.0)  # raw (x right, y toward operator, z down) -> (x right, y away, z up)


@dataclass(frozen=True)
class SpaceMouseState:
    """Parsed device state: axes (x, y, z, rx, ry, rz) in [-1, 1] and per-button levels."""

    axes: tuple[float, ...] = (0.0,) * 6
    buttons: tuple[int, ...] = (0,) * MAX_BUTTONS


def _axes3(report: bytes, start: int, axis_scale: float) -> tuple[float, float, float]:
    raw = struct.unpack_from("<3h", report, start)
    return tuple(max(-1.0, min(1.0, f * v / axis_scale)) for f, v in zip(_FLIP, raw))  # type: ignore[return-value]


def parse_report(report: Sequence[int] | bytes, state: SpaceMouseState, axis_scale: float = 350.0) -> SpaceMouseState:
    """One raw HID input report -> the updated state (unknown or short reports leave it unchanged)."""
    data = bytes(report)
    if not data:
        return state
    axes = list(state.axes)
    if data[0] == 1 and len(data) >= 7:
        axes[0:3] = _axes3(data, 1, axis_scale)
        if len(data) >= 13:
            axes[3:6] = _axes3(data, 7, axis_scale)
        return replace(state, axes=tuple(axes))
    if data[0] == 2 and len(data) >= 7:
        axes[3:6] = _axes3(data, 1, axis_scale)
        return replace(state, axes=tuple(axes))
    if data[0] == 3 and len(data) >= 2:
        bits = int.from_bytes(data[1:5], "little")
        return replace(state, buttons=tuple((bits >> i) & 1 for i in range(MAX_BUTTONS)))
    return state


@dataclass(frozen=True)
class SpaceMouseConfig:
    vendor_id: int = 0
    """USB vendor id; 0: the first device of a known 3Dconnexion vendor (0x256f, 0x046d)."""
    product_id: int = 0
    """USB product id; 0: any product of that vendor."""
    path: str = ""
    """hidraw path (``/dev/hidraw3``) instead of ids, when several devices are plugged in."""
    axis_scale: float = 350.0
    """Raw counts at full deflection (330-350 on most models)."""
    max_reports_per_read: int = 64
    """Reports drained per ``read`` (the device sends ~100 Hz; the control loop runs at ~10 Hz)."""
    mapping: JoyConfig = field(default_factory=spacemouse_hid)

    def __post_init__(self) -> None:
        if not self.axis_scale > 0:
            raise ValueError(f"SpaceMouseConfig.axis_scale must be > 0, got {self.axis_scale}")
        if self.max_reports_per_read < 1:
            raise ValueError(f"SpaceMouseConfig.max_reports_per_read must be >= 1, got {self.max_reports_per_read}")


class SpaceMouse(JoyDevice):
    """SpaceMouse ``Teleoperator``: hidapi opens the device non-blocking; ``read`` drains and parses reports."""

    name = "spacemouse"

    def __init__(self, config: SpaceMouseConfig | None = None) -> None:
        self.config = config or SpaceMouseConfig()
        super().__init__(self.config.mapping)
        self.state = SpaceMouseState()
        self._device = None

    def connect(self) -> None:
        try:
            import hid  # the ``hidapi`` package
        except ImportError as err:
            raise ImportError("SpaceMouse needs hidapi: pip install hidapi (or robot_rl[teleop])") from err
        cfg = self.config
        device = hid.device()
        if cfg.path:
            device.open_path(cfg.path.encode())
        else:
            vendors = (cfg.vendor_id,) if cfg.vendor_id else VENDOR_IDS
            found = [d for v in vendors for d in hid.enumerate(v, cfg.product_id)]
            if not found:
                raise OSError(
                    f"no SpaceMouse found (vendor ids {[hex(v) for v in vendors]}); check the USB cable / receiver "
                    "and the udev rule that makes /dev/hidraw* readable"
                )
            device.open_path(found[0]["path"])
        device.set_nonblocking(1)
        self._device = device
        super().connect()

    def disconnect(self) -> None:
        if self._device is not None:
            self._device.close()
            self._device = None
        super().disconnect()

    def feed(self, report: Sequence[int] | bytes) -> None:
        """Parse one raw report (what ``poll`` does for each report read from the device)."""
        self.state = parse_report(report, self.state, self.config.axis_scale)

    def poll(self) -> tuple[Sequence[float], Sequence[int]]:
        if self._device is not None:
            for _ in range(self.config.max_reports_per_read):
                report = self._device.read(64)
                if not report:
                    break
                self.feed(report)
        return self.state.axes, self.state.buttons
