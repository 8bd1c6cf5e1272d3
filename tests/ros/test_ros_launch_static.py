"""Launch files without launch/launch_ros (no wheels exist): a static (ast) check that every Node names a
console script of its package and that every parameter file is installed via data_files; then each launch
file runs against stand-in launch modules to check the nodes, parameters and arguments it produces."""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import sys
import types
from pathlib import Path

import pytest

pytest.importorskip("yaml")  # PyYAML: comes with the ROS wheels (the ros extra)
import yaml

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "ros2_ws" / "src" / "robot_rl_ros"
if str(PKG) not in sys.path:
    sys.path.append(str(PKG))

from robot_rl_ros.specs import LEARNER_COMMAND, SPECS, NodeSpec, learner_argv  # noqa: E402

from robot_rl.cli import parse  # noqa: E402
from robot_rl.distributed.config import LearnerConfig  # noqa: E402
from robot_rl.distributed.spec import make_env  # noqa: E402
from robot_rl.ros.spec_env import make_contract_env  # noqa: E402

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
def test_launch_nodes_name_console_scripts_and_installed_params(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body)
    scripts, globs = _setup()
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Node"]
    for call in nodes:
        literal = {k.arg: ast.literal_eval(k.value) for k in call.keywords
                   if k.arg in ("package", "executable")}
        if literal:
            assert literal["package"] == "robot_rl_ros" and literal["executable"] in scripts
        else:
            assert any(k.arg is None for k in call.keywords), f"{path.name}: Node without package/executable"
    for key in _spec_keys(tree):
        spec: NodeSpec = SPECS[key]
        assert spec.executable in scripts, f"{path.name}: {key} -> {spec.executable} is not a console script"
        for param_file in spec.params:
            assert (PKG / param_file).exists(), param_file
            assert any(fnmatch.fnmatch(param_file, g) for g in globs), f"{param_file} is not in data_files"
    assert nodes or "ExecuteProcess" in path.read_text()


@pytest.mark.parametrize("path", USER_LAUNCH, ids=lambda p: p.name)
def test_user_launch_files_include_installed_package_launch_files(path: Path) -> None:
    text = path.read_text()
    assert "generate_launch_description" in text
    included = {Path(p).name for p in (PKG / "launch").glob("*.launch.py")}
    assert path.name in included and f"/launch/{path.name}" in text


def test_config_files_only_set_declared_parameters() -> None:
    """Every key in config/*.yaml is a field of the dataclass the node declares its parameters from."""
    sources = {
        "robot_bridge": [("", PKG / "robot_rl_ros/nodes/robot_bridge.py", "Params")],
        "camera_bridge": [("", PKG / "robot_rl_ros/nodes/camera_bridge.py", "Params")],
        "sim_robot": [("", PKG / "robot_rl_ros/nodes/sim_robot.py", "Params"),
                      ("sim.", REPO / "robot_rl/ros/sim_robot.py", "SimRobotConfig")],
        "policy_actor": [("env.", REPO / "robot_rl/ros/env.py", "RosEnvConfig"),
                         ("actor.", REPO / "robot_rl/ros/actor.py", "ActorConfig")],
        "teleop": [("", REPO / "robot_rl/ros/teleop.py", "TeleopConfig")],
        "reward_classifier": [("", REPO / "robot_rl/ros/reward.py", "RewardNodeConfig")],
    }
    for name, spec in SPECS.items():
        declared = {prefix + f for prefix, src, cls in sources[name] for f in _fields(src, cls)}
        for param_file in spec.params:
            data = yaml.safe_load((PKG / param_file).read_text())
            params = _flatten(data["/**"]["ros__parameters"])
            unknown = set(params) - declared
            assert not unknown, f"{param_file}: parameters {sorted(unknown)} are not declared by {name}"


def _fields(path: Path, cls: str) -> list[str]:
    tree = ast.parse(path.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    return [s.target.id for s in node.body if isinstance(s, ast.AnnAssign)]


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flatten(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


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


# --- run the launch files against stand-in launch modules -------------------------------------------------
class _Action:
    def __init__(self, *args, **kwargs) -> None:
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration:
    def __init__(self, name: str) -> None:
        self.name = name

    def perform(self, context: dict) -> str:
        return context[self.name]


@pytest.fixture
def fake_launch(monkeypatch):
    mods = {name: types.ModuleType(name) for name in
            ("launch", "launch.actions", "launch.substitutions", "launch.launch_description_sources",
             "launch_ros", "launch_ros.actions")}
    mods["launch"].LaunchDescription = lambda actions: list(actions)
    for cls in ("DeclareLaunchArgument", "OpaqueFunction", "SetEnvironmentVariable", "ExecuteProcess",
                "IncludeLaunchDescription"):
        setattr(mods["launch.actions"], cls, type(cls, (_Action,), {}))
    mods["launch.substitutions"].LaunchConfiguration = _LaunchConfiguration
    mods["launch.launch_description_sources"].PythonLaunchDescriptionSource = type("Src", (_Action,), {})
    mods["launch_ros.actions"].Node = type("Node", (_Action,), {})
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.delitem(sys.modules, "robot_rl_ros.launch_support", raising=False)
    return mods


def _run(path: Path, **args: str) -> tuple[list, dict]:
    spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    actions = module.generate_launch_description()
    kinds = [(type(a).__name__, a) for a in actions]
    declared = {a.args[0]: a.kwargs["default_value"] for k, a in kinds if k == "DeclareLaunchArgument"}
    for k, a in kinds:
        if k == "DeclareLaunchArgument":
            assert a.kwargs.get("description"), f"{path.name}: argument {a.args[0]} has no description"
    context = {**declared, **args}
    produced = [x for k, a in kinds if k == "OpaqueFunction" for x in a.kwargs["function"](context)]
    env = {a.args[0]: a.args[1] for a in actions if type(a).__name__ == "SetEnvironmentVariable"}
    return produced, env


def test_sim_launch_starts_sim_bridge_cameras_and_actor(fake_launch) -> None:
    produced, env = _run(PKG / "launch/sim_robot.launch.py", cameras="front,wrist", policy="random")
    nodes = {n.kwargs["name"]: n.kwargs for n in produced}
    assert set(nodes) == {"sim_robot", "robot_bridge", "camera_bridge_front", "camera_bridge_wrist",
                          "policy_actor"}
    assert env == {"FASTDDS_BUILTIN_TRANSPORTS": "LARGE_DATA"}
    assert all(n["namespace"] == "sim" for n in nodes.values())
    actor = nodes["policy_actor"]["parameters"][-1]
    assert actor["actor.policy"] == "random" and actor["env.cameras"] == ["sim_front", "sim_wrist"]
    assert nodes["sim_robot"]["parameters"][-1]["sim.cameras"] == ["front", "wrist"]
    assert all(Path(p).exists() for n in nodes.values() for p in n["parameters"] if isinstance(p, str))


def test_real_arm_launch_with_learner(fake_launch) -> None:
    produced, _ = _run(PKG / "launch/real_arm.launch.py", hardware="ur5e", learner="true",
                       learner_address="gpu-box:50051", cameras="realsense_d435_front,realsense_d405_wrist")
    names = [p.kwargs.get("name") for p in produced if type(p).__name__ == "Node"]
    assert names == ["robot_bridge", "camera_bridge_front", "camera_bridge_wrist", "teleop", "policy_actor"]
    learner = [p for p in produced if type(p).__name__ == "ExecuteProcess"]
    cmd = learner[0].kwargs["cmd"]
    assert cmd[:2] == list(LEARNER_COMMAND)
    config = parse(cmd[1:])  # the command robot-rl really accepts, building the actor's spaces
    assert isinstance(config, LearnerConfig) and (config.link.host, config.link.port) == ("gpu-box", 50051)
    assert not config.evaluate
    env = make_env(config.train.task, "state", 64, (), config.env_factory, config.env_kwargs)
    actor_env = make_contract_env("ur5e", ["realsense_d435_front", "realsense_d405_wrist"])
    assert env.observation_space == actor_env.observation_space
    bridge = produced[0].kwargs["parameters"][-1]
    assert bridge == {"hardware_config": "ur5e"}


def test_real_arm_launch_rlif_reaches_actor_and_learner(fake_launch) -> None:
    produced, _ = _run(PKG / "launch/real_arm.launch.py", learner="true", intervention_mode="rlif")
    actor = next(p for p in produced if p.kwargs.get("name") == "policy_actor").kwargs["parameters"][-1]
    assert actor["actor.intervention_mode"] == "rlif"
    cmd = next(p for p in produced if type(p).__name__ == "ExecuteProcess").kwargs["cmd"]
    assert parse(cmd[1:]).train.intervention_mode == "rlif"
    produced, _ = _run(PKG / "launch/learner.launch.py", intervention_mode="rlif")
    assert parse(produced[0].kwargs["cmd"][1:]).train.intervention_mode == "rlif"


def test_real_arm_launch_with_reward_classifier(fake_launch) -> None:
    produced, _ = _run(PKG / "launch/real_arm.launch.py", reward_classifier="/data/pick.pt", teleop="false")
    nodes = {p.kwargs["name"]: p.kwargs for p in produced if type(p).__name__ == "Node"}
    assert nodes["reward_classifier"]["parameters"][-1] == {"classifier": "/data/pick.pt"}
    assert nodes["policy_actor"]["parameters"][-1]["env.reward"] is True  # the actor reads rl/reward


def test_real_arm_launch_real_time_priority(fake_launch) -> None:
    produced, _ = _run(PKG / "launch/real_arm.launch.py", rt_priority="50")
    prefixes = {p.kwargs["name"]: p.kwargs.get("prefix") for p in produced if type(p).__name__ == "Node"}
    assert prefixes == {"robot_bridge": "chrt -f 50", "camera_bridge_front": None, "teleop": None,
                        "policy_actor": "chrt -f 50"}
    with pytest.raises(ValueError, match=r"real_arm.launch.py rt_priority='high': expected an integer 0-99"):
        _run(PKG / "launch/real_arm.launch.py", rt_priority="high")


def test_bridge_and_learner_launch(fake_launch) -> None:
    produced, _ = _run(PKG / "launch/robot_bridge.launch.py", hardware="franka_fr3", namespace="fr3")
    assert produced[0].kwargs["namespace"] == "fr3"
    produced, _ = _run(PKG / "launch/learner.launch.py", learner_args="--train.run-dir runs/x")
    cmd = produced[0].kwargs["cmd"]
    assert cmd[:2] == list(LEARNER_COMMAND)
    config = parse(cmd[1:])
    assert isinstance(config, LearnerConfig) and config.link.host == "0.0.0.0"
    assert str(config.train.run_dir) == "runs/x" and "franka_fr3" in config.env_kwargs
    with pytest.raises(ValueError, match="host:port"):
        learner_argv("gpu-box", "franka_fr3")
