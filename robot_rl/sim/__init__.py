"""MuJoCo simulation backend (``pip install robot_rl[sim]``): arm, controller, tasks, scripted experts.

Importing this package registers the tasks with gymnasium (``gymnasium.make("robot_rl/PickCube-v0")``).
"""

import os

# Headless rendering by default; must be set before mujoco is first imported.
os.environ.setdefault("MUJOCO_GL", "egl")

from robot_rl.sim.registry import TASKS, make_env, make_expert, register_gymnasium_envs

register_gymnasium_envs()

__all__ = ["TASKS", "make_env", "make_expert", "register_gymnasium_envs"]
