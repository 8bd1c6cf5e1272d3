"""Standard-DH forward kinematics, geometric Jacobian and damped least squares (numpy, no ROS).

Used by the joint_velocity command backend (UR forward_velocity_controller): TCP twist -> joint speeds.
"""

from __future__ import annotations

import numpy as np

from robot_rl.ros.hardware import KinematicsConfig


class DHChain:
    def __init__(self, cfg: KinematicsConfig) -> None:
        self.a = np.asarray(cfg.a_m, float)
        self.d = np.asarray(cfg.d_m, float)
        self.alpha = np.asarray(cfg.alpha_rad, float)
        self.offset = np.asarray(cfg.offset_rad, float)
        self.tcp = cfg.tcp_offset_m
        self.max_speed = np.asarray(cfg.max_joint_speed_rad_s, float)
        self.damping = cfg.damping
        self.n = len(self.a)

    def frames(self, q: np.ndarray) -> list[np.ndarray]:
        """Homogeneous transforms base->frame_i for i = 0..n (frame n carries the TCP offset)."""
        t = np.eye(4)
        out = [t]
        for i in range(self.n):
            th = q[i] + self.offset[i]
            ct, st = np.cos(th), np.sin(th)
            ca, sa = np.cos(self.alpha[i]), np.sin(self.alpha[i])
            step = np.array([[ct, -st * ca, st * sa, self.a[i] * ct],
                             [st, ct * ca, -ct * sa, self.a[i] * st],
                             [0.0, sa, ca, self.d[i]],
                             [0.0, 0.0, 0.0, 1.0]])
            t = t @ step
            out.append(t)
        tool = np.eye(4)
        tool[2, 3] = self.tcp
        out[-1] = out[-1] @ tool
        return out

    def forward(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = self.frames(q)[-1]
        return t[:3, 3].copy(), t[:3, :3].copy()

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        """[6, n]: rows (v, w) of the TCP in the base frame, for revolute joints."""
        frames = self.frames(q)
        p_end = frames[-1][:3, 3]
        jac = np.zeros((6, self.n))
        for i in range(self.n):
            z, p = frames[i][:3, 2], frames[i][:3, 3]
            jac[:3, i] = np.cross(z, p_end - p)
            jac[3:, i] = z
        return jac

    def joint_velocity(self, q: np.ndarray, linear: np.ndarray, angular: np.ndarray) -> np.ndarray:
        """Damped least squares q_dot for the TCP twist, scaled uniformly into the joint speed limits."""
        jac = self.jacobian(q)
        twist = np.concatenate([linear, angular])
        lam2 = self.damping**2
        qdot = jac.T @ np.linalg.solve(jac @ jac.T + lam2 * np.eye(6), twist)
        ratio = float(np.max(np.abs(qdot) / self.max_speed)) if self.n else 0.0
        return qdot / ratio if ratio > 1.0 else qdot
