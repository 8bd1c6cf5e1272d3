"""``ArmScene``: a compiled MuJoCo arm scene plus the handful of reads and writes the env and tasks need."""

from __future__ import annotations

import mujoco
import numpy as np

from robot_rl.sim.arm import FINGER_MAX_OPENING_M, HOME_QPOS, build_scene_xml


class ArmScene:
    """Owns ``model`` / ``data``; all positions in metres in the world frame (= robot base frame)."""

    def __init__(self, scene_xml: str | None = None) -> None:
        """``scene_xml``: a full scene (``robot_rl.sim.models.task_scene_xml``); None: the arm on its table."""
        self.model = mujoco.MjModel.from_xml_string(scene_xml if scene_xml is not None else build_scene_xml())
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.tcp_site = m.site("tcp").id
        self.ft_site = m.site("ft_site").id
        self.arm_qpos_adr = np.array([m.jnt_qposadr[m.joint(f"link{i}_joint").id] for i in range(1, 8)])
        self.arm_dof_adr = np.array([m.jnt_dofadr[m.joint(f"link{i}_joint").id] for i in range(1, 8)])
        self.finger_qpos_adr = np.array([m.jnt_qposadr[m.joint(f"finger_joint{i}").id] for i in (1, 2)])
        self.gripper_actuator = m.actuator("gripper").id
        self.force_adr = m.sensor_adr[m.sensor("ft_force").id]
        self.torque_adr = m.sensor_adr[m.sensor("ft_torque").id]
        hand_body = m.body("hand").id
        self._hand_subtree = [b for b in range(m.nbody) if self._is_descendant(b, hand_body)]
        self._wrench_bias = np.zeros(6)
        self._vel = np.zeros(6)
        self._quat = np.zeros(4)

    def _is_descendant(self, body: int, ancestor: int) -> bool:
        while body != 0:
            if body == ancestor:
                return True
            body = self.model.body_parentid[body]
        return False

    # --- reset -----------------------------------------------------------------------------------------
    def reset_arm(self, qpos: np.ndarray = HOME_QPOS) -> None:
        """Put the arm at ``qpos`` at rest, gripper open, impedance target on the TCP."""
        d = self.data
        d.qpos[self.arm_qpos_adr] = qpos
        d.qpos[self.finger_qpos_adr] = FINGER_MAX_OPENING_M
        d.qvel[:] = 0.0
        d.ctrl[:] = 0.0
        d.ctrl[self.gripper_actuator] = FINGER_MAX_OPENING_M
        mujoco.mj_forward(self.model, d)
        self.set_target(self.tcp_pos(), self.tcp_mat())

    def tare_wrench(self) -> None:
        """Zero the F/T reading at the current load, as one tares a real wrist sensor at reset."""
        self._wrench_bias = self._raw_wrench()

    # --- reads -----------------------------------------------------------------------------------------
    def tcp_pos(self) -> np.ndarray:
        return self.data.site_xpos[self.tcp_site].copy()

    def tcp_mat(self) -> np.ndarray:
        return self.data.site_xmat[self.tcp_site].reshape(3, 3).copy()

    def tcp_velocity(self) -> tuple[np.ndarray, np.ndarray]:
        """(linear m/s, angular rad/s) of the TCP in the world frame."""
        vel = self._vel
        mujoco.mj_objectVelocity(self.model, self.data, mujoco.mjtObj.mjOBJ_SITE, self.tcp_site, vel, 0)
        return vel[3:].copy(), vel[:3].copy()

    def gripper_opening(self) -> float:
        """0 = closed, 1 = fully open."""
        q = self.data.qpos
        a, b = self.finger_qpos_adr
        return 0.5 * (q[a] + q[b]) / FINGER_MAX_OPENING_M

    def _raw_wrench(self) -> np.ndarray:
        rot = self.data.site_xmat[self.ft_site].reshape(3, 3)
        force = rot @ self.data.sensordata[self.force_adr : self.force_adr + 3]
        torque = rot @ self.data.sensordata[self.torque_adr : self.torque_adr + 3]
        return np.concatenate([force, torque])

    def wrench(self) -> np.ndarray:
        """Force (N) and torque (N m) at the flange, world frame, relative to the last tare."""
        return self._raw_wrench() - self._wrench_bias

    def body_pos(self, body_id: int) -> np.ndarray:
        return self.data.xpos[body_id].copy()

    def body_mat(self, body_id: int) -> np.ndarray:
        return self.data.xmat[body_id].reshape(3, 3).copy()

    def contact_between(self, geoms_a: set[int], geoms_b: set[int]) -> bool:
        d = self.data
        for i in range(d.ncon):
            g1, g2 = d.contact[i].geom1, d.contact[i].geom2
            if (g1 in geoms_a and g2 in geoms_b) or (g1 in geoms_b and g2 in geoms_a):
                return True
        return False

    def body_geoms(self, body_name: str) -> set[int]:
        body = self.model.body(body_name).id
        return {g for g in range(self.model.ngeom) if self.model.geom_bodyid[g] == body}

    # --- writes ----------------------------------------------------------------------------------------
    def set_target(self, pos: np.ndarray, mat: np.ndarray) -> None:
        """Move the impedance controller's reference frame (the mocap target)."""
        self.data.mocap_pos[0] = pos
        mujoco.mju_mat2Quat(self._quat, np.ascontiguousarray(mat).reshape(9))
        self.data.mocap_quat[0] = self._quat

    def set_gripper(self, opening: float) -> None:
        """Command finger opening: 0 closed .. 1 open (the actuator is force-limited)."""
        self.data.ctrl[self.gripper_actuator] = float(np.clip(opening, 0.0, 1.0)) * FINGER_MAX_OPENING_M

    def set_free_body_pose(self, joint_name: str, pos: np.ndarray, quat: np.ndarray | None = None) -> None:
        """Place a free-jointed object; zero its velocity."""
        j = self.model.joint(joint_name).id
        adr, dof = self.model.jnt_qposadr[j], self.model.jnt_dofadr[j]
        self.data.qpos[adr : adr + 3] = pos
        self.data.qpos[adr + 3 : adr + 7] = (1.0, 0.0, 0.0, 0.0) if quat is None else quat
        self.data.qvel[dof : dof + 6] = 0.0

    def step(self, nstep: int) -> None:
        mujoco.mj_step(self.model, self.data, nstep=nstep)

    def forward(self) -> None:
        mujoco.mj_forward(self.model, self.data)
