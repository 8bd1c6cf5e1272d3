"""Manipulation envs of other libraries for ``bench/learning.py``, and the controllers that record their demos.

Each controller is what a user of that env would write and pass as ``robot-rl train --demo-policy MODULE:NAME``:
a callable from the env's observation dict (as robot_rl flattens it) to an action in the learner's [-1, 1].
``DEMO_POLICIES`` names the one for each env id and action box ``bench/learning.py`` knows. Importing this
module registers ``GymHilPickCube-v0`` (``--task third_party:GymHilPickCube-v0``; needs ``pip install --no-deps
gym-hil``).
"""

from __future__ import annotations

import importlib
import inspect

import gymnasium as gym
import numpy as np

from robot_rl.training.env_factory import parse_action_scale


def panda_pick_and_place(obs: dict[str, np.ndarray]) -> np.ndarray:
    """panda-gym's ``PandaPickAndPlace-v3``: over the cube with the fingers open, down, close, carry to the goal.

    Its observation is the end effector's position, velocity and finger width, then the cube's position,
    rotation and velocities; its action a displacement of at most 5 cm per axis and a finger-width change, both
    in [-1, 1]. The cube starts anywhere in a 30 cm square, the goal anywhere in a 30 cm x 30 cm x 20 cm box
    (on the table 30% of the time). Stateless: the phase is read from the observation."""
    state, goal = obs["observation"], obs["desired_goal"]
    tip, width, cube = state[0:3], state[6], state[7:10]
    to_cube = cube - tip
    held = width < 0.045 and np.linalg.norm(to_cube) < 0.02  # the cube is 4 cm wide
    if held:
        target, close = goal, True
    elif np.linalg.norm(to_cube[:2]) > 0.01:  # over the cube first, at least 3 cm above it
        target, close = np.array([cube[0], cube[1], max(tip[2], cube[2] + 0.03)]), False
    elif to_cube[2] < -0.005:
        target, close = cube, False
    else:
        target, close = cube, True
    move = np.clip((target - tip) / 0.05 * 0.5, -1.0, 1.0)  # half the remaining distance per step
    return np.append(move, -1.0 if close else 1.0).astype(np.float32)


def gym_hil_pick_cube(obs: dict[str, np.ndarray]) -> np.ndarray:
    """gym-hil's ``PandaPickCubeBase-v0`` with the cube placed at random: over the cube, down, close, lift.

    Its observation is the arm's 7 joint positions and 7 joint velocities, the gripper command (0-255) and the
    pinch point's position, then the cube's position; its action a target displacement in metres (x, y, z, three
    unused rotations) and a change of the gripper command as a fraction, all in [-1, 1]. Success is the cube
    10 cm above where it started; the episode ends there, or when the cube leaves its 40 x 40 cm area."""
    arm, cube = obs["agent_pos"], obs["environment_state"]
    tip, grip = arm[15:18], arm[14] / 255.0
    to_cube = cube - tip
    if grip > 0.6 and np.linalg.norm(to_cube) < 0.03:  # held: lift
        target, close = cube + np.array([0.0, 0.0, 0.2]), True
    elif np.linalg.norm(to_cube[:2]) > 0.01:  # over the cube first, at least 5 cm above it
        target, close = np.array([cube[0], cube[1], max(tip[2], cube[2] + 0.05)]), grip > 0.3
    elif to_cube[2] < -0.008:
        target, close = cube, False
    else:
        target, close = cube, True
    move = np.clip(target - tip, -0.02, 0.02)  # at most 2 cm per axis and step
    return np.concatenate([move, np.zeros(3), [0.25 if close else -0.25]]).astype(np.float32)


GYM_HIL_ACTION_SCALE = "[0.04, 0.04, 0.04, 0, 0, 0, 0.5]"
"""``--action-scale`` for ``GymHilPickCube-v0``: twice the largest steps of its demos (what training suggests)."""
_GYM_HIL_HALF_RANGES = parse_action_scale(GYM_HIL_ACTION_SCALE).astype(np.float32)


def gym_hil_pick_cube_narrow(obs: dict[str, np.ndarray]) -> np.ndarray:
    """``gym_hil_pick_cube`` for a learner acting through ``GYM_HIL_ACTION_SCALE``: the same motions, in the
    narrowed box's [-1, 1]."""
    scale = _GYM_HIL_HALF_RANGES
    return np.divide(gym_hil_pick_cube(obs), scale, out=np.zeros_like(scale), where=scale > 0)


def make_gym_hil_pick_cube(**kwargs) -> gym.Env:
    """gym-hil 0.1.14's ``PandaPickCubeBase-v0`` with the cube placed at random, runnable under MuJoCo 4.

    gym-hil pins ``mujoco<3.9``; its operational-space controller reads ``MjData.qM``, which MuJoCo 4 replaced,
    so that one call is rewritten to MuJoCo 4's ``mj_fullM(model, data, dst)``. It places the cube with numpy's
    global generator, so ``reset(seed=...)`` seeds that generator too: held-out evaluation seeds then see the same
    cubes every run."""
    import gym_hil  # noqa: F401  (registers the env ids)

    opspace = importlib.import_module("gym_hil.controllers.opspace")
    franka = importlib.import_module("gym_hil.mujoco_gym_env")
    source = inspect.getsource(opspace.opspace)
    if "data.qM" in source:
        namespace = dict(vars(opspace))
        exec(source.replace("mujoco.mj_fullM(model, M, data.qM)", "mujoco.mj_fullM(model, data, M)"), namespace)
        franka.opspace = namespace["opspace"]
    return _SeededCube(gym.make("gym_hil/PandaPickCubeBase-v0", **{"random_block_position": True, **kwargs}))


class _SeededCube(gym.Wrapper):
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            np.random.seed(seed)
        return self.env.reset(seed=seed, options=options)


gym.register("GymHilPickCube-v0", entry_point=make_gym_hil_pick_cube)


DEMO_POLICIES = {("panda_gym:PandaPickAndPlace-v3", ""): "third_party:panda_pick_and_place",
                 ("third_party:GymHilPickCube-v0", ""): "third_party:gym_hil_pick_cube",
                 ("third_party:GymHilPickCube-v0", GYM_HIL_ACTION_SCALE): "third_party:gym_hil_pick_cube_narrow"}
"""(env id, ``--action-scale``) -> the ``--demo-policy`` that records its demos (``bench/`` is on the path of a
benchmark script)."""


def demo_policy_for(task: str, action_scale: str) -> str | None:
    """The controller ``DEMO_POLICIES`` names for ``task`` acting through ``action_scale`` (compared as numbers)."""
    def numbers(text: str) -> list[float]:
        scale = parse_action_scale(text)
        return [] if scale is None else scale.tolist()

    return next((policy for (t, scale), policy in DEMO_POLICIES.items()
                 if t == task and numbers(scale) == numbers(action_scale)), None)
