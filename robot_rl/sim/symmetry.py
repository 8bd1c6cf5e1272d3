"""Symmetries checked against the simulator: put an env into the transformed state of another, step both.

``transfer(src, dst, g)`` writes ``g`` applied to ``src``'s whole state into ``dst``: free objects, mocap goals,
the impedance target, the F/T tare and the actions still in the latency queue. The arm's joints follow exactly
when ``g`` fixes the base axis (a mirror about a vertical plane through the base, a rotation about it: the arm's
kinematic chain has those symmetries); otherwise (translations, other centres) the joints come from inverse
kinematics to the moved TCP pose and TCP velocity, so the check also measures how far the arm's own dynamics
are from the symmetry. ``check_symmetry`` then compares ``step(g s, g a)`` with ``g step(s, a)`` field by field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np
import torch

from robot_rl.data.image_symmetry import CameraRule
from robot_rl.data.symmetry import (
    Elements,
    LayoutTransform,
    SymmetryGroup,
    Workspace,
    contract_layouts,
    draw_elements,
    transform_field,
)
from robot_rl.envs.contract import ACTION_DIM, ACTION_LAYOUT, Layout
from robot_rl.envs.geometry import matrix_to_rotvec
from robot_rl.sim.arm import JOINT_LIMITS
from robot_rl.sim.env import ArmEnv
from robot_rl.sim.scene import ArmScene

ARM_MIRROR_SIGN = np.array([-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
"""Joints 1, 3, 5 and 7 turn about axes in the arm's plane of symmetry; a y-mirror negates them."""
HAND_OFFSET_RAD = np.pi / 4
"""The hand sits at -45 deg on link 7, so joint 7 mirrors about +45 deg: q7 -> pi/2 - q7."""


def workspace_of(env: ArmEnv) -> Workspace:
    """The xy of the workspace box the safety gate clips TCP targets to."""
    s = env.cfg.safety
    return Workspace(tuple(s.workspace_low_m[:2]), tuple(s.workspace_high_m[:2]))  # type: ignore[arg-type]


def _one(g: Elements, i: int) -> Elements:
    return Elements(g.theta[i : i + 1], g.reflect[i : i + 1], g.shift[i : i + 1])


def _move(kind: str, values: np.ndarray, g: Elements) -> np.ndarray:
    out = transform_field(kind, torch.as_tensor(np.asarray(values, np.float64))[None], g)
    return out[0].numpy()


def _move_mat(mat: np.ndarray, g: Elements) -> np.ndarray:
    a = g.matrix()[0].double().numpy()
    d = np.diag([1.0, -1.0, 1.0]) if bool(g.reflect[0]) else np.eye(3)
    return a @ mat @ d


def transfer(src: ArmEnv, dst: ArmEnv, g: Elements) -> bool:
    """Write ``g`` (one element) applied to ``src``'s state into ``dst``; False if the arm cannot follow (a
    joint limit, a TCP pose out of reach; ``dst`` is then unusable until reset)."""
    s, d = src.scene, dst.scene
    m = s.model
    s.data.qacc_warmstart[:] = 0.0  # both start the next step from the same solver state
    s.forward()  # positions and velocities read below are those of the current qpos, not of the step before
    d.data.qpos[:], d.data.qvel[:], d.data.ctrl[:] = s.data.qpos, s.data.qvel, s.data.ctrl
    d.data.mocap_pos[:], d.data.mocap_quat[:] = s.data.mocap_pos, s.data.mocap_quat
    for j in range(m.njnt):
        if m.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
            continue
        a, v = m.jnt_qposadr[j], m.jnt_dofadr[j]
        d.data.qpos[a : a + 3] = _move("point", s.data.qpos[a : a + 3], g)
        d.data.qpos[a + 3 : a + 7] = _move("quaternion", s.data.qpos[a + 3 : a + 7], g)
        d.data.qvel[v : v + 3] = _move("vector", s.data.qvel[v : v + 3], g)
        if bool(g.reflect[0]):  # body-frame angular velocity of a body mirrored by A R D: -D w
            d.data.qvel[v + 3 : v + 6] = s.data.qvel[v + 3 : v + 6] * np.array([-1.0, 1.0, -1.0])
    for k in range(1, m.nmocap):  # 0 is the impedance target, set from the env's own target below
        d.data.mocap_pos[k] = _move("point", s.data.mocap_pos[k], g)
        d.data.mocap_quat[k] = _move("quaternion", s.data.mocap_quat[k], g)
    if not _move_arm(src, dst, g):
        return False
    dst._target_pos = _move("point", src._target_pos, g)
    dst._target_mat = _move_mat(src._target_mat, g)
    dst._gripper_open, dst._steps = src._gripper_open, src._steps
    dst._latency.clear()
    for queued in src._latency:
        dst._latency.append(_move_action(queued, g))
    bias = s._wrench_bias
    d._wrench_bias = np.concatenate([_move("vector", bias[:3], g), _move("axial", bias[3:], g)])
    d.set_target(dst._target_pos, dst._target_mat)
    d.data.qacc_warmstart[:] = 0.0
    d.forward()
    return True


def _move_action(action: np.ndarray, g: Elements) -> np.ndarray:
    moved = LayoutTransform(ACTION_LAYOUT, "action")(torch.as_tensor(action, dtype=torch.float64)[None], g)
    return moved[0].numpy().astype(np.float32)


def _move_arm(src: ArmEnv, dst: ArmEnv, g: Elements) -> bool:
    s, d = src.scene, dst.scene
    qa, qv = s.arm_qpos_adr, s.arm_dof_adr
    q, qd = s.data.qpos[qa].copy(), s.data.qvel[qv].copy()
    if bool(g.reflect[0]):  # first the y-mirror, exact in joint space ...
        q, qd = q * ARM_MIRROR_SIGN, qd * ARM_MIRROR_SIGN
        q[6] = 2 * HAND_OFFSET_RAD - s.data.qpos[qa[6]]
    q[0] += float(g.theta[0])  # ... then the rotation about the base axis, exact too
    d.data.qpos[qa], d.data.qvel[qv] = q, qd
    if float(g.shift.abs().max()) > 1e-9:  # an axis other than the base's: solve for the moved TCP
        d.forward()
        if _solve_tcp(d, _move("point", s.tcp_pos(), g), _move_mat(s.tcp_mat(), g)) > 1e-6:
            return False  # out of the arm's reach
        linvel, angvel = s.tcp_velocity()
        _solve_tcp_velocity(d, _move("vector", linvel, g), _move("axial", angvel, g))
    q = d.data.qpos[qa]
    return bool(np.all(q >= JOINT_LIMITS[:, 0]) and np.all(q <= JOINT_LIMITS[:, 1]))


def _tcp_jacobian(scene: ArmScene) -> np.ndarray:
    jp, jr = np.zeros((3, scene.model.nv)), np.zeros((3, scene.model.nv))
    mujoco.mj_jacSite(scene.model, scene.data, jp, jr, scene.tcp_site)
    return np.vstack([jp, jr])[:, scene.arm_dof_adr]


def _solve_tcp(scene: ArmScene, pos: np.ndarray, mat: np.ndarray, iterations: int = 100) -> float:
    """Damped least squares on the 7 arm joints until the TCP is at (pos, mat); returns the pose error left."""
    for _ in range(iterations):
        err = np.concatenate([pos - scene.tcp_pos(), matrix_to_rotvec(mat @ scene.tcp_mat().T)])
        if np.linalg.norm(err) < 1e-10:
            break
        jac = _tcp_jacobian(scene)
        step = jac.T @ np.linalg.solve(jac @ jac.T + 1e-8 * np.eye(6), err)
        scene.data.qpos[scene.arm_qpos_adr] += step
        mujoco.mj_kinematics(scene.model, scene.data)
        mujoco.mj_comPos(scene.model, scene.data)
    return float(np.linalg.norm(err))


def _solve_tcp_velocity(scene: ArmScene, linvel: np.ndarray, angvel: np.ndarray) -> None:
    scene.forward()
    jac = _tcp_jacobian(scene)
    scene.data.qvel[scene.arm_dof_adr] = np.linalg.lstsq(jac, np.concatenate([linvel, angvel]), rcond=None)[0]


# -------------------------------------------------------------------------------------------------- check
@dataclass(frozen=True)
class Thresholds:
    """What a group must meet to be trained with. Per field, the 90th percentile of the one-step error over the
    checked steps: a percentile, because a step in which contacts make or break (a block tipping on an edge, a
    peg sliding into its hole: up to 8% of the steps of ``peg_insert``) diverges from any twin while a wrong
    rule or an asymmetric scene shows on most steps (the report prints the maximum too)."""

    position_m: float = 1e-3
    """Positions and displacements (m)."""
    orientation: float = 0.028
    """rot6d entries: sqrt(2) x 0.02 rad, the turn that moves a point 5 cm from the centre (an object's
    corner, a fingertip) by ``position_m``."""
    disagreement_rate: float = 0.02
    """Share of checked steps whose success (or reward, beyond 1e-3) may differ: an object exactly on the
    success boundary flips either way."""


@dataclass
class FieldError:
    key: str
    field: str
    kind: str
    unit: str
    errors: list[float] = field(default_factory=list)

    @property
    def checked(self) -> bool:
        return self.kind in ("point", "rot6d") or (self.kind == "vector" and self.unit.startswith("m,"))

    def limit(self, t: Thresholds) -> float | None:
        if not self.checked:
            return None
        return t.orientation if self.kind == "rot6d" else t.position_m

    def passed(self, t: Thresholds) -> bool:
        limit = self.limit(t)
        return limit is None or not self.errors or self.p90 < limit

    @property
    def p90(self) -> float:
        return float(np.percentile(self.errors, 90)) if self.errors else 0.0


@dataclass
class SymmetryReport:
    group: str
    steps: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    fields: list[FieldError] = field(default_factory=list)
    reward_disagreements: int = 0
    success_disagreements: int = 0

    def failures(self, t: Thresholds) -> list[str]:
        out = [f"{f.key}.{f.field} ({f.kind}): 90th-percentile error {f.p90:.2e} >= {f.limit(t):g}"
               for f in self.fields if not f.passed(t)]
        for name, count in (("reward", self.reward_disagreements), ("success", self.success_disagreements)):
            if count > t.disagreement_rate * self.steps:
                out.append(f"{name}: differs on {count} of {self.steps} steps")
        return out

    def lines(self, t: Thresholds) -> list[str]:
        rows = [f"group: {self.group}; {self.steps} transformed steps checked"
                + (f" (skipped: {', '.join(f'{v} {k}' for k, v in self.skipped.items())})" if self.skipped else "")]
        rows.append(f"{'field':34s} {'kind':10s} {'median':>9s} {'p90':>9s} {'max':>9s}  limit")
        for f in self.fields:
            e = np.asarray(f.errors or [0.0])
            limit = f.limit(t)
            verdict = "-" if limit is None else (f"{limit:g} ok" if f.passed(t) else f"{limit:g} FAIL")
            rows.append(f"{f.key + '.' + f.field:34s} {f.kind:10s} {np.median(e):9.2e} {np.percentile(e, 90):9.2e} "
                        f"{e.max():9.2e}  {verdict}")
        rows.append(f"reward differs on {self.reward_disagreements}, success on {self.success_disagreements} of "
                    f"{self.steps} steps")
        return rows


def check_symmetry(env: ArmEnv, twin: ArmEnv, group: SymmetryGroup, states: int = 100, seed: int = 0,
                   expert_noise: float = 0.3, check_every: int = 6) -> SymmetryReport:
    """Check ``states`` steps: the task's expert (with noise) runs episodes, and about one step in
    ``check_every`` is a random action instead, taken from the state and from its transform by a random element
    in ``twin`` (a second env of the same task) with the transformed action."""
    from robot_rl.sim.registry import make_expert  # the registry imports the tasks, which import this package

    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    privileged = env.task.privileged_layout if "privileged" in env.observation_space.spaces else ()
    layouts: dict[str, Layout] = contract_layouts(privileged, base_action=False)
    transforms = {k: LayoutTransform(v, f"observation {k!r}") for k, v in layouts.items()}
    workspace = workspace_of(env)
    report = SymmetryReport(group.describe())
    report.fields = [FieldError(k, f.name, f.kind, f.unit) for k, lay in layouts.items() for f in lay.fields
                     if f.kind != "scalar"]

    def skip(reason: str) -> None:
        report.skipped[reason] = report.skipped.get(reason, 0) + 1

    twin.reset(seed=seed + 10_000)
    while report.steps < states:
        episode = int(rng.integers(1 << 30))
        obs, _ = env.reset(seed=episode)
        expert = make_expert(env, noise_std=expert_noise, seed=episode)
        done = False
        while not done and report.steps < states:
            if rng.random() >= 1.0 / check_every:
                obs, _, terminated, truncated, _ = env.step(expert.act(env.scene))
                done = terminated or truncated
                continue
            g = _one(draw_elements(group, 1, generator), 0)
            action = rng.uniform(-1, 1, ACTION_DIM).astype(np.float32)
            moved_action = _move_action(action, g)
            if np.abs(moved_action).max() > 1.0 or not _inside(env, obs, layouts, g, workspace):
                skip("elements leaving the workspace or action box")
                continue
            if not transfer(env, twin, g):
                skip("elements the arm cannot follow (joint limit, reach)")
                twin.reset(seed=seed + 10_000)
                continue
            obs_t, reward_t, *_, info_t = twin.step(moved_action)
            obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            for f in report.fields:
                sl = layouts[f.key].slice(f.field)
                expected = transforms[f.key](torch.as_tensor(obs[f.key], dtype=torch.float64)[None], g)[0].numpy()
                f.errors.append(float(np.linalg.norm(obs_t[f.key][sl] - expected[sl])))
            report.reward_disagreements += int(abs(reward - reward_t) > 1e-3)
            report.success_disagreements += int(bool(info["is_success"]) != bool(info_t["is_success"]))
            report.steps += 1
    return report


def _inside(env: ArmEnv, obs: dict[str, np.ndarray], layouts: dict[str, Layout], g: Elements,
            workspace: Workspace) -> bool:
    """Every point of the observation and the impedance target stays in the workspace's xy."""
    points = [env._target_pos[:2]]
    for key, layout in layouts.items():
        for f in layout.fields:
            if f.kind == "point":
                points.append(obs[key][layout.slice(f.name)][:2])
    lo, hi = np.asarray(workspace.xy_low), np.asarray(workspace.xy_high)
    for p in points:
        q = _move("point", p, g)
        if np.any(q < lo) or np.any(q > hi):
            return False
    return True



# ------------------------------------------------------------------------------------------------ images
def table_homography(scene: ArmScene, camera: str, height: int, width: int) -> np.ndarray:
    """Table plane (z = 0, xy in m) -> continuous pixel coordinates of ``camera``'s image (row 0 at the top),
    from the camera's pose and vertical field of view (MuJoCo's pinhole: x right, y up, looking along -z)."""
    m = scene.model
    cam = m.camera(camera).id
    mujoco.mj_kinematics(m, scene.data)
    mujoco.mj_camlight(m, scene.data)
    pos, rot = scene.data.cam_xpos[cam], scene.data.cam_xmat[cam].reshape(3, 3)
    f = 0.5 * height / np.tan(np.radians(m.cam_fovy[cam]) / 2)
    plane_to_camera = rot.T @ np.column_stack([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], -pos])
    intrinsics = np.array([[f, 0.0, -width / 2], [0.0, -f, -height / 2], [0.0, 0.0, -1.0]])
    h = intrinsics @ plane_to_camera
    return h / h[2, 2]


def camera_rules(env: ArmEnv, height: int, width: int) -> dict[str, CameraRule]:
    """The simulated cameras' rules: ``wrist`` rides on the hand in its plane of symmetry (a mirror flips its
    view); every other camera is fixed in the world (its table homography from the model)."""
    return {name: CameraRule("wrist", mirror="flip") if name == "wrist" else
            CameraRule("fixed", tuple(map(tuple, table_homography(env.scene, name, height, width))))
            for name in env.cfg.cameras}


@dataclass
class ImageReport:
    camera: str
    psnr_db: list[float] = field(default_factory=list)
    table_share: list[float] = field(default_factory=list)
    """Share of the image compared (table-plane pixels in both views; all pixels for a wrist camera)."""


def check_image_warps(env: ArmEnv, twin: ArmEnv, group: SymmetryGroup, states: int = 20, seed: int = 0,
                      size: int = 96) -> list[ImageReport]:
    """The warped image of each camera against the image rendered in the transformed scene: PSNR over the
    pixels that show the table in both (for the wrist camera, over the whole image)."""
    from robot_rl.data.image_symmetry import transform_images
    from robot_rl.sim.registry import make_expert

    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    rules = camera_rules(env, size, size)
    renderer = mujoco.Renderer(env.scene.model, size, size)
    table = env.scene.model.geom("table").id
    reports = {name: ImageReport(name) for name in rules}
    privileged = env.task.privileged_layout if "privileged" in env.observation_space.spaces else ()
    layouts = contract_layouts(privileged, base_action=False)
    twin.reset(seed=seed + 10_000)
    done = 0
    while done < states:
        obs, _ = env.reset(seed=int(rng.integers(1 << 30)))
        expert = make_expert(env, noise_std=0.3, seed=done)
        for _ in range(int(rng.integers(0, 15))):
            obs, *_ = env.step(expert.act(env.scene))
        g = _one(draw_elements(group, 1, generator), 0)
        if not _inside(env, obs, layouts, g, workspace_of(env)) or not transfer(env, twin, g):
            twin.reset(seed=seed + 10_000)
            continue
        for name, rule in rules.items():
            image, seg = _render(renderer, env, name)
            image_t, seg_t = _render(renderer, twin, name)
            warped = transform_images(rule, torch.as_tensor(image)[None], g)[0].numpy()
            if rule.mount == "fixed":
                on_table = ((seg[..., 0] == table) & (seg[..., 1] == mujoco.mjtObj.mjOBJ_GEOM)).astype(np.uint8)
                moved = transform_images(rule, torch.as_tensor(on_table[..., None] * 255)[None], g)[0, ..., 0]
                mask = (moved.numpy() == 255) & (seg_t[..., 0] == table) & (seg_t[..., 1] == mujoco.mjtObj.mjOBJ_GEOM)
            else:
                mask = np.ones(image.shape[:2], bool)
            if mask.sum() < 0.05 * mask.size:
                continue
            mse = float(((warped.astype(float) - image_t.astype(float)) ** 2)[mask].mean())
            reports[name].psnr_db.append(10 * np.log10(255.0**2 / max(mse, 1e-10)))
            reports[name].table_share.append(float(mask.mean()))
        done += 1
    renderer.close()
    return list(reports.values())


def _render(renderer: mujoco.Renderer, env: ArmEnv, camera: str) -> tuple[np.ndarray, np.ndarray]:
    renderer.update_scene(env.scene.data, camera=camera)
    image = renderer.render().copy()
    renderer.enable_segmentation_rendering()
    renderer.update_scene(env.scene.data, camera=camera)
    seg = renderer.render().copy()
    renderer.disable_segmentation_rendering()
    return image, seg
