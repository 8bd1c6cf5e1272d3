"""Every node we launch, defined once: the launch files and the process tests start the same things.

A spec names the package, the executable, the default node name and the parameter files (relative to the
package's share directory). ``argv`` builds the command line the tests run; ``launch_kwargs`` the keyword
arguments of ``launch_ros.actions.Node``. Pure Python: importable without launch or rclpy.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGE = "robot_rl_ros"
ENVIRONMENT = {
    # Fast DDS's default 512 KB shared-memory segment drops best-effort samples above ~0.5 MB (camera
    # images): LARGE_DATA adds a TCP transport for them (ros2/rmw_fastrtps#739).
    "FASTDDS_BUILTIN_TRANSPORTS": "LARGE_DATA",
}


@dataclass(frozen=True)
class NodeSpec:
    executable: str
    name: str
    params: tuple[str, ...]
    """Parameter files relative to ``share/robot_rl_ros`` (``config/<node>.yaml``), in order."""
    remaps: tuple[tuple[str, str], ...] = ()
    package: str = PACKAGE

    def param_files(self, share: Path) -> list[Path]:
        return [share / p for p in self.params]

    def argv(self, share: Path, namespace: str = "", name: str | None = None,
             overrides: Mapping[str, Any] | None = None, exe_dir: Path | None = None,
             rt_priority: int = 0) -> list[str]:
        """``[chrt -f P] <exe> --ros-args --params-file f -r __ns:=/x -r __node:=n -p k:=v -r a:=b``."""
        args = [*rt_prefix(rt_priority), str(executable_path(self.executable, exe_dir)), "--ros-args"]
        for f in self.param_files(share):
            args += ["--params-file", str(f)]
        if namespace:
            args += ["-r", f"__ns:={namespace if namespace.startswith('/') else '/' + namespace}"]
        args += ["-r", f"__node:={name or self.name}"]
        for key, value in (overrides or {}).items():
            args += ["-p", f"{key}:={_param_text(value)}"]
        for src, dst in self.remaps:
            args += ["-r", f"{src}:={dst}"]
        return args

    def launch_kwargs(self, share: Path, namespace: str = "", name: str | None = None,
                      overrides: Mapping[str, Any] | None = None, rt_priority: int = 0) -> dict[str, Any]:
        params: list[Any] = [str(f) for f in self.param_files(share)]
        if overrides:
            params.append(dict(overrides))
        kwargs = {"package": self.package, "executable": self.executable, "name": name or self.name,
                  "namespace": namespace, "parameters": params, "remappings": list(self.remaps),
                  "output": "screen", "emulate_tty": True}
        if rt_priority:
            kwargs["prefix"] = " ".join(rt_prefix(rt_priority))
        return kwargs


def check_rt_priority(value: int | str, source: str = "rt_priority") -> int:
    """A SCHED_FIFO priority 1-99 for a control process (as real-time drivers run), or 0: normal scheduling.
    Running with one needs the privilege (root, or an ``rtprio`` limit in limits.conf)."""
    try:
        p = int(value)
    except (TypeError, ValueError):
        p = -1
    if not 0 <= p <= 99:
        raise ValueError(f"{source}={value!r}: expected an integer 0-99 (0: normal scheduling)")
    return p


def rt_prefix(priority: int) -> list[str]:
    return ["chrt", "-f", str(priority)] if check_rt_priority(priority) else []


def _param_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_param_text(v) if not isinstance(v, str) else f"'{v}'" for v in value) + "]"
    return str(value)


SPECS: dict[str, NodeSpec] = {
    "robot_bridge": NodeSpec("robot_bridge", "robot_bridge", ("config/robot_bridge.yaml",)),
    "camera_bridge": NodeSpec("camera_bridge", "camera_bridge", ("config/camera_bridge.yaml",)),
    "policy_actor": NodeSpec("policy_actor", "policy_actor", ("config/policy_actor.yaml",)),
    "sim_robot": NodeSpec("sim_robot", "sim_robot", ("config/sim_robot.yaml",)),
    "teleop": NodeSpec("teleop", "teleop", ("config/teleop.yaml",)),
    "reward_classifier": NodeSpec("reward_classifier", "reward_classifier", ("config/reward_classifier.yaml",)),
}
LEARNER_COMMAND = ("robot-rl", "learner")
"""The learner is not a ROS node: launch files start it as a process (``learner_argv``)."""
SPEC_ENV = "robot_rl.ros.spec_env:make_contract_env"


def learner_argv(address: str, hardware_config: str, cameras: Sequence[str] = (), privileged_task: str = "",
                 extra: Sequence[str] = (), intervention_mode: str = "hil", base_policy: str = "",
                 guide_policy: str = "", action_history: int = 0) -> list[str]:
    """``robot-rl learner`` listening on ``address`` (host:port) for the policy actor of this arm: the learner
    builds the same observation/action spaces from the hardware and camera configs (no ROS, no robot), so the
    handshake matches; ``intervention_mode`` must be the actor's too. Real arms cannot be evaluated on the
    learner's machine: ``--no-evaluate``. ``base_policy``: learn a residual over this base (``--preset
    residual``); ``guide_policy``: jump-start RL with this guide on the curriculum, moved by the training
    episodes since the learner does not evaluate; the actor runs the same file, in both cases.
    ``action_history``: observe the last N actions sent (the actor's ``action_history`` too)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"learner address must be host:port, got {address!r}")
    kwargs = {"hardware_config": hardware_config, "cameras": list(cameras), "privileged_task": privileged_task}
    return [*LEARNER_COMMAND, "--link.host", host, "--link.port", port, "--train.env-factory", SPEC_ENV,
            "--train.env-kwargs", json.dumps(kwargs, sort_keys=True), "--no-evaluate",
            "--train.intervention-mode", intervention_mode,
            *(["--train.preset", "residual", "--train.base-policy", base_policy] if base_policy else []),
            *(["--train.guide.policy", guide_policy] if guide_policy else []),
            *(["--train.action-history", str(action_history)] if action_history else []),
            *extra]


def share_dir() -> Path:
    """The installed share directory (ament index, else ``<prefix>/share``), else this source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory(PACKAGE))
    except Exception:  # the ament index is absent, or AMENT_PREFIX_PATH does not name this prefix
        pass
    for candidate in (Path(sys.prefix) / "share" / PACKAGE, Path(__file__).resolve().parents[1]):
        if (candidate / "package.xml").exists():
            return candidate
    raise FileNotFoundError(f"no share directory of {PACKAGE}: cd ros2_ws && colcon build, then source "
                            "ros2_ws/install/setup.bash")


def executable_path(executable: str, exe_dir: Path | None = None) -> Path:
    """Console script of ``executable``: ``exe_dir``, ``<prefix>/lib/robot_rl_ros`` of the installed package
    (colcon, as ``launch_ros`` finds it), the venv's bin (pip), PATH."""
    candidates = [exe_dir / executable] if exe_dir else []
    try:
        from ament_index_python.packages import get_package_prefix

        candidates.append(Path(get_package_prefix(PACKAGE)) / "lib" / PACKAGE / executable)
    except Exception:  # the ament index is absent or does not know the package
        pass
    prefix = Path(sys.prefix)
    candidates += [prefix / "lib" / PACKAGE / executable, prefix / "bin" / executable]
    for c in candidates:
        if c.exists() and os.access(c, os.X_OK):
            return c
    found = shutil.which(executable)
    if found:
        return Path(found)
    raise FileNotFoundError(
        f"executable {executable!r} of {PACKAGE} not found; build it (cd ros2_ws && colcon build, then source "
        f"ros2_ws/install/setup.bash) or pip install ./ros2_ws/src/{PACKAGE}"
    )
