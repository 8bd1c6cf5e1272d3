"""The ROS 2 package without launching: its layout (console scripts, data_files), the node parameter files
against the nodes' dataclasses (one place per default), and each launch file's plan (``robot_rl_ros.plans``:
the nodes, parameters and processes it starts for given arguments). tests/ros/test_ros_launch.py launches
them for real."""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("yaml")  # PyYAML: comes with the ROS wheels (the ros extra)
import yaml

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "ros2_ws" / "src" / "robot_rl_ros"
if str(PKG) not in sys.path:
    sys.path.append(str(PKG))

from robot_rl_ros.plans import LAUNCH_FILES, NodePlan, ProcessPlan, plan  # noqa: E402
from robot_rl_ros.specs import LEARNER_COMMAND, SPECS, NodeSpec, learner_argv  # noqa: E402

from robot_rl.cli import parse  # noqa: E402
from robot_rl.distributed.config import LearnerConfig  # noqa: E402
from robot_rl.ros.spec_env import make_contract_env  # noqa: E402
from robot_rl.training.env_factory import make_env_from_config  # noqa: E402

PACKAGE_LAUNCH = sorted((PKG / "launch").glob("*.launch.py"))
USER_LAUNCH = sorted((REPO / "launch").glob("*.launch.py"))


def _setup() -> tuple[set[str], list[str]]:
    """(console script names, data_files source globs) from setup.py's AST."""
    tree = ast.parse((PKG / "setup.py").read_text())
    scripts: set[str] = set()
    globs: list[str] = []
    for node in ast.walk(tree):
        targets = [getattr(t, "id", "") for t in getattr(node, "targets", [])]
        if isinstance(node, ast.Assign) and "CONSOLE_SCRIPTS" in targets:
            scripts = {ast.literal_eval(e).split("=")[0].strip() for e in node.value.elts}
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "glob":
            globs.append(ast.literal_eval(node.args[0]))
    return scripts, globs


def _spec_keys(tree: ast.AST) -> list[str]:
    """``SPECS["x"]`` subscripts in a launch file."""
    return [ast.literal_eval(n.slice) for n in ast.walk(tree)
            if isinstance(n, ast.Subscript) and getattr(n.value, "id", "") == "SPECS"]


def test_package_layout() -> None:
    assert (PKG / "resource" / "robot_rl_ros").exists()
    cfg = (PKG / "setup.cfg").read_text()
    assert "script_dir=$base/lib/robot_rl_ros" in cfg and "install_scripts=$base/lib/robot_rl_ros" in cfg
    assert "<build_type>ament_python</build_type>" in (PKG / "package.xml").read_text()
    scripts, globs = _setup()
    assert {"launch/*.launch.py", "config/*.yaml"} <= set(globs)
    assert {spec.executable for spec in SPECS.values()} <= scripts


@pytest.mark.parametrize("path", PACKAGE_LAUNCH, ids=lambda p: p.name)
def test_launch_files_describe_their_plan_with_installed_nodes_and_params(path: Path) -> None:
    stem = path.name.removesuffix(".launch.py")
    assert stem in LAUNCH_FILES and f'describe("{stem}")' in path.read_text()
    scripts, globs = _setup()
    for plan_ in _all_plans(stem):
        if isinstance(plan_, NodePlan):
            spec: NodeSpec = SPECS[plan_.spec]
            assert spec.executable in scripts, f"{stem}: {plan_.spec} -> {spec.executable} is not a console script"
            for param_file in spec.params:
                assert (PKG / param_file).exists(), param_file
                assert any(fnmatch.fnmatch(param_file, g) for g in globs), f"{param_file} is not in data_files"


def _all_plans(stem: str) -> list:
    """The plans of a launch file with every optional part switched on."""
    required = {a.name: "sim_panda" for a in LAUNCH_FILES[stem][0]() if a.default is None}
    extras = {"real_arm": {"learner": "true", "reward_classifier": "/x.pt", "cameras": "sim_front"},
              "sim_robot": {"cameras": "front"}}.get(stem, {})
    return plan(stem, **required, **extras)


@pytest.mark.parametrize("path", USER_LAUNCH, ids=lambda p: p.name)
def test_user_launch_files_include_installed_package_launch_files(path: Path) -> None:
    text = path.read_text()
    assert "generate_launch_description" in text
    included = {Path(p).name for p in (PKG / "launch").glob("*.launch.py")}
    assert path.name in included and f"/launch/{path.name}" in text


def _node_defaults() -> dict[str, dict[str, Any]]:
    """Each node's parameters and their defaults, from the dataclasses it declares them from."""
    from robot_rl.ros.actor import PolicyActorConfig
    from robot_rl.ros.params import BridgeParams, CameraParams, RosEnvConfig, SimRobotConfig, SimRobotParams
    from robot_rl.ros.reward import RewardNodeConfig
    from robot_rl.ros.teleop import TeleopConfig

    sources = {"robot_bridge": [("", BridgeParams)], "camera_bridge": [("", CameraParams)],
               "sim_robot": [("", SimRobotParams), ("sim.", SimRobotConfig)],
               "policy_actor": [("env.", RosEnvConfig), ("actor.", PolicyActorConfig)],
               "teleop": [("", TeleopConfig)], "reward_classifier": [("", RewardNodeConfig)]}
    assert set(sources) == set(SPECS)
    out = {}
    for node, parts in sources.items():
        out[node] = {}
        for prefix, cls in parts:
            for f in dataclasses.fields(cls):
                value = f.default if f.default is not dataclasses.MISSING else f.default_factory()
                out[node][prefix + f.name] = value
    return out


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flatten(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


def _as_param(value: Any) -> Any:
    """A dataclass default as the parameter file writes it (tuples as lists; an empty one as [""])."""
    if isinstance(value, tuple):
        return list(value) if value else [""]
    return "" if value is None else value


def test_parameter_files_hold_only_overrides() -> None:
    """config/*.yaml holds what differs from the node's dataclass defaults, nothing else: a line repeating a
    default would be a second place for it, and a name the node does not declare would be ignored by ROS."""
    defaults = _node_defaults()
    for name, spec in SPECS.items():
        for param_file in spec.params:
            data = yaml.safe_load((PKG / param_file).read_text())
            params = _flatten(data["/**"]["ros__parameters"] or {})
            unknown = set(params) - set(defaults[name])
            assert not unknown, f"{param_file}: parameters {sorted(unknown)} are not declared by {name}"
            for key, value in params.items():
                assert value != _as_param(defaults[name][key]), f"{param_file}: {key} = {value!r} repeats the " \
                    "node's default"


STACK_FACTS = {
    ("sim_robot", "policy_actor", "env.reward"): "the sim robot publishes rl/reward",
    ("sim_robot", "policy_actor", "env.privileged_task"): "a state policy trained in sim reads the task's goal",
}
"""Parameters a launch file sets to something else than the node's default, each for a reason."""


@pytest.mark.parametrize("stem", sorted(LAUNCH_FILES))
def test_launch_defaults_are_the_node_defaults(stem: str) -> None:
    """With only its required arguments, a launch file gives each node its own defaults."""
    arguments = LAUNCH_FILES[stem][0]()
    required = {a.name: "franka_fr3" for a in arguments if a.default is None}
    defaults = _node_defaults()
    for p in plan(stem, **required):
        if not isinstance(p, NodePlan):
            continue
        for key, value in p.overrides.items():
            if (stem, p.spec, key) in STACK_FACTS or (key.endswith("hardware_config") and "hardware" in required):
                continue
            expected = _as_param(defaults[p.spec][key])
            assert _as_param(value) == expected or value in ([], expected), \
                f"{stem}.launch.py sets {p.spec} {key} = {value!r} by default; the node's default is {expected!r}"


def test_spec_argv_is_the_documented_command_line(tmp_path: Path) -> None:
    exe = tmp_path / "robot_bridge"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    overrides = {"state_hz": 100.0, "flag": True}
    argv = SPECS["robot_bridge"].argv(PKG, "/fr3", "bridge", overrides, exe_dir=tmp_path)
    assert argv == [str(exe), "--ros-args", "--params-file", str(PKG / "config/robot_bridge.yaml"),
                    "-r", "__ns:=/fr3", "-r", "__node:=bridge", "-p", "state_hz:=100.0", "-p", "flag:=true"]
    kwargs = SPECS["robot_bridge"].launch_kwargs(PKG, "fr3", overrides={"state_hz": 100.0})
    assert kwargs["parameters"] == [str(PKG / "config/robot_bridge.yaml"), {"state_hz": 100.0}]
    assert (kwargs["package"], kwargs["executable"]) == ("robot_rl_ros", "robot_bridge")
    assert "prefix" not in kwargs
    rt = SPECS["robot_bridge"].argv(PKG, "/fr3", "bridge", overrides, exe_dir=tmp_path, rt_priority=50)
    assert rt == ["chrt", "-f", "50", *argv]
    assert SPECS["robot_bridge"].launch_kwargs(PKG, rt_priority=50)["prefix"] == "chrt -f 50"


# --- what each launch file starts ---------------------------------------------------------------------------
def _nodes(plans: list) -> dict[str, NodePlan]:
    return {p.name or SPECS[p.spec].name: p for p in plans if isinstance(p, NodePlan)}


def test_sim_launch_starts_sim_bridge_cameras_and_actor() -> None:
    nodes = _nodes(plan("sim_robot", cameras="front,wrist", policy="random"))
    assert set(nodes) == {"sim_robot", "robot_bridge", "camera_bridge_front", "camera_bridge_wrist",
                          "policy_actor"}
    assert all(n.namespace == "sim" for n in nodes.values())
    actor = nodes["policy_actor"].overrides
    assert actor["actor.policy"] == "random" and actor["env.cameras"] == ["sim_front", "sim_wrist"]
    assert nodes["sim_robot"].overrides["sim.cameras"] == ["front", "wrist"]


def test_real_arm_launch_with_learner() -> None:
    plans = plan("real_arm", hardware="ur5e", learner="true", learner_address="gpu-box:50051",
                 cameras="realsense_d435_front,realsense_d405_wrist")
    assert list(_nodes(plans)) == ["robot_bridge", "camera_bridge_front", "camera_bridge_wrist", "teleop",
                                   "policy_actor"]
    cmd = next(p for p in plans if isinstance(p, ProcessPlan)).cmd
    assert cmd[:2] == LEARNER_COMMAND
    config = parse(list(cmd[1:]))  # the command robot-rl really accepts, building the actor's spaces
    assert isinstance(config, LearnerConfig) and (config.link.host, config.link.port) == ("gpu-box", 50051)
    assert not config.evaluate
    env = make_env_from_config(config.train.env)
    actor_env = make_contract_env("ur5e", ["realsense_d435_front", "realsense_d405_wrist"])
    assert env.observation_space == actor_env.observation_space
    assert _nodes(plans)["robot_bridge"].overrides == {"hardware_config": "ur5e"}


def test_real_arm_launch_needs_the_arm_named() -> None:
    with pytest.raises(ValueError, match=r"required argument\(s\) \['hardware'\]"):
        plan("real_arm")


def test_real_arm_launch_rlif_reaches_actor_and_learner() -> None:
    plans = plan("real_arm", hardware="franka_fr3", learner="true", intervention_mode="rlif")
    assert _nodes(plans)["policy_actor"].overrides["actor.intervention_mode"] == "rlif"
    cmd = next(p for p in plans if isinstance(p, ProcessPlan)).cmd
    assert parse(list(cmd[1:])).train.intervention_mode == "rlif"
    learner = plan("learner", hardware="franka_fr3", intervention_mode="rlif")[0]
    assert parse(list(learner.cmd[1:])).train.intervention_mode == "rlif"


def test_real_arm_launch_residual_runs_the_base_by_the_arm_and_the_learner_over_it() -> None:
    plans = plan("real_arm", hardware="franka_fr3", link="remote", learner="true", base_policy="bc_run")
    assert _nodes(plans)["policy_actor"].overrides["actor.base_policy"] == "bc_run"
    cmd = next(p for p in plans if isinstance(p, ProcessPlan)).cmd
    learner = parse(list(cmd[1:])).train
    assert learner.env.base_policy == "bc_run" and learner.agent.residual_scale is not None  # the residual preset
    assert "actor.base_policy" not in _nodes(plan("real_arm", hardware="franka_fr3"))["policy_actor"].overrides


def test_real_arm_launch_action_history_reaches_actor_and_learner() -> None:
    plans = plan("real_arm", hardware="franka_fr3", link="remote", learner="true", action_history="3")
    assert _nodes(plans)["policy_actor"].overrides["actor.action_history"] == 3
    cmd = next(p for p in plans if isinstance(p, ProcessPlan)).cmd
    assert parse(list(cmd[1:])).train.env.action_history == 3
    assert "actor.action_history" not in _nodes(plan("real_arm", hardware="franka_fr3"))["policy_actor"].overrides
    with pytest.raises(ValueError, match="action_history must be a whole number of steps, got 'three'"):
        plan("real_arm", hardware="franka_fr3", link="remote", action_history="three")


def test_real_arm_launch_jump_start_runs_the_guide_by_the_arm_on_the_curriculum() -> None:
    plans = plan("real_arm", hardware="franka_fr3", link="remote", learner="true", guide_policy="bc_run")
    assert _nodes(plans)["policy_actor"].overrides["actor.guide_policy"] == "bc_run"
    cmd = next(p for p in plans if isinstance(p, ProcessPlan)).cmd
    guide = parse(list(cmd[1:])).train.guide
    assert (guide.policy, guide.schedule) == ("bc_run", "curriculum")  # moved on the training episodes


def test_real_arm_launch_with_reward_classifier() -> None:
    nodes = _nodes(plan("real_arm", hardware="franka_fr3", reward_classifier="/data/pick.pt", teleop="false"))
    assert nodes["reward_classifier"].overrides == {"classifier": "/data/pick.pt"}
    assert nodes["policy_actor"].overrides["env.reward"] is True  # the actor reads rl/reward
    assert "teleop" not in nodes


def test_real_arm_launch_real_time_priority() -> None:
    nodes = _nodes(plan("real_arm", hardware="franka_fr3", cameras="realsense_d435_front", rt_priority="50"))
    assert {k: n.rt_priority for k, n in nodes.items()} == {"robot_bridge": 50, "camera_bridge_front": 0,
                                                            "teleop": 0, "policy_actor": 50}
    assert SPECS["robot_bridge"].launch_kwargs(PKG, rt_priority=50)["prefix"] == "chrt -f 50"
    with pytest.raises(ValueError, match=r"real_arm.launch.py rt_priority='high': expected an integer 0-99"):
        plan("real_arm", hardware="franka_fr3", rt_priority="high")


def test_bridge_and_learner_launch() -> None:
    assert plan("robot_bridge", hardware="franka_fr3", namespace="fr3")[0].namespace == "fr3"
    cmd = plan("learner", hardware="franka_fr3", address="0.0.0.0:50051", learner_args="--train.run-dir runs/x")[0].cmd
    assert cmd[:2] == LEARNER_COMMAND
    config = parse(list(cmd[1:]))
    assert isinstance(config, LearnerConfig) and config.link.host == "0.0.0.0"
    assert str(config.train.run_dir) == "runs/x" and "franka_fr3" in config.train.env.env_kwargs
    with pytest.raises(ValueError, match="host:port"):
        learner_argv("gpu-box", "franka_fr3")
    with pytest.raises(ValueError, match=r"unknown argument\(s\) \['hw'\]"):
        plan("robot_bridge", hw="x")
