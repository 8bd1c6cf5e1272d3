"""Image decoding, cropping and resizing for camera paths (numpy; OpenCV only for JPEG/PNG and resizing).

``opencv-python-headless`` is optional: without it raw images are resized with a numpy area/nearest
method and compressed transports raise a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_CHANNELS = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1, "8UC3": 3, "8UC1": 1}


def _cv2():
    try:
        import cv2
    except ImportError:
        return None
    return cv2


def image_to_rgb(encoding: str, height: int, width: int, step: int, data: bytes | memoryview) -> np.ndarray:
    """A sensor_msgs/Image payload -> uint8 [H, W, 3] RGB (zero-copy view when already rgb8 and packed)."""
    channels = _CHANNELS.get(encoding)
    if channels is None:
        raise ValueError(f"unsupported image encoding {encoding!r}; supported: {sorted(_CHANNELS)}")
    buf = np.frombuffer(data, dtype=np.uint8)
    if step < width * channels or buf.size < step * height:
        raise ValueError(f"image too small: {buf.size} B for {height}x{width}x{channels}, step {step}")
    img = buf[: step * height].reshape(height, step)[:, : width * channels].reshape(height, width, channels)
    if encoding in ("bgr8", "bgra8"):
        img = img[:, :, 2::-1]
    elif channels == 4:
        img = img[:, :, :3]
    elif channels == 1:
        img = np.repeat(img, 3, axis=2)
    return img


def require_opencv() -> None:
    """Compressed transports decode with OpenCV: fail at start-up, not on every frame."""
    if _cv2() is None:
        raise ImportError("compressed images need OpenCV: pip install opencv-python-headless")


def compressed_to_rgb(fmt: str, data: bytes | memoryview) -> np.ndarray:
    """A sensor_msgs/CompressedImage payload (JPEG/PNG) -> uint8 [H, W, 3] RGB."""
    require_opencv()
    cv2 = _cv2()
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError(f"could not decode a compressed image (format {fmt!r}, {len(data)} bytes)")
    return bgr[:, :, ::-1]


@dataclass(frozen=True)
class CropResize:
    """Crop (x, y, w, h) px then resize to (out_h, out_w); crops are clamped to the image."""

    crop_xywh: tuple[int, int, int, int] | None
    out_hw: tuple[int, int]

    def __call__(self, rgb: np.ndarray) -> np.ndarray:
        if self.crop_xywh is not None:
            x, y, w, h = self.crop_xywh
            rgb = rgb[y : y + h, x : x + w]
            if rgb.size == 0:
                raise ValueError(f"crop {self.crop_xywh} is outside the image")
        out_h, out_w = self.out_hw
        if rgb.shape[:2] == (out_h, out_w):
            return np.ascontiguousarray(rgb)
        cv2 = _cv2()
        if cv2 is not None:
            shrink = rgb.shape[0] >= out_h and rgb.shape[1] >= out_w
            interp = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
            return cv2.resize(np.ascontiguousarray(rgb), (out_w, out_h), interpolation=interp)
        rows = (np.arange(out_h) * rgb.shape[0] / out_h).astype(int)
        cols = (np.arange(out_w) * rgb.shape[1] / out_w).astype(int)
        return np.ascontiguousarray(rgb[rows][:, cols])
