"""``peg_insert``: insert a square peg, already held in the closed gripper, into a randomly placed hole.

The hole is a square opening between four static boxes on the table, ``hole_clearance_m`` (<= 5 mm) wider
than the peg on every side; it moves to a random xy at every reset. As in SERL's real peg task the
episode starts with the peg grasped: ``reset`` places it between the closed fingers, its long axis along
the tool axis. Success (sparse): the peg's bottom face is at least ``insert_depth_m`` below the hole's rim
and its centre is inside the opening.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import torch

from robot_rl.data.symmetry import SymmetryGroup
from robot_rl.envs.contract import Field
from robot_rl.envs.geometry import matrix_to_quat, matrix_to_rot6d
from robot_rl.envs.geometry_torch import matrix_to_rot6d as batched_rot6d
from robot_rl.sim.arm import FINGER_MAX_OPENING_M, frame_sensors
from robot_rl.sim.config import SIM_ARM_SAFETY, ArmEnvConfig
from robot_rl.sim.readings import WorldReadings
from robot_rl.sim.scene import ArmScene
from robot_rl.sim.tasks.base import (
    BASE_AXIS_SYMMETRY,
    Expert,
    Task,
    TaskConfig,
    expert_action,
    move_toward,
    rotate_toward,
    top_down_mat,
)
from robot_rl.sim.tasks.pick_cube import PAD_INNER_OFFSET_M, grasp_yaw, tool_yaw

PARK_POS = (0.0, 0.6, 0.05)  # off the workspace: where the peg sits until the first reset


FINE_STEPS = dataclasses.replace(SIM_ARM_SAFETY, max_step_m=0.01)
"""Insertion needs finer moves: half the sim arm's translation per step at action 1.0."""


@dataclass(frozen=True)
class PegInsertConfig(TaskConfig):
    env: ArmEnvConfig = field(default_factory=lambda: ArmEnvConfig(safety=FINE_STEPS, max_episode_steps=100))
    reward_weights: dict[str, float] = field(default_factory=lambda: {"reach": 0.2, "insert": 0.5})
    symmetry: SymmetryGroup = BASE_AXIS_SYMMETRY
    """Not translations: with the peg in the hole the arm's configuration matters (robot-rl check-symmetry)."""
    peg_half_width_m: float = 0.0125
    """Half the side of the peg's square cross-section (m)."""
    peg_half_length_m: float = 0.04
    peg_mass_kg: float = 0.05
    grasp_offset_m: float = 0.02
    """Peg centre below the TCP along the tool axis at reset (m); the fingers hold its upper part."""
    hole_clearance_m: float = 0.003
    """Gap (m) between peg and hole wall on each side when centred (radial clearance)."""
    hole_height_m: float = 0.04
    """Height of the walls around the hole (m): the hole is this deep."""
    wall_thickness_m: float = 0.02
    hole_xy_low: tuple[float, float] = (0.42, -0.15)
    """Lower corner (m) of the table area the hole's centre is sampled in."""
    hole_xy_high: tuple[float, float] = (0.58, 0.15)
    insert_depth_m: float = 0.02
    """Success: the peg's bottom at least this far (m) below the hole's rim."""

    def __post_init__(self) -> None:
        if not 0 < self.hole_clearance_m <= 0.005:
            raise ValueError(
                f"PegInsertConfig.hole_clearance_m must be in (0, 0.005] m, got {self.hole_clearance_m}"
            )
        if not PAD_INNER_OFFSET_M < self.peg_half_width_m < FINGER_MAX_OPENING_M:
            raise ValueError(
                f"PegInsertConfig.peg_half_width_m must be in (0.004, 0.04) m to fit the fingers, "
                f"got {self.peg_half_width_m}"
            )
        for name in (
            "peg_half_length_m",
            "peg_mass_kg",
            "hole_height_m",
            "wall_thickness_m",
            "insert_depth_m",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"PegInsertConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.insert_depth_m >= self.hole_height_m:
            raise ValueError(
                f"PegInsertConfig.insert_depth_m must be < hole_height_m, got {self.insert_depth_m}"
            )
        if any(lo > hi for lo, hi in zip(self.hole_xy_low, self.hole_xy_high)):
            raise ValueError(
                f"PegInsertConfig.hole_xy_low must be <= hole_xy_high, "
                f"got {self.hole_xy_low} / {self.hole_xy_high}"
            )

    @property
    def hole_half_width_m(self) -> float:
        return self.peg_half_width_m + self.hole_clearance_m


class PegInsert(Task):
    name = "peg_insert"
    privileged_layout = (
        Field("peg_pos", 3, "m, base frame, peg centre", "point"),
        Field("peg_rot6d", 6, "first two columns of the peg's rotation matrix (z = long axis), base frame", "rot6d"),
        Field("hole_pos", 3, "m, base frame, centre of the hole's opening at rim height", "point"),
        Field("peg_bottom_minus_hole", 3, "m, base frame", "vector"),
    )
    config: PegInsertConfig

    def scene_xml(self) -> tuple[str, str]:
        c = self.config
        w, t, h = c.hole_half_width_m, c.wall_thickness_m, c.hole_height_m
        walls = []
        for sx, sy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            # +-x walls span the full outer side; +-y walls fill the gap between them.
            size = (t / 2, w + t, h / 2) if sx else (w, t / 2, h / 2)
            pos = (sx * (w + t / 2), sy * (w + t / 2), h / 2)
            walls.append(
                f'<geom type="box" size="{size[0]} {size[1]} {size[2]}" pos="{pos[0]} {pos[1]} {pos[2]}" '
                f'rgba="0.3 0.45 0.8 1"/>'
            )
        p, x, y, z = c.peg_half_width_m, *PARK_POS
        body = (
            f'<body name="hole" mocap="true" pos="0.5 0 0">{"".join(walls)}</body>'
            f'<body name="peg" pos="{x} {y} {z}"><freejoint name="peg_joint"/>'
            f'<geom name="peg" type="box" size="{p} {p} {c.peg_half_length_m}" mass="{c.peg_mass_kg}" '
            f'rgba="0.9 0.6 0.1 1"/></body>'
        )
        return body, ""

    def sensor_xml(self) -> str:
        return frame_sensors("peg", "xbody", "peg")

    def bind(self, scene: ArmScene) -> None:
        m = scene.model
        self.hole_mocap = m.body_mocapid[m.body("hole").id]
        self.peg_body = m.body("peg").id

    def reset(self, scene: ArmScene, rng: np.random.Generator) -> None:
        c = self.config
        scene.data.mocap_pos[self.hole_mocap] = (*rng.uniform(c.hole_xy_low, c.hole_xy_high), 0.0)
        # The peg between the fingers, its axis along the tool axis; fingers closed onto it.
        mat = scene.tcp_mat()
        scene.set_free_body_pose(
            "peg_joint", scene.tcp_pos() + mat[:, 2] * c.grasp_offset_m, matrix_to_quat(mat)
        )
        scene.data.qpos[scene.finger_qpos_adr] = c.peg_half_width_m - PAD_INNER_OFFSET_M
        scene.data.qvel[:] = 0.0
        scene.set_gripper(0.0)

    # --- state reads -----------------------------------------------------------------------------------
    def hole_pos(self, scene: ArmScene) -> np.ndarray:
        """Centre of the opening at rim height (m)."""
        return scene.data.mocap_pos[self.hole_mocap] + np.array([0.0, 0.0, self.config.hole_height_m])

    def peg_mat(self, scene: ArmScene) -> np.ndarray:
        return scene.body_mat(self.peg_body)

    def peg_bottom(self, scene: ArmScene) -> np.ndarray:
        """Centre of the peg's lower end face (m): the end of its long axis that points down."""
        mat = self.peg_mat(scene)
        axis = mat[:, 2] if mat[2, 2] < 0 else -mat[:, 2]
        return scene.body_pos(self.peg_body) + axis * self.config.peg_half_length_m

    def inside(self, scene: ArmScene) -> bool:
        """The peg's lower end is within the hole's opening laterally."""
        return self._inside(self.peg_bottom(scene), self.hole_pos(scene))

    def depth(self, scene: ArmScene) -> float:
        """How far (m) the peg's lower end is below the hole's rim."""
        return float(self.hole_pos(scene)[2] - self.peg_bottom(scene)[2])

    def _inside(self, bottom: np.ndarray, hole: np.ndarray) -> bool:
        return bool(np.all(np.abs(bottom[:2] - hole[:2]) <= self.config.hole_clearance_m + 1e-3))

    # --- MDP terms -------------------------------------------------------------------------------------
    def privileged(self, scene: ArmScene) -> np.ndarray:
        hole = self.hole_pos(scene)
        peg = scene.body_pos(self.peg_body)
        return np.concatenate(
            [peg, matrix_to_rot6d(self.peg_mat(scene)), hole, self.peg_bottom(scene) - hole]
        )

    @classmethod
    def reward_term_names(cls) -> tuple[str, ...]:
        return ("reach", "insert")

    def reward_terms(self, scene: ArmScene) -> dict[str, float]:
        bottom, hole = self.peg_bottom(scene), self.hole_pos(scene)
        distance = float(np.linalg.norm(bottom - hole))
        depth = (hole[2] - bottom[2]) / self.config.insert_depth_m
        inserted = float(np.clip(depth, 0.0, 1.0)) if self._inside(bottom, hole) else 0.0
        return {"reach": 1.0 - float(np.tanh(10.0 * distance)), "insert": inserted}

    def is_success(self, scene: ArmScene) -> bool:
        bottom, hole = self.peg_bottom(scene), self.hole_pos(scene)
        return bool(hole[2] - bottom[2] >= self.config.insert_depth_m) and self._inside(bottom, hole)

    # --- batched twins ----------------------------------------------------------------------------------
    def _batched_geometry(self, worlds: WorldReadings) -> tuple[torch.Tensor, ...]:
        """(peg centre, peg rotation, peg bottom, hole, inside) of every world."""
        c = self.config
        peg, mat = worlds.frame("peg")
        long_axis = mat[:, :, 2]
        down = torch.where(mat[:, 2:3, 2] < 0, long_axis, -long_axis)
        bottom = peg + down * c.peg_half_length_m
        hole = worlds.mocap_pos[:, self.hole_mocap].clone()
        hole[:, 2] += c.hole_height_m
        inside = ((bottom[:, :2] - hole[:, :2]).abs() <= c.hole_clearance_m + 1e-3).all(dim=-1)
        return peg, mat, bottom, hole, inside

    def batched_privileged(self, worlds: WorldReadings) -> torch.Tensor:
        peg, mat, bottom, hole, _ = self._batched_geometry(worlds)
        return torch.cat([peg, batched_rot6d(mat), hole, bottom - hole], dim=-1)

    def batched_reward_terms(self, worlds: WorldReadings) -> dict[str, torch.Tensor]:
        _, _, bottom, hole, inside = self._batched_geometry(worlds)
        distance = torch.linalg.vector_norm(bottom - hole, dim=-1)
        depth = ((hole[:, 2] - bottom[:, 2]) / self.config.insert_depth_m).clamp(0.0, 1.0)
        inserted = torch.where(inside, depth, torch.zeros_like(depth))
        return {"reach": 1.0 - torch.tanh(10.0 * distance), "insert": inserted}

    def batched_success(self, worlds: WorldReadings) -> torch.Tensor:
        _, _, bottom, hole, inside = self._batched_geometry(worlds)
        return (hole[:, 2] - bottom[:, 2] >= self.config.insert_depth_m) & inside


class PegInsertExpert(Expert):
    """Closed loop on the peg's own pose: carry it over the hole, square it up, drop it in when lined up.

    Position commands are computed for the peg's lower end and applied to the TCP (the peg is rigid in the
    grasp); rotation commands keep the peg upright with its faces parallel to the hole's walls. Near the
    rim the expert descends only while the peg's end is over the opening and otherwise hovers just above
    the rim, so it never grinds the peg into the rim (which would make it slip in the grasp).
    """

    task: PegInsert
    HOVER_M = 0.004  # peg end this far above the rim while lining up
    CARRY_M = 0.015  # ... and this far while still more than 1 cm off laterally

    def __init__(self, task: PegInsert, noise_std: float = 0.0, seed: int = 0) -> None:
        super().__init__(task, noise_std, seed)
        self.reset()

    def reset(self) -> None:
        self.phase = "carry"

    def plan(self, scene: ArmScene) -> np.ndarray:
        env, c = self.task.config.env, self.task.config
        peg_mat = self.task.peg_mat(scene)
        rot = rotate_toward(peg_mat, _upright(peg_mat), env.max_step_rad)
        bottom, hole = self.task.peg_bottom(scene), self.task.hole_pos(scene)
        offset = np.abs(bottom[:2] - hole[:2])
        tilt = float(np.linalg.norm(rot)) * env.max_step_rad
        in_hole = self.task.depth(scene) > 0.002 and self.task.inside(scene)
        over_opening = bool(np.all(offset < c.hole_clearance_m - 0.0005)) and tilt < 0.05
        goal = hole.copy()
        if in_hole or over_opening:
            self.phase = "insert"
            goal[2] -= c.insert_depth_m + 0.01
        elif np.max(offset) < 0.01:
            self.phase = "line_up"
            goal[2] += self.HOVER_M
        else:
            self.phase = "carry"
            goal[2] = max(hole[2] + self.CARRY_M, bottom[2])  # no lower until over the hole
        return expert_action(move_toward(bottom, goal, env.max_step_m), -1.0, rot)


def _upright(peg_mat: np.ndarray) -> np.ndarray:
    """Peg rotation with its long axis pointing down and its faces at the nearest multiple of 90 degrees yaw.

    The hole is axis-aligned, so yaw 0 mod 90 degrees; ``grasp_yaw`` of an axis-aligned frame gives it.
    """
    return top_down_mat(grasp_yaw(np.eye(3), tool_yaw(peg_mat)))
