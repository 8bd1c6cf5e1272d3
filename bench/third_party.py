"""Controllers that record demos in manipulation envs of other libraries, for ``bench/learning.py``.

Each is what a user of that env would write and pass as ``robot-rl train --demo-policy MODULE:NAME``: a
callable from the env's observation dict (as robot_rl flattens it) to its action. ``DEMO_POLICIES`` names the
one for each env id ``bench/learning.py`` knows.
"""

from __future__ import annotations

import numpy as np


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


DEMO_POLICIES = {"panda_gym:PandaPickAndPlace-v3": "third_party:panda_pick_and_place"}
"""env id -> the ``--demo-policy`` that records its demos (``bench/`` is on the path of a benchmark script)."""
