"""The ``mujoco-threads`` backend: N MuJoCo C worlds, each with its own model and data, stepped by native threads.

A world is a CPU env (``ArmEnv``), so an episode starts exactly as the CPU env's ``reset`` starts it (arm
settled at a jittered start, objects placed, per-world domain randomisation written into that world's own
model). Within an episode a world only takes its impedance target and gripper control, steps and copies its
sensors out: a few array copies of Python per world around ``mj_step``, which releases the GIL, so the
physics of all threads runs in parallel. The gate, observations and rewards run once for all worlds in torch
(``BatchedArmEnv``), not once per world in Python: that per-world Python is what held threads beyond the
second waiting for the GIL. Worlds are split into one contiguous share per thread, and each world keeps its
own data and random generator, so results do not depend on the number of threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import mujoco
import numpy as np
import torch

from robot_rl.sim.batched.physics import EpisodeStarts, Physics
from robot_rl.sim.batched.starts import StartPool
from robot_rl.sim.env import ArmEnv
from robot_rl.sim.readings import WorldReadings


def available_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class ThreadsPhysics(Physics):
    name = "mujoco-threads"

    def __init__(self, worlds: Sequence[ArmEnv], num_threads: int | None) -> None:
        super().__init__(worlds[0], len(worlds), torch.device("cpu"), torch.float64)
        self.worlds = list(worlds)
        self.num_threads = min(num_threads or available_cores(), self.num_worlds)
        self._pool = ThreadPoolExecutor(self.num_threads, "robot_rl-world") if self.num_threads > 1 else None
        model = self.template.scene.model
        n = self.num_worlds
        self._sensordata = np.zeros((n, model.nsensordata))
        self._qpos = np.zeros((n, model.nq))
        self._mocap_pos = np.zeros((n, model.nmocap, 3))
        self._target_pos = np.zeros((n, 3))
        self._target_mat = np.zeros((n, 9))
        self._gripper_ctrl = np.zeros(n)
        self._readings = WorldReadings(self.layout, torch.from_numpy(self._sensordata),
                                       torch.from_numpy(self._qpos), torch.from_numpy(self._mocap_pos))

    def readings(self) -> WorldReadings:
        # A fresh readings object per step (its derived quantities are cached), over the same buffers.
        return WorldReadings(self.layout, self._readings.sensordata, self._readings.qpos, self._readings.mocap_pos)

    def control(self, target_pos: torch.Tensor, target_mat: torch.Tensor, gripper_ctrl: torch.Tensor) -> None:
        self._target_pos[:] = target_pos.numpy()
        self._target_mat[:] = target_mat.reshape(-1, 9).numpy()
        self._gripper_ctrl[:] = gripper_ctrl.numpy()

    def step(self, nstep: int) -> None:
        mocap, g = self.target_mocap, self.gripper_actuator

        def step_world(i: int) -> None:
            scene = self.worlds[i].scene
            d = scene.data
            d.mocap_pos[mocap] = self._target_pos[i]
            mujoco.mju_mat2Quat(d.mocap_quat[mocap], self._target_mat[i])  # as the CPU env's set_target
            d.ctrl[g] = self._gripper_ctrl[i]
            mujoco.mj_step(scene.model, d, nstep=nstep)
            self._copy_out(i)

        self._run(step_world, np.arange(self.num_worlds))

    def start_episodes(self, worlds: np.ndarray, seeds: list[int | None],
                       generator: torch.Generator) -> EpisodeStarts:
        def start(k: int) -> None:
            i = int(worlds[k])
            self.worlds[i].reset(seed=seeds[k])
            self._copy_out(i)

        self._run(start, np.arange(len(worlds)))
        return EpisodeStarts.of_envs([self.worlds[int(i)] for i in worlds], self.device, self.dtype)

    def load(self, worlds: np.ndarray, pool: StartPool, picks: torch.Tensor) -> EpisodeStarts:
        for k, i in enumerate(worlds):
            scene, j = self.worlds[int(i)].scene, int(picks[k])
            for field, values in pool.data.items():
                getattr(scene.data, field)[:] = values[j].reshape(getattr(scene.data, field).shape).numpy()
            for field, values in pool.model.items():
                getattr(scene.model, field)[:] = values[j].reshape(getattr(scene.model, field).shape).numpy()
            self._copy_out(int(i))
        return pool.episodes(picks)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        for world in self.worlds:
            world.close()

    # --- internals -----------------------------------------------------------------------------------
    def _copy_out(self, i: int) -> None:
        d = self.worlds[i].scene.data
        self._sensordata[i] = d.sensordata
        self._qpos[i] = d.qpos
        self._mocap_pos[i] = d.mocap_pos

    def _run(self, work: Callable[[int], None], items: np.ndarray) -> None:
        """``work(i)`` for every index in ``items``, one contiguous share per thread."""
        if self._pool is None or len(items) == 1:
            for i in items:
                work(int(i))
            return
        shares = [s for s in np.array_split(items, self.num_threads) if len(s)]
        for done in [self._pool.submit(_each, work, share) for share in shares]:
            done.result()  # re-raises a world's error here, after every share has finished or failed


def _each(work: Callable[[int], None], items: np.ndarray) -> None:
    for i in items:
        work(int(i))
