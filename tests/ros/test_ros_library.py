"""Pure library code behind the ROS nodes: kinematics, images, state assembly, intervention mux, teleop."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("yaml")  # PyYAML: comes with the ROS wheels (the ros extra)

from robot_rl.envs.contract import STATE_LAYOUT
from robot_rl.envs.geometry import matrix_to_rot6d, rotvec_to_matrix
from robot_rl.envs.names import ACTION_NAMES, pick
from robot_rl.ros.hardware import load_arm_config
from robot_rl.ros.images import CropResize, image_to_rgb
from robot_rl.ros.kinematics import DHChain
from robot_rl.ros.mux import InterventionMux
from robot_rl.ros.state import StateAssembler
from robot_rl.ros.teleop import JoyMapper, TeleopConfig


def test_ur5e_forward_kinematics_at_zero_matches_the_published_geometry() -> None:
    chain = DHChain(load_arm_config("ur5e_forward_velocity").kinematics)
    pos, _ = chain.forward(np.zeros(6))
    # Standard DH at q = 0: x = a2 + a3, y = -(d4 + d6), z = d1 - d5.
    np.testing.assert_allclose(pos, [-0.425 - 0.3922, -(0.1333 + 0.0996), 0.1625 - 0.0997], atol=1e-9)


@pytest.mark.parametrize("arm", ["ur5e_forward_velocity", "xarm7"])
def test_jacobian_matches_finite_differences_and_dls_tracks_twists(arm: str) -> None:
    chain = DHChain(load_arm_config(arm).kinematics)
    rng = np.random.default_rng(0)
    q = rng.uniform(-1.0, 1.0, chain.n)
    jac, eps = chain.jacobian(q), 1e-6
    p0, r0 = chain.forward(q)
    for i in range(chain.n):
        dq = np.zeros(chain.n)
        dq[i] = eps
        p1, r1 = chain.forward(q + dq)
        np.testing.assert_allclose((p1 - p0) / eps, jac[:3, i], atol=1e-5)
        skew = (r1 @ r0.T - np.eye(3)) / eps
        np.testing.assert_allclose([skew[2, 1], skew[0, 2], skew[1, 0]], jac[3:, i], atol=1e-5)
    # Damped least squares tracks the twist where the arm is well conditioned.
    q = max(rng.uniform(-1.5, 1.5, (200, chain.n)), key=lambda c: np.linalg.svd(chain.jacobian(c))[1][-1])
    jac = chain.jacobian(q)
    v, w = np.array([0.0, 0.0, 0.05]), np.array([0.0, 0.0, 0.1])
    qdot = chain.joint_velocity(q, v, w)
    np.testing.assert_allclose(jac @ qdot, np.concatenate([v, w]), atol=0.01)
    fast = chain.joint_velocity(q, v * 100, w * 100)
    assert np.all(np.abs(fast) <= chain.max_speed + 1e-12)  # scaled into the joint speed limits


def test_image_decoding_encodings_and_crop_resize() -> None:
    rgb = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    np.testing.assert_array_equal(image_to_rgb("rgb8", 4, 6, 18, rgb.tobytes()), rgb)
    np.testing.assert_array_equal(image_to_rgb("bgr8", 4, 6, 18, rgb[:, :, ::-1].copy().tobytes()), rgb)
    padded = np.zeros((4, 20), np.uint8)
    padded[:, :18] = rgb.reshape(4, 18)
    np.testing.assert_array_equal(image_to_rgb("rgb8", 4, 6, 20, padded.tobytes()), rgb)  # row padding
    mono = image_to_rgb("mono8", 2, 2, 2, bytes([1, 2, 3, 4]))
    assert mono.shape == (2, 2, 3) and mono[1, 1, 2] == 4
    with pytest.raises(ValueError, match="encoding"):
        image_to_rgb("16UC1", 2, 2, 4, bytes(8))
    with pytest.raises(ValueError, match="too small"):
        image_to_rgb("rgb8", 4, 6, 18, bytes(10))
    big = np.zeros((480, 640, 3), np.uint8)
    big[:, 320:] = 200
    out = CropResize((240, 0, 160, 480), (64, 32))(big)
    assert out.shape == (64, 32, 3) and out[:, :10].max() == 0 and out[:, -10:].min() == 200
    with pytest.raises(ValueError, match="outside"):
        CropResize((700, 0, 10, 10), (8, 8))(big)


def test_state_assembler_builds_the_contract_state() -> None:
    asm = StateAssembler(("j1", "j2"), ("f1", "f2"), max_width_m=0.08)
    rot = rotvec_to_matrix(np.array([np.pi, 0.0, 0.0]))
    for k in range(5):
        asm.on_pose(np.array([0.5 + 0.01 * k, 0.0, 0.3]), rot, stamp_s=0.1 * k)
    asm.on_wrench((1.0, 2.0, 3.0), (0.1, 0.2, 0.3))
    asm.on_joint_states(["f2", "j2", "f1", "j1"], [0.01, 0.2, 0.03, 0.1], [], stamp_s=0.4)
    s = asm.state
    np.testing.assert_allclose(s[STATE_LAYOUT.slice("tcp_pos")], [0.54, 0.0, 0.3], atol=1e-6)
    np.testing.assert_allclose(s[STATE_LAYOUT.slice("tcp_rot6d")], matrix_to_rot6d(rot), atol=1e-6)
    assert 0.0 < s[STATE_LAYOUT.slice("tcp_linvel")][0] <= 0.1  # smoothed finite difference of 0.1 m/s
    np.testing.assert_allclose(s[STATE_LAYOUT.slice("gripper_opening")], [0.5])
    np.testing.assert_allclose(s[STATE_LAYOUT.slice("wrench_force")], [1, 2, 3])
    np.testing.assert_allclose(asm.q, [0.1, 0.2])  # mapped by name, not by order


def test_named_vectors_are_mapped_by_name() -> None:
    values = pick(["gripper", "dx", "dy", "dz", "drx", "dry", "drz"], [7, 1, 2, 3, 4, 5, 6], ACTION_NAMES)
    np.testing.assert_array_equal(values, [1, 2, 3, 4, 5, 6, 7])
    assert pick(["dx"], [1.0], ACTION_NAMES) is None
    assert pick(["dx", "dy"], [1.0], ["dx"]) is None


def test_intervention_mux_prefers_a_fresh_active_human() -> None:
    mux = InterventionMux(stale_after_s=0.15)
    policy = np.zeros(7)
    human = np.array([1.0, 0.5, 0, 0, 0, 0, 0, -1.0])
    mux.update(human, now_s=1.0)
    action, intervened = mux.select(policy, 1.1)
    assert intervened and action[0] == 0.5 and action[6] == -1.0
    assert mux.select(policy, 1.2) == (policy, False)  # stale: the policy again
    mux.update(np.array([0.0, 1, 1, 1, 0, 0, 0, 0]), now_s=2.0)  # inactive
    assert mux.select(policy, 2.0)[1] is False


def test_joy_mapper_deflection_buttons_deadman_and_timeout() -> None:
    mapper = JoyMapper(TeleopConfig(scale=(1.0, -1.0, 1.0, 1.0, 1.0, 1.0)))
    assert mapper.vector(0.0)[0] == 0.0
    mapper.update([0.5, 0.5, 0, 0, 0, 0], [0, 0], now_s=0.0)
    v = mapper.vector(0.1)
    assert v[0] == 1.0 and v[1] == 0.5 and v[2] == -0.5 and v[7] == 0.0
    mapper.update([0, 0, 0, 0, 0, 0], [1, 0], now_s=0.2)
    assert mapper.vector(0.3)[0] == 1.0 and mapper.vector(0.3)[7] == -1.0  # close button
    mapper.update([0, 0, 0, 0, 0, 0], [0, 0], now_s=0.4)
    assert mapper.vector(0.5)[0] == 0.0
    assert mapper.vector(100.0)[0] == 0.0  # input timed out
    deadman = JoyMapper(TeleopConfig(deadman_button=2))
    deadman.update([1, 0, 0, 0, 0, 0], [0, 0, 0], now_s=0.0)
    assert deadman.vector(0.0)[0] == 0.0
    deadman.update([1, 0, 0, 0, 0, 0], [0, 0, 1], now_s=0.0)
    assert deadman.vector(0.0)[0] == 1.0


def test_contract_env_describes_a_ros_arm_without_ros() -> None:
    from robot_rl.ros.spec_env import make_contract_env

    env = make_contract_env("franka_fr3", ["realsense_d435_front", "realsense_d405_wrist"])
    assert set(env.observation_space.spaces) == {"state", "images/front", "images/wrist"}
    assert env.observation_space["images/wrist"].shape == (128, 128, 3)
    assert (env.contract.control_hz, env.contract.max_step_m) == (10.0, 0.02)
    with pytest.raises(RuntimeError, match="cannot be stepped"):
        env.reset()


def test_remote_ros_actor_link_speaks_the_learners_intervention_mode() -> None:
    """RLIF on a real arm: the actor's link carries the mode into the handshake spec, and its interventions
    come from the env (the bridge's mux), not from a device of its own."""
    pytest.importorskip("grpc")
    from robot_rl.distributed.config import ActorConfig as LinkActorConfig
    from robot_rl.distributed.spec import env_spec
    from robot_rl.ros.actor import PolicyActorConfig, link_config
    from robot_rl.ros.spec_env import make_contract_env

    kwargs = {"hardware_config": "franka_fr3", "cameras": [], "privileged_task": ""}
    cfg = PolicyActorConfig(learner="remote", learner_address="gpu-box:6000", intervention_mode="rlif")
    link = link_config(cfg, kwargs)
    assert (link.link.host, link.link.port) == ("gpu-box", 6000)
    assert link.intervention_mode == "rlif" and link.env_interventions and link.teleop == "none"
    env = make_contract_env(**kwargs)
    factory = link.env.env_factory
    assert env_spec(env, factory, False, "rlif") == env_spec(env, factory, False, link.intervention_mode)
    assert env_spec(env, factory, False, "hil") != env_spec(env, factory, False, "rlif")  # refused at handshake
    with pytest.raises(ValueError, match="intervention_mode must be one of"):
        PolicyActorConfig(learner="remote", intervention_mode="dagger")
    with pytest.raises(ValueError, match="env_interventions"):
        LinkActorConfig(intervention_mode="rlif")


class StateBase(torch.nn.Module):
    """A base policy on the arm's state, as a TorchScript file (a TorchScript base takes the observation dict)."""

    def __init__(self) -> None:
        super().__init__()
        self.map = torch.nn.Linear(STATE_LAYOUT.dim, 7)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.tanh(self.map(obs["state"]))


def test_remote_ros_actor_runs_the_residual_learners_base_and_the_handshake_checks_it(tmp_path: Path) -> None:
    """A residual learner over a real arm: the robot PC runs the same base file (by its own path) and its
    actions are an observation of the arm's env; a different file, or none, does not pass the handshake."""
    pytest.importorskip("grpc")
    from robot_rl.distributed.spec import run_spec, spec_diff
    from robot_rl.envs.contract import BASE_ACTION
    from robot_rl.ros.actor import PolicyActorConfig, link_config
    from robot_rl.ros.spec_env import make_contract_env
    from robot_rl.training.base_policy import pin_policies
    from robot_rl.training.config import TrainConfig
    from robot_rl.training.env_factory import make_env_from_config, with_observation_extras

    def base_file(path: Path, seed: int) -> Path:
        torch.manual_seed(seed)
        with warnings.catch_warnings():  # deprecated, still what most users export
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.jit.script(StateBase()).save(str(path))
        return path

    kwargs = {"hardware_config": "franka_fr3", "cameras": [], "privileged_task": ""}
    learner_file = base_file(tmp_path / "learner_base.pt", 0)
    robot_file = tmp_path / "robot_base.pt"
    robot_file.write_bytes(learner_file.read_bytes())  # the same base, copied to the robot PC
    arm_env = link_config(PolicyActorConfig(learner="remote"), kwargs).env
    learner_env = pin_policies(TrainConfig.from_preset(
        "residual", env=dataclasses.replace(arm_env, base_policy=str(learner_file)))).env
    learner_spec = run_spec(make_env_from_config(learner_env), learner_env, "hil")

    def actor_spec(base: str) -> dict:
        link = link_config(PolicyActorConfig(learner="remote", base_policy=base), kwargs)
        return run_spec(with_observation_extras(make_contract_env(**kwargs), link.env), link.env, "hil")

    assert spec_diff(actor_spec(str(robot_file)), learner_spec) == []
    assert BASE_ACTION in learner_spec["observation_space"]
    other = actor_spec(str(base_file(tmp_path / "other.pt", 1)))
    assert [d for d in spec_diff(other, learner_spec) if d.startswith("spec.base_policy.sha256")]
    assert spec_diff(actor_spec(""), learner_spec)  # no base on the robot: refused, never acted on without it
    with pytest.raises(ValueError, match="for learner=remote"):
        PolicyActorConfig(base_policy=str(robot_file))


def test_remote_ros_actor_runs_a_jump_start_guide_over_the_arms_own_time_limit(tmp_path: Path) -> None:
    """The guide acts by the arm for the first h steps of an episode, h at most the arm env's episode length."""
    pytest.importorskip("grpc")
    from robot_rl.distributed.actor import actor_jump_start
    from robot_rl.ros.actor import PolicyActorConfig, link_config
    from robot_rl.ros.spec_env import make_contract_env

    guide_file = tmp_path / "guide.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(StateBase()).save(str(guide_file))

    kwargs = {"hardware_config": "franka_fr3", "cameras": [], "privileged_task": ""}
    arm = make_contract_env(**kwargs)
    arm.max_episode_steps = 60  # what RosArmEnv states of its episodes (the rest of it needs a running arm)
    link = link_config(PolicyActorConfig(learner="remote", guide_policy=str(guide_file)), kwargs)
    assert (link.guide.policy, link.guide.schedule) == (str(guide_file), "curriculum")
    jump = actor_jump_start(link, arm)
    assert jump is not None and jump.horizon == 60 and jump.start_episode() == 60  # until the learner says
    drawn = link_config(PolicyActorConfig(learner="remote", guide_policy=str(guide_file), guide_schedule="random"),
                        kwargs)
    jump = actor_jump_start(drawn, arm)
    assert jump is not None and all(0 <= jump.start_episode() <= 60 for _ in range(20))
    assert actor_jump_start(link_config(PolicyActorConfig(learner="remote"), kwargs), arm) is None
    with pytest.raises(ValueError, match="guides a learning run"):
        PolicyActorConfig(guide_policy=str(guide_file))


def test_remote_ros_actor_observes_the_learners_action_history_and_the_handshake_checks_it() -> None:
    pytest.importorskip("grpc")
    from robot_rl.distributed.spec import run_spec, spec_diff
    from robot_rl.ros.actor import PolicyActorConfig, link_config
    from robot_rl.ros.spec_env import make_contract_env
    from robot_rl.training.env_factory import make_env_from_config, with_observation_extras

    kwargs = {"hardware_config": "franka_fr3", "cameras": [], "privileged_task": ""}
    learner_env = dataclasses.replace(link_config(PolicyActorConfig(learner="remote"), kwargs).env, action_history=3)
    learner_spec = run_spec(make_env_from_config(learner_env), learner_env, "hil")

    def actor_spec(history: int) -> dict:
        link = link_config(PolicyActorConfig(learner="remote", action_history=history), kwargs)
        return run_spec(with_observation_extras(make_contract_env(**kwargs), link.env), link.env, "hil")

    assert spec_diff(actor_spec(3), learner_spec) == []
    assert spec_diff(actor_spec(2), learner_spec) and spec_diff(actor_spec(0), learner_spec)
    with pytest.raises(ValueError, match="for learner=remote"):
        PolicyActorConfig(action_history=3)


def test_the_local_actor_keeps_the_history_of_the_actions_the_arm_executed() -> None:
    """A checkpoint with an action history acting on an env that does not add one (a robot's): the policy sees
    the last actions ``run_actor`` executed, clipped into the box, zeros at each episode start."""
    from robot_rl.envs.contract import ACTION_HISTORY
    from robot_rl.ros.actor import HistoryPolicy, NoLearner, run_actor
    from robot_rl.training.env_factory import make_training_env

    class Sees:
        def __init__(self) -> None:
            self.seen: list[np.ndarray] = []
            self.sent: list[np.ndarray] = []
            self.starts: list[int] = []
            self.rng = np.random.default_rng(0)

        def reset(self) -> None:
            self.starts.append(len(self.seen))

        def act(self, obs: dict[str, np.ndarray]) -> np.ndarray:
            self.seen.append(obs[ACTION_HISTORY])
            self.sent.append(self.rng.uniform(-1.5, 1.5, 7).astype(np.float32))
            return self.sent[-1]

    env = make_training_env("reach")
    inner = Sees()
    run_actor(env, HistoryPolicy(inner, 2, env.action_space), NoLearner(), episodes=2)
    assert len(inner.starts) == 2 and inner.starts[0] == 0 < inner.starts[1] < len(inner.seen)
    for start, end in zip(inner.starts, [*inner.starts[1:], len(inner.seen)]):  # each episode starts from zeros
        np.testing.assert_array_equal(inner.seen[start], np.zeros(14))
        for t in range(start + 1, end):
            expected = [np.clip(inner.sent[t - 1], -1, 1),
                        np.clip(inner.sent[t - 2], -1, 1) if t - 2 >= start else np.zeros(7)]
            np.testing.assert_array_equal(inner.seen[t], np.concatenate(expected))
