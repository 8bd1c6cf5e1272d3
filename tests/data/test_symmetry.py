"""Symmetry transforms: group laws for every field kind, hand-checked cases, refusals and the batch transform."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from robot_rl.data.batch import Batch
from robot_rl.data.symmetry import (
    Elements,
    LayoutTransform,
    Mirror,
    Rotation,
    SymmetryAugmentation,
    SymmetryConfig,
    SymmetryError,
    SymmetryGroup,
    TranslationGrid,
    Workspace,
    contract_layouts,
    draw_elements,
    transform_field,
)
from robot_rl.envs.contract import ACTION_DIM, ACTION_HISTORY, STATE_DIM, STATE_LAYOUT, Field, Layout
from robot_rl.envs.geometry import matrix_to_quat, matrix_to_rot6d, quat_to_matrix, rotvec_to_matrix

KINDS = {"point": 3, "vector": 3, "axial": 3, "rot6d": 6, "quaternion": 4, "scalar": 1}
GROUP = SymmetryGroup(mirror=Mirror(normal_deg=70.0, point_xy=(0.4, 0.1)), rotation=Rotation(60.0, (0.5, -0.2)),
                      translation=TranslationGrid(5, 0.3))


def _values(kind: str, n: int, rng: np.random.Generator) -> torch.Tensor:
    if kind == "rot6d":
        return torch.as_tensor(np.stack([matrix_to_rot6d(rotvec_to_matrix(rng.normal(size=3))) for _ in range(n)]))
    if kind == "quaternion":
        q = rng.normal(size=(n, 4))
        return torch.as_tensor(q / np.linalg.norm(q, axis=1, keepdims=True))
    return torch.as_tensor(rng.normal(size=(n, KINDS[kind])))


def _elements(n: int, seed: int = 0) -> Elements:
    return draw_elements(GROUP, n, torch.Generator().manual_seed(seed))


def _double(g: Elements) -> Elements:
    return Elements(g.theta.double(), g.reflect, g.shift.double())


@pytest.mark.parametrize("kind", [*KINDS, "point2", "vector2"])
def test_an_element_then_its_inverse_is_the_identity(kind: str) -> None:
    rng = np.random.default_rng(1)
    base = kind.rstrip("2")
    values = _values(base, 64, rng)[:, :2] if kind.endswith("2") else _values(kind, 64, rng)
    g = _double(_elements(64))
    back = transform_field(base, transform_field(base, values, g), _double(g.inverse()))
    torch.testing.assert_close(back, values, atol=1e-9, rtol=0)
    # composing first gives the same as applying one after the other
    h = _double(_elements(64, seed=3))
    torch.testing.assert_close(transform_field(base, values, h.compose(g)),
                               transform_field(base, transform_field(base, values, g), h), atol=1e-9, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_a_reflection_twice_is_the_identity(kind: str) -> None:
    values = _values(kind, 16, np.random.default_rng(2))
    m = _double(Elements.mirror(33.0, (0.3, -0.4), n=16))
    torch.testing.assert_close(transform_field(kind, transform_field(kind, values, m), m), values, atol=1e-6, rtol=0)


def test_rotations_compose_by_adding_angles() -> None:
    a, b = torch.tensor([0.3, -1.1]), torch.tensor([0.5, 0.25])
    c = (0.2, 0.7)
    composed = Elements.rotation(a, c).compose(Elements.rotation(b, c))
    direct = Elements.rotation(a + b, c)
    torch.testing.assert_close(composed.theta, direct.theta)
    torch.testing.assert_close(composed.shift, direct.shift, atol=1e-6, rtol=0)


def test_hand_checked_cases() -> None:
    y_mirror = _double(Elements.mirror(90.0))
    one = lambda *v: torch.tensor([v], dtype=torch.float64)  # noqa: E731
    # points and vectors flip y; a pseudovector (angular velocity, torque, axis-angle step) flips x and z
    torch.testing.assert_close(transform_field("point", one(1.0, 2.0, 3.0), y_mirror), one(1.0, -2.0, 3.0))
    torch.testing.assert_close(transform_field("axial", one(1.0, 2.0, 3.0), y_mirror), one(-1.0, 2.0, -3.0))
    # quaternion (w, x, y, z) of M R M is (w, -x, y, -z)
    torch.testing.assert_close(transform_field("quaternion", one(0.5, 0.5, 0.5, 0.5), y_mirror),
                               one(0.5, -0.5, 0.5, -0.5))
    # rot6d (R00, R10, R20, R01, R11, R21) of M R M flips entries 1, 3, 5
    r6 = one(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    torch.testing.assert_close(transform_field("rot6d", r6, y_mirror), r6 * one(1, -1, 1, -1, 1, -1))
    # a quarter turn about (1, 0) takes the point (2, 0) to (1, 1) and the vector (1, 0) to (0, 1)
    quarter = _double(Elements.rotation(torch.tensor([math.pi / 2]), (1.0, 0.0)))
    torch.testing.assert_close(transform_field("point", one(2.0, 0.0, 0.5), quarter), one(1.0, 1.0, 0.5))
    torch.testing.assert_close(transform_field("vector", one(1.0, 0.0, 0.5), quarter), one(0.0, 1.0, 0.5))
    # a translation moves points only
    shift = _double(Elements.translation(torch.tensor([[0.1, -0.2]])))
    torch.testing.assert_close(transform_field("point", one(1.0, 1.0, 1.0), shift), one(1.1, 0.8, 1.0))
    torch.testing.assert_close(transform_field("vector", one(1.0, 1.0, 1.0), shift), one(1.0, 1.0, 1.0))


def test_orientation_and_axial_rules_agree_with_rotation_matrices() -> None:
    """rot6d and quaternion give the same A R D; an axis-angle step w moved as axial is A exp(w) A^T."""
    rng = np.random.default_rng(4)
    g = _double(_elements(8, seed=5))
    for i in range(8):
        gi = Elements(g.theta[i : i + 1], g.reflect[i : i + 1], g.shift[i : i + 1])
        a = gi.matrix()[0].numpy()
        d = np.diag([1.0, -1.0, 1.0]) if bool(gi.reflect[0]) else np.eye(3)
        mat = rotvec_to_matrix(rng.normal(size=3))
        expected = a @ mat @ d
        r6 = transform_field("rot6d", torch.as_tensor(matrix_to_rot6d(mat))[None], gi)[0].numpy()
        np.testing.assert_allclose(r6, matrix_to_rot6d(expected), atol=1e-9)
        q = transform_field("quaternion", torch.as_tensor(matrix_to_quat(mat))[None], gi)[0].numpy()
        np.testing.assert_allclose(quat_to_matrix(q), expected, atol=1e-9)
        w = rng.normal(size=3) * 0.3
        moved = transform_field("axial", torch.as_tensor(w)[None], gi)[0].numpy()
        np.testing.assert_allclose(rotvec_to_matrix(moved), a @ rotvec_to_matrix(w) @ a.T, atol=1e-9)


def test_translation_grid_offsets_are_cell_centres() -> None:
    offsets = TranslationGrid(3, 0.3).offsets()
    assert sorted({round(float(x), 6) for x in offsets[:, 0]}) == [-0.1, 0.0, 0.1] and len(offsets) == 9


def test_a_fixed_field_is_refused_by_name() -> None:
    layout = Layout((Field("tcp_pos", 3, "m", "point"), Field("joint_pos", 7, "rad")))
    with pytest.raises(SymmetryError, match=r"observation 'state' field\(s\) \['joint_pos'\] have kind 'fixed'"):
        LayoutTransform(layout, "observation 'state'")
    with pytest.raises(ValueError, match="a point field has size"):
        Field("bad", 4, "m", "point")


# ------------------------------------------------------------------------------------------ the transform
def _batch(n: int, seed: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    state = torch.zeros(n, STATE_DIM)
    state[:, STATE_LAYOUT.slice("tcp_pos")] = torch.tensor([0.5, 0.0, 0.2]) + 0.05 * torch.randn(n, 3, generator=g)
    state[:, STATE_LAYOUT.slice("gripper_opening")] = torch.arange(n, dtype=torch.float32)[:, None]
    state[:, STATE_LAYOUT.slice("tcp_rot6d")] = torch.tensor([1.0, 0.0, 0.0, 0.0, -1.0, 0.0])
    action = 0.5 * (torch.rand(n, ACTION_DIM, generator=g) * 2 - 1)
    return Batch({"state": state}, action, torch.arange(n, dtype=torch.float32), torch.full((n,), 0.9),
                 {"state": state.clone()}, {"intervention": torch.zeros(n, dtype=torch.bool)})


WIDE = Workspace((-5.0, -5.0), (5.0, 5.0))
MIRROR_ONLY = SymmetryGroup(mirror=Mirror())


def test_random_mode_transforms_the_configured_fraction() -> None:
    group = SymmetryGroup(rotation=Rotation(10.0))  # every draw moves the state
    for fraction in (0.0, 0.25, 0.75):
        aug = SymmetryAugmentation(group, SymmetryConfig(mode="random", fraction=fraction), {"state": STATE_LAYOUT},
                                   WIDE, seed=1)
        batch = _batch(4000)
        out = aug(batch)
        moved = (out.obs["state"] != batch.obs["state"]).any(1).float().mean().item()
        assert moved == pytest.approx(fraction, abs=0.03) and aug.last_transformed_fraction == pytest.approx(moved)
        torch.testing.assert_close(out.reward, batch.reward)  # rows stay in place


def test_copies_mode_repeats_each_drawn_transition_k_times() -> None:
    aug = SymmetryAugmentation(SymmetryGroup(rotation=Rotation(10.0)), SymmetryConfig(mode="copies", copies=3),
                               {"state": STATE_LAYOUT}, WIDE, seed=2)
    batch = _batch(16)
    out = aug(batch)
    source = torch.tensor([0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12])
    torch.testing.assert_close(out.reward, batch.reward[source])  # reward, discount, extras follow the source
    opening = STATE_LAYOUT.slice("gripper_opening")
    torch.testing.assert_close(out.obs["state"][:, opening], batch.obs["state"][source][:, opening])
    torch.testing.assert_close(out.obs["state"][::4], batch.obs["state"][::4])  # the first of each block: as recorded
    assert (out.obs["state"][1::4] != batch.obs["state"][source][1::4]).any(1).all()
    assert aug.last_transformed_fraction == pytest.approx(0.75)


def test_states_and_actions_move_together_unless_the_ablation_says_so() -> None:
    batch = _batch(64)
    for actions in (True, False):
        aug = SymmetryAugmentation(MIRROR_ONLY, SymmetryConfig(mode="random", fraction=1.0, actions=actions),
                                   {"state": STATE_LAYOUT}, WIDE, seed=3)
        out = aug(batch)
        mirrored = out.obs["state"][:, 1] != batch.obs["state"][:, 1]  # tcp y flipped
        assert 0 < mirrored.sum() < 64  # a mirror is drawn for about half the rows
        dy_flipped = torch.isclose(out.action[:, 1], -batch.action[:, 1]) & (batch.action[:, 1] != 0)
        assert bool((dy_flipped == mirrored).all()) is actions


def test_the_action_history_moves_as_the_actions_do() -> None:
    """``previous_actions`` holds actions: each of its entries is transformed exactly as the action is."""
    batch = _batch(64)
    history = torch.cat([batch.action, -batch.action], dim=1)
    batch.obs[ACTION_HISTORY], batch.next_obs[ACTION_HISTORY] = history, history.clone()
    layouts = contract_layouts((), base_action=False, action_history=2)
    aug = SymmetryAugmentation(GROUP, SymmetryConfig(mode="random", fraction=1.0), layouts, WIDE, seed=5)
    out = aug(batch)
    moved = (out.action != batch.action).any(1)
    assert moved.sum() > 32
    torch.testing.assert_close(out.obs[ACTION_HISTORY][:, :ACTION_DIM], out.action)
    torch.testing.assert_close(out.obs[ACTION_HISTORY][:, ACTION_DIM:], -out.action, atol=1e-6, rtol=0)


def test_rows_leaving_the_workspace_or_action_box_stay_as_recorded() -> None:
    narrow = Workspace((0.3, -0.02), (0.7, 0.02))  # a mirror of |y| > 0.02 still fits; a rotation pushes out
    batch = _batch(256)
    batch.obs["state"][:, 1] = 0.01
    batch.next_obs["state"][:, 1] = 0.01
    aug = SymmetryAugmentation(SymmetryGroup(rotation=Rotation(60.0)), SymmetryConfig(mode="random", fraction=1.0),
                               {"state": STATE_LAYOUT}, narrow, seed=4)
    out = aug(batch)
    y = out.obs["state"][:, 1]
    assert bool(((y >= -0.02) & (y <= 0.02)).all()) and bool((out.action.abs() <= 1).all())
    assert 0 < aug.last_transformed_fraction < 1


def test_unknown_observation_keys_are_refused() -> None:
    aug = SymmetryAugmentation(MIRROR_ONLY, SymmetryConfig(mode="random"), {"state": STATE_LAYOUT}, WIDE)
    batch = _batch(4)
    batch.obs["images/front"] = batch.next_obs["images/front"] = torch.zeros(4, 16, 16, 3, dtype=torch.uint8)
    with pytest.raises(SymmetryError, match="images/front"):
        aug(batch)
    with pytest.raises(SymmetryError, match="declares no symmetry group"):
        SymmetryAugmentation(SymmetryGroup(), SymmetryConfig(mode="random"), {"state": STATE_LAYOUT}, WIDE)


# ------------------------------------------------------------------------------------------------ images
def test_warp_by_a_pixel_shift_equals_a_shift_with_edges_repeated() -> None:
    from robot_rl.data.image_symmetry import warp_images

    images = torch.randint(0, 255, (2, 16, 20, 3), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    identity = torch.eye(3, dtype=torch.float64).expand(2, 3, 3)
    assert torch.equal(warp_images(images, identity), images)
    shift = identity.clone()
    shift[:, 0, 2] = 3.0  # output pixel p samples p + 3 columns
    expected = images[:, :, [min(c + 3, 19) for c in range(20)]]
    assert torch.equal(warp_images(images, shift), expected)


def test_a_fitted_homography_reprojects_the_marked_points() -> None:
    from robot_rl.data.image_symmetry import fit_homography

    truth = np.array([[120.0, -15.0, 40.0], [8.0, -110.0, 70.0], [0.05, 0.02, 1.0]])
    rng = np.random.default_rng(0)
    table = rng.uniform([0.3, -0.3], [0.7, 0.3], (8, 2))
    projected = np.hstack([table, np.ones((8, 1))]) @ truth.T
    pixels = projected[:, :2] / projected[:, 2:]
    h, rmse = fit_homography(table, pixels)
    np.testing.assert_allclose(h, truth / truth[2, 2], rtol=1e-6)
    assert rmse < 1e-6
    _, noisy = fit_homography(table, pixels + rng.normal(0, 0.5, pixels.shape))
    assert 0.1 < noisy < 1.0
    with pytest.raises(ValueError, match=">= 4 pairs"):
        fit_homography(table[:3], pixels[:3])
    with pytest.raises(ValueError, match="degenerate"):
        line = np.column_stack([np.linspace(0.3, 0.7, 5), np.zeros(5)])
        fit_homography(line, line * 100)


def test_images_are_warped_as_sampled_and_the_replay_keeps_one_copy() -> None:
    from functools import partial

    from robot_rl.data.image_symmetry import CameraRule, transform_images
    from robot_rl.data.replay import ReplayBuffer, ReplayConfig
    from robot_rl.envs.contract import CameraSpec, ContractSpec

    spec = ContractSpec(cameras=(CameraSpec("front", 16, 16), CameraSpec("wrist", 16, 16)))
    replay = ReplayBuffer(spec.observation_space(), ACTION_DIM, ReplayConfig(capacity=64), seed=0)
    rng = np.random.default_rng(0)
    obs = lambda: {"state": np.concatenate([[0.5, 0.05, 0.2], np.zeros(STATE_DIM - 3)]).astype(np.float32),  # noqa: E731
                   "images/front": rng.integers(0, 255, (16, 16, 3), dtype=np.uint8),
                   "images/wrist": rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)}
    current = obs()
    for i in range(40):
        following = obs()
        replay.add(current, np.zeros(ACTION_DIM, np.float32), 0.0, following, False, i == 39)
        current = following
    stored = replay.nbytes
    # the camera looks down the x axis: image column u = 8 - 10 y, so a y-mirror is a left-right flip
    rules = {"images/front": CameraRule("fixed", ((0.0, -10.0, 8.0), (10.0, 0.0, 3.0), (0.0, 0.0, 1.0))),
             "images/wrist": CameraRule("wrist", mirror="flip")}
    for copies in (1, 7):
        aug = SymmetryAugmentation(MIRROR_ONLY, SymmetryConfig(mode="copies", copies=copies),
                                   {"state": STATE_LAYOUT}, WIDE, seed=5,
                                   images={k: partial(transform_images, r) for k, r in rules.items()})
        batch = replay.sample(32)
        out = aug(batch)
        assert out.obs["images/front"].shape == batch.obs["images/front"].shape  # the batch keeps its size
        src = torch.arange(32) - torch.arange(32) % (copies + 1)
        mirrored = out.obs["state"][:, 1] != batch.obs["state"][src, 1]
        assert 0 < mirrored.sum() < 32
        for key in rules:  # a mirror of this camera is a left-right flip (it maps y -> -y: column c -> 15 - c)
            recorded = batch.obs[key][src]
            expected = torch.where(mirrored.view(-1, 1, 1, 1), recorded.flip(2), recorded)
            assert torch.equal(out.obs[key], expected), key
        assert replay.nbytes == stored
