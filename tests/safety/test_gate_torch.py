"""The batched torch gate equals the numpy gate, world by world, on random and boundary inputs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from robot_rl.envs.geometry import rotvec_to_matrix
from robot_rl.safety import gate
from robot_rl.safety.gate_torch import BatchedGate
from robot_rl.sim.config import SIM_ARM_SAFETY


def random_poses(rng: np.random.Generator, n: int, limits) -> tuple[np.ndarray, np.ndarray]:
    """Targets inside the box and the cone (as the gate keeps them), some on the box faces and at the cone's edge."""
    low, high = np.asarray(limits.workspace_low_m), np.asarray(limits.workspace_high_m)
    pos = rng.uniform(low, high, (n, 3))
    pos[: n // 8] = np.where(rng.random((n // 8, 3)) < 0.5, low, high)
    cone = limits.max_tilt_rad if limits.max_tilt_rad is not None else 1.2
    mats = []
    for i in range(n):
        down = np.diag([1.0, -1.0, -1.0])
        tilt = rng.uniform(0, cone) if i % 5 else cone - 1e-7  # at the edge (exactly on it, rounding decides)
        axis = rng.normal(size=3) * [1, 1, 0]
        axis /= np.linalg.norm(axis)
        yaw = rotvec_to_matrix(np.array([0, 0, rng.uniform(-np.pi, np.pi)]))
        mats.append(rotvec_to_matrix(axis * tilt) @ yaw @ down)
    return pos, np.stack(mats)


@pytest.mark.parametrize("limits", [SIM_ARM_SAFETY, dataclasses.replace(SIM_ARM_SAFETY, max_tilt_rad=None)],
                         ids=["cone", "no-cone"])
def test_pose_step_matches_the_numpy_gate_world_by_world(limits) -> None:
    rng = np.random.default_rng(0)
    n = 400
    last_pos, last_rot = random_poses(rng, n, limits)
    # Measured poses near the targets, some far enough for reference limiting to act.
    measured_pos = last_pos + rng.normal(0, 0.03, (n, 3))
    measured_rot = np.stack([rotvec_to_matrix(rng.normal(0, 0.25, 3)) @ r for r in last_rot])
    actions = np.clip(rng.uniform(-1, 1, (n, 7)) * rng.choice([1.0, 4.0], (n, 1)), -1, 1)
    actions[:20, 3:6] = 0.0  # no rotation
    want_pos, want_rot, want_clipped = [], [], []
    for i in range(n):
        reasons: list[str] = []
        p, r = gate.pose_step((last_pos[i], last_rot[i]), actions[i], (measured_pos[i], measured_rot[i]), limits,
                              reasons)
        want_pos.append(p)
        want_rot.append(r)
        want_clipped.append(any(x.startswith("clipped_") for x in reasons))
    t = lambda x: torch.tensor(np.asarray(x), dtype=torch.float64)  # noqa: E731
    batched = BatchedGate(limits, torch.device("cpu"), torch.float64)
    pos, rot, clipped = batched.pose_step((t(last_pos), t(last_rot)), t(actions), (t(measured_pos), t(measured_rot)))
    np.testing.assert_allclose(pos.numpy(), np.stack(want_pos), atol=1e-12)
    np.testing.assert_allclose(rot.numpy(), np.stack(want_rot), atol=1e-9)
    np.testing.assert_array_equal(clipped.numpy(), np.array(want_clipped))
    assert 0.2 < np.mean(want_clipped) < 0.95  # both outcomes are exercised


def test_float32_worlds_stay_inside_the_limits() -> None:
    """The GPU backend's precision: every target stays inside the box and cone, within float32 rounding."""
    rng = np.random.default_rng(1)
    limits = SIM_ARM_SAFETY
    n = 256
    pos, rot = (torch.tensor(x, dtype=torch.float32) for x in random_poses(rng, n, limits))
    g = BatchedGate(limits, torch.device("cpu"), torch.float32)
    for _ in range(30):
        action = torch.tensor(np.clip(rng.uniform(-2, 2, (n, 7)), -1, 1), dtype=torch.float32)
        new_pos, new_rot, _ = g.pose_step((pos, rot), action, (pos, rot))
        assert torch.all(torch.linalg.vector_norm(new_pos - pos, dim=-1) <= limits.max_translation_step_m + 1e-6)
        assert torch.all(new_pos >= g.low - 1e-6) and torch.all(new_pos <= g.high + 1e-6)
        assert torch.all(g.tool_tilt(new_rot) <= limits.max_tilt_rad + 1e-3)
        pos, rot = new_pos, new_rot
