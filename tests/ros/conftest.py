"""ROS 2 tests: each ``test_ros_node_*`` module does ``pytest.importorskip("rclpy")`` (skipped cleanly where
the wheels are absent) and otherwise starts real node processes over DDS. The pure tests here
(``test_ros_config``, ``test_ros_library``, ``test_ros_launch_static``) run everywhere PyYAML is installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

HARDWARE = Path(__file__).resolve().parents[2] / "hardware_configs"


def write_arm_config(directory: Path, base: str = "sim_panda", **changes: Any) -> str:
    """A copy of ``hardware_configs/arms/<base>.yaml`` with nested ``changes`` (dicts merge), as a path."""
    import yaml

    data = yaml.safe_load((HARDWARE / "arms" / f"{base}.yaml").read_text())

    def merge(dst: dict, src: dict) -> None:
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v)
            else:
                dst[k] = v

    merge(data["arm"], changes)
    path = directory / f"{base}_{abs(hash(repr(sorted(changes.items())))) % 10**8}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def write_camera_config(directory: Path, **fields: Any) -> str:
    import yaml

    path = directory / f"camera_{fields['name']}.yaml"
    path.write_text(yaml.safe_dump({"camera": fields}))
    return str(path)


@contextmanager
def ros_session(key: str, log_dir: Path, namespace: str = "") -> Iterator[tuple[Any, Any]]:
    """(Processes, Probe) on a freshly locked domain; everything is torn down afterwards."""
    from ros_harness import ENVIRONMENT, Probe, Processes, ros_domain

    os.environ.update(ENVIRONMENT)  # read by this process's DDS participant too
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    with ros_domain(key) as domain:
        procs = Processes(domain, log_dir)
        probe = Probe(domain, namespace)
        try:
            yield procs, probe
            probe.check()
        finally:
            probe.close()
            procs.stop_all()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)
