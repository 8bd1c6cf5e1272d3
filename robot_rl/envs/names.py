"""Topic names and named-vector labels of the RL interface over ROS 2: the contract on the wire (pure Python:
shared by the nodes, the ROS env, recordings of episodes and tests).

RL vectors travel as ``sensor_msgs/JointState`` used as a *named vector*: ``name`` = labels, ``position`` =
values, ``header.stamp`` = stamp of the source observation. Stamped, self-describing, a standard message.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robot_rl.envs.contract import STATE_LAYOUT

ACTION_NAMES = ("dx", "dy", "dz", "drx", "dry", "drz", "gripper")
INTERVENTION_NAMES = ("active", *ACTION_NAMES)
EXECUTED_NAMES = (*ACTION_NAMES, "intervention", "safety_clipped", "refused", "state", "command_stamp")
"""``rl/executed_action``: the action the bridge executed (zeros when refused: the arm held), flags, the safety
filter's state (``robot_rl.safety.filter.state_index``) and the stamp (s) of the command it sent (``NO_COMMAND``:
none). No NaN goes out on any topic."""
NO_COMMAND = -1.0
REWARD_NAMES = ("reward", "success")
STATE_NAMES = tuple(STATE_LAYOUT.names())

ACTION = "rl/action"
INTERVENTION = "rl/intervention"
ROBOT_STATE = "rl/robot_state"
EXECUTED_ACTION = "rl/executed_action"
STATUS = "rl/status"
ESTOP = "rl/estop"
REWARD = "rl/reward"
PRIVILEGED = "rl/privileged"


def image_topic(camera: str) -> str:
    return f"rl/images/{camera}"


def image_status_topic(camera: str) -> str:
    """The camera bridge's counters (DiagnosticArray)."""
    return f"rl/images/{camera}/status"


def vector_labels(key: str, size: int) -> list[str]:
    """The labels a vector travels with (recordings, datasets): the contract's names where ``key`` and ``size``
    are the contract's ``state`` or ``action``, ``key[i]`` otherwise."""
    if key == "state" and size == len(STATE_NAMES):
        return list(STATE_NAMES)
    if key == "action" and size == len(ACTION_NAMES):
        return list(ACTION_NAMES)
    return [f"{key}[{i}]" for i in range(size)]


def pick(names: Sequence[str], values: Sequence[float], wanted: Sequence[str]) -> np.ndarray | None:
    """Values of ``wanted`` labels (any order in the message); None when one is missing or counts differ."""
    if len(names) != len(values):
        return None
    if tuple(names) == tuple(wanted):
        return np.asarray(values, dtype=np.float64)
    index = {n: i for i, n in enumerate(names)}
    try:
        return np.asarray([values[index[w]] for w in wanted], dtype=np.float64)
    except KeyError:
        return None
