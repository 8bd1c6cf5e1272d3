"""``pick_cube``: grasp a randomly placed, randomly yawed cube on the table and lift it.

Success (sparse): the cube's centre is at least ``lift_height_m`` above its resting height *and* both
fingers touch it, so a cube knocked or tossed into the air does not count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from robot_rl.data.symmetry import SymmetryGroup
from robot_rl.envs.contract import Field
from robot_rl.envs.geometry import matrix_to_rot6d
from robot_rl.envs.geometry_torch import matrix_to_rot6d as batched_rot6d
from robot_rl.sim.arm import frame_sensors
from robot_rl.sim.config import ArmEnvConfig
from robot_rl.sim.readings import WorldReadings
from robot_rl.sim.scene import ArmScene
from robot_rl.sim.tasks.base import (
    TABLETOP_SYMMETRY,
    Expert,
    Task,
    TaskConfig,
    expert_action,
    move_toward,
    rotate_toward,
    top_down_mat,
)

PAD_INNER_OFFSET_M = 0.004  # finger pad inner face sits this far from the hand's centre plane when closed
PARK_POS = (0.0, 0.6, 0.03)  # off the workspace: where the cube sits until the first reset
PROGRESS_REACH_M = 0.3  # about the largest start distance of the TCP from the cube (0.22-0.32 m measured)


@dataclass(frozen=True)
class PickCubeConfig(TaskConfig):
    env: ArmEnvConfig = field(default_factory=lambda: ArmEnvConfig(max_episode_steps=80))
    reward_weights: dict[str, float] = field(
        default_factory=lambda: {"reach": 0.1, "grasp": 0.25, "lift": 0.5}
    )
    symmetry: SymmetryGroup = TABLETOP_SYMMETRY
    cube_half_size_m: float = 0.0225
    """Half the cube's side (m): a 4.5 cm cube."""
    cube_mass_kg: float = 0.08
    cube_xy_low: tuple[float, float] = (0.38, -0.18)
    """Lower corner (m) of the table area the cube's centre is sampled in."""
    cube_xy_high: tuple[float, float] = (0.6, 0.18)
    cube_yaw_range_rad: float = float(np.pi / 4)
    """Cube yaw is uniform in [-range, range] (a cube repeats every 90 degrees)."""
    lift_height_m: float = 0.05
    """Success: cube centre at least this far above its resting height while held."""

    def __post_init__(self) -> None:
        if not 0.01 <= self.cube_half_size_m <= 0.035:
            raise ValueError(
                f"PickCubeConfig.cube_half_size_m must be in [0.01, 0.035] m (the hand opens to 8 cm), "
                f"got {self.cube_half_size_m}"
            )
        if self.cube_mass_kg <= 0:
            raise ValueError(f"PickCubeConfig.cube_mass_kg must be > 0, got {self.cube_mass_kg}")
        if any(lo > hi for lo, hi in zip(self.cube_xy_low, self.cube_xy_high)):
            raise ValueError(
                f"PickCubeConfig.cube_xy_low must be <= cube_xy_high, "
                f"got {self.cube_xy_low} / {self.cube_xy_high}"
            )
        if not 0 <= self.cube_yaw_range_rad <= np.pi:
            raise ValueError(
                f"PickCubeConfig.cube_yaw_range_rad must be in [0, pi], got {self.cube_yaw_range_rad}"
            )
        if self.lift_height_m <= 0:
            raise ValueError(f"PickCubeConfig.lift_height_m must be > 0, got {self.lift_height_m}")


class PickCube(Task):
    name = "pick_cube"
    privileged_layout = (
        Field("cube_pos", 3, "m, base frame", "point"),
        Field("cube_rot6d", 6, "first two columns of the cube's rotation matrix, base frame", "rot6d"),
        Field("cube_minus_tcp", 3, "m, base frame", "vector"),
    )
    config: PickCubeConfig

    def scene_xml(self) -> tuple[str, str]:
        h, x, y, z = self.config.cube_half_size_m, *PARK_POS
        body = (
            f'<body name="cube" pos="{x} {y} {z}"><freejoint name="cube_joint"/>'
            f'<geom name="cube" type="box" size="{h} {h} {h}" mass="{self.config.cube_mass_kg}" '
            f'rgba="0.85 0.2 0.2 1"/></body>'
        )
        return body, ""

    def sensor_xml(self) -> str:
        return frame_sensors("cube", "xbody", "cube") + "".join(
            f'<contact name="cube_{side}" geom1="cube" body2="{side}_finger" data="found"/>'
            for side in ("left", "right")
        )

    def bind(self, scene: ArmScene) -> None:
        m = scene.model
        self.cube_body = m.body("cube").id
        self.cube_geom = m.geom("cube").id
        self.left_geoms = np.array(sorted(scene.body_geoms("left_finger")))
        self.right_geoms = np.array(sorted(scene.body_geoms("right_finger")))
        self.rest_z = self.config.cube_half_size_m

    def reset(self, scene: ArmScene, rng: np.random.Generator) -> None:
        c = self.config
        x, y = rng.uniform(c.cube_xy_low, c.cube_xy_high)
        yaw = rng.uniform(-c.cube_yaw_range_rad, c.cube_yaw_range_rad)
        quat = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
        scene.set_free_body_pose("cube_joint", np.array([x, y, c.cube_half_size_m]), quat)

    # --- state reads -----------------------------------------------------------------------------------
    def cube_pos(self, scene: ArmScene) -> np.ndarray:
        return scene.body_pos(self.cube_body)

    def cube_mat(self, scene: ArmScene) -> np.ndarray:
        return scene.body_mat(self.cube_body)

    def held(self, scene: ArmScene) -> bool:
        """Both fingers touch the cube."""
        return fingers_touch(scene, self.cube_geom, self.left_geoms, self.right_geoms)

    def lift(self, scene: ArmScene) -> float:
        """Height (m) of the cube centre above its resting height."""
        return float(self.cube_pos(scene)[2] - self.rest_z)

    # --- MDP terms -------------------------------------------------------------------------------------
    def privileged(self, scene: ArmScene) -> np.ndarray:
        pos = self.cube_pos(scene)
        return np.concatenate([pos, matrix_to_rot6d(self.cube_mat(scene)), pos - scene.tcp_pos()])

    @classmethod
    def reward_term_names(cls) -> tuple[str, ...]:
        return ("reach", "grasp", "lift")

    def _distance_grasp_lift(self, scene: ArmScene) -> tuple[float, float, float]:
        """TCP-to-cube distance (m), held (0/1) and lift fraction in [0, 1] (0 unless held)."""
        held = self.held(scene)
        distance = float(np.linalg.norm(self.cube_pos(scene) - scene.tcp_pos()))
        lift = float(np.clip(self.lift(scene) / self.config.lift_height_m, 0.0, 1.0)) if held else 0.0
        return distance, float(held), lift

    def reward_terms(self, scene: ArmScene) -> dict[str, float]:
        distance, grasp, lift = self._distance_grasp_lift(scene)
        return {"reach": 1.0 - float(np.tanh(10.0 * distance)), "grasp": grasp, "lift": lift}

    def progress(self, scene: ArmScene) -> float:
        """reach + grasp + lift, with reach linear in the distance to the cube (0 at ``PROGRESS_REACH_M`` or
        more): the reward's tanh is flat far from the cube, where the expert still closes in steadily."""
        distance, grasp, lift = self._distance_grasp_lift(scene)
        return 1.0 - min(distance / PROGRESS_REACH_M, 1.0) + grasp + lift

    def is_success(self, scene: ArmScene) -> bool:
        return self.lift(scene) >= self.config.lift_height_m and self.held(scene)

    # --- batched twins ----------------------------------------------------------------------------------
    def batched_privileged(self, worlds: WorldReadings) -> torch.Tensor:
        pos, mat = worlds.frame("cube")
        return torch.cat([pos, batched_rot6d(mat), pos - worlds.tcp_pos], dim=-1)

    def _batched_held_lift(self, worlds: WorldReadings) -> tuple[torch.Tensor, torch.Tensor]:
        held = worlds.in_contact("cube_left") & worlds.in_contact("cube_right")
        return held, worlds.sensor("cube_pos")[:, 2] - self.rest_z

    def batched_reward_terms(self, worlds: WorldReadings) -> dict[str, torch.Tensor]:
        held, lift = self._batched_held_lift(worlds)
        distance = torch.linalg.vector_norm(worlds.sensor("cube_pos") - worlds.tcp_pos, dim=-1)
        lifted = (lift / self.config.lift_height_m).clamp(0.0, 1.0)
        return {"reach": 1.0 - torch.tanh(10.0 * distance), "grasp": held.to(distance.dtype),
                "lift": torch.where(held, lifted, torch.zeros_like(lifted))}

    def batched_success(self, worlds: WorldReadings) -> torch.Tensor:
        held, lift = self._batched_held_lift(worlds)
        return (lift >= self.config.lift_height_m) & held


def fingers_touch(scene: ArmScene, geom: int, left: np.ndarray, right: np.ndarray) -> bool:
    """True when ``geom`` is in contact with a geom of each finger (vectorised over the contact list)."""
    con = scene.data.contact
    if scene.data.ncon == 0:
        return False
    g1, g2 = con.geom1, con.geom2
    other = np.concatenate([g2[g1 == geom], g1[g2 == geom]])
    # A handful of contacts against a few finger geoms: a broadcast compare costs a tenth of np.isin.
    return bool((other[:, None] == left).any() and (other[:, None] == right).any())


def grasp_yaw(obj_mat: np.ndarray, current_yaw: float) -> float:
    """Tool yaw (rad) putting the fingers on two opposite faces of a box; the one closest to ``current_yaw``.

    A box lying on any face: its most vertical axis is "up"; the other two give the face normals, and a
    parallel gripper is symmetric under 180 degrees, so the candidates repeat every 90 degrees.
    """
    up = int(np.argmax(np.abs(obj_mat[2])))
    side = obj_mat[:, (up + 1) % 3]
    yaw = float(np.arctan2(side[1], side[0]))
    return current_yaw + (yaw - current_yaw + np.pi / 4) % (np.pi / 2) - np.pi / 4


def tool_yaw(mat: np.ndarray) -> float:
    return float(np.arctan2(mat[1, 0], mat[0, 0]))


class PickCubeExpert(Expert):
    """Phase machine on the live cube pose: approach above (aligning yaw), descend, close, lift.

    Falls back to re-approaching (gripper open) if the cube slips out of the fingers.
    """

    task: PickCube
    HOVER_M = 0.07  # TCP height above the cube centre while aligning
    CLOSE_STEPS = 4  # control steps to let the fingers close before lifting

    def __init__(self, task: PickCube, noise_std: float = 0.0, seed: int = 0) -> None:
        super().__init__(task, noise_std, seed)
        self.reset()

    def reset(self) -> None:
        self.phase = "approach"
        self.timer = 0

    def plan(self, scene: ArmScene) -> np.ndarray:
        env = self.task.config.env
        tcp, mat = scene.tcp_pos(), scene.tcp_mat()
        cube = self.task.cube_pos(scene)
        goal_mat = top_down_mat(grasp_yaw(self.task.cube_mat(scene), tool_yaw(mat)))
        rot = rotate_toward(mat, goal_mat, env.max_step_rad)
        xy_err = float(np.linalg.norm(cube[:2] - tcp[:2]))
        yaw_err = float(np.linalg.norm(rot)) * env.max_step_rad
        rest = self.task.rest_z
        if self.phase == "approach":
            goal = np.array([cube[0], cube[1], cube[2] + self.HOVER_M])
            if xy_err < 0.01 and yaw_err < 0.08 and abs(tcp[2] - goal[2]) < 0.03:
                self.phase = "descend"
            return expert_action(move_toward(tcp, goal, env.max_step_m), 1.0, rot)
        if self.phase == "descend":
            goal = np.array([cube[0], cube[1], max(cube[2], env.safety.workspace_low_m[2])])
            if xy_err > 0.02:
                self.phase = "approach"
            elif tcp[2] - goal[2] < 0.008:
                self.phase, self.timer = "close", 0
            return expert_action(move_toward(tcp, goal, env.max_step_m), 1.0, rot)
        if self.phase == "close":
            self.timer += 1
            if self.timer >= self.CLOSE_STEPS:
                self.phase = "lift"
            return expert_action(np.zeros(3), -1.0)
        # lift: straight up, holding the grasp; re-approach if the cube was lost
        if not self.task.held(scene) or np.linalg.norm(cube - tcp) > 0.03:
            self.phase = "approach"
            return expert_action(np.array([0.0, 0.0, 1.0]), 1.0)
        goal = np.array([tcp[0], tcp[1], rest + 2.0 * self.task.config.lift_height_m])
        return expert_action(move_toward(tcp, goal, env.max_step_m), -1.0)
