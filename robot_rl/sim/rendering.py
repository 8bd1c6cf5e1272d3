"""Offscreen camera rendering (EGL by default: headless, no display needed)."""

from __future__ import annotations

import os

import mujoco
import numpy as np


class CameraRenderer:
    """One offscreen renderer reused for every named camera; shadows and reflections off for speed."""

    def __init__(self, model: mujoco.MjModel, height: int, width: int) -> None:
        try:
            self._renderer = mujoco.Renderer(model, height, width)
        except mujoco.FatalError as err:
            raise RuntimeError(
                "MuJoCo could not create an offscreen GL context. Set MUJOCO_GL=egl (or osmesa) in the "
                "environment, or import robot_rl.sim before mujoco so it can set it for you. "
                f"MUJOCO_GL is {os.environ.get('MUJOCO_GL')!r}. Original error: {err}"
            ) from err
        self._option = mujoco.MjvOption()
        self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False

    def render(self, camera: str, data: mujoco.MjData) -> np.ndarray:
        """uint8 [H, W, 3] RGB image from ``camera``."""
        self._renderer.update_scene(data, camera=camera, scene_option=self._option)
        return self._renderer.render()

    def close(self) -> None:
        self._renderer.close()
