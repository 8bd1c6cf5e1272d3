"""Domain randomisation hooks: re-sample model parameters from their nominal values at every reset."""

from __future__ import annotations

import mujoco
import numpy as np

from robot_rl.envs.geometry import matrix_to_quat, quat_to_matrix, rotvec_to_matrix
from robot_rl.sim.config import RandomizationConfig
from robot_rl.sim.scene import ArmScene


class DomainRandomizer:
    """Keeps the nominal model values and writes randomised ones into ``scene.model`` on ``apply``."""

    def __init__(self, scene: ArmScene, config: RandomizationConfig) -> None:
        self.scene = scene
        self.config = config
        m = scene.model
        self.nominal_friction = m.geom_friction[:, 0].copy()
        self.nominal_mass = m.body_mass.copy()
        self.nominal_inertia = m.body_inertia.copy()
        self.nominal_damping = m.dof_damping.copy()
        self.nominal_gain = m.actuator_gainprm[:, 0].copy()
        self.nominal_bias = m.actuator_biasprm[:, 1:3].copy()
        self.nominal_cam_pos = m.cam_pos.copy()
        self.nominal_cam_quat = m.cam_quat.copy()
        # Free objects of the task: bodies whose first joint is a free joint.
        self.object_bodies = np.array(
            [b for b in range(m.nbody) if m.body_jntnum[b] and m.jnt_type[m.body_jntadr[b]] == 0], dtype=int
        )
        self.impedance_actuators = np.array(
            [m.actuator(f"imp_{a}").id for a in ("x", "y", "z", "rx", "ry", "rz")]
        )
        self.fixed_cameras = np.array([c for c in range(m.ncam) if m.cam_bodyid[c] == 0], dtype=int)

    def apply(self, rng: np.random.Generator) -> None:
        c, m = self.config, self.scene.model
        if c.friction_scale is not None:
            m.geom_friction[:, 0] = self.nominal_friction * rng.uniform(*c.friction_scale)
        if c.mass_scale is not None and len(self.object_bodies):
            scale = rng.uniform(*c.mass_scale, size=len(self.object_bodies))
            m.body_mass[self.object_bodies] = self.nominal_mass[self.object_bodies] * scale
            m.body_inertia[self.object_bodies] = self.nominal_inertia[self.object_bodies] * scale[:, None]
            # Refresh the constants derived from masses (body_invweight0 sets contact softness): stale ones
            # made light boxes spin up and diverge in contact. Uses data as scratch; the env resets it next.
            mujoco.mj_setConst(m, self.scene.data)
        if c.joint_damping_scale is not None:
            m.dof_damping[:] = self.nominal_damping * rng.uniform(*c.joint_damping_scale)
        if c.actuator_gain_scale is not None:
            scale = rng.uniform(*c.actuator_gain_scale)
            ids = self.impedance_actuators
            m.actuator_gainprm[ids, 0] = self.nominal_gain[ids] * scale
            m.actuator_biasprm[ids, 1:3] = self.nominal_bias[ids] * scale
        for cam in self.fixed_cameras:
            if c.camera_pos_jitter_m > 0:
                m.cam_pos[cam] = self.nominal_cam_pos[cam] + rng.normal(0, c.camera_pos_jitter_m, 3)
            if c.camera_rot_jitter_rad > 0:
                tilt = rotvec_to_matrix(rng.normal(0, c.camera_rot_jitter_rad, 3))
                m.cam_quat[cam] = matrix_to_quat(tilt @ quat_to_matrix(self.nominal_cam_quat[cam]))

    def noisy(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.config.obs_noise_std <= 0:
            return x
        return (x + rng.normal(0.0, self.config.obs_noise_std, x.shape)).astype(x.dtype)
