"""The MJCF model files in the repository's ``sim/`` folder, and the one function that composes a scene.

``sim/<task>.xml`` is the complete scene of each registered task at its default config (arm, gripper,
impedance controller, table, cameras and the task's bodies), as a plain file that plain MuJoCo, its
viewer, the batched backends and other simulators' MJCF importers load. Sizes, masses, gains and the
physics step come from the task's config, so the files are the output of ``task_scene_xml`` for the
default configs; a test fails when a committed file and the code disagree, and
``robot-rl write-sim-models`` rewrites them. What varies per episode (object and goal poses,
domain randomisation) is set by the task's ``reset`` on the compiled model, never written into a file.

A wheel carries the files as ``robot_rl/sim/mjcf/`` (``setup.py``); a checkout reads ``sim/`` directly.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from robot_rl.sim.arm import build_scene_xml
from robot_rl.sim.menagerie import add_menagerie_visuals

if TYPE_CHECKING:
    from robot_rl.sim.tasks.base import Task

CHECKOUT_DIR = Path(__file__).resolve().parents[2] / "sim"
PACKAGED_DIR = Path(__file__).resolve().parent / "mjcf"
REGENERATE = "robot-rl write-sim-models"


def task_scene_xml(task: Task) -> str:
    """The full scene of ``task`` at its config: what the CPU env compiles and ``sim/<task>.xml`` holds."""
    cfg = task.config.env
    worldbody, assets = task.scene_xml()
    xml = build_scene_xml(worldbody, assets, cfg.physics_dt_s, cfg.gains, task_sensors=task.sensor_xml())
    if cfg.menagerie_panda_dir is not None:
        xml = add_menagerie_visuals(xml, cfg.menagerie_panda_dir)
    return xml


def model_dir() -> Path:
    """``sim/`` of a checkout, else the copy installed with the package."""
    for directory in (CHECKOUT_DIR, PACKAGED_DIR):
        if directory.is_dir():
            return directory
    raise FileNotFoundError(f"no model files: neither {CHECKOUT_DIR} (a checkout) nor {PACKAGED_DIR} (an "
                            "installed wheel) exists; reinstall robot_rl or run " + REGENERATE)


def model_file(task_name: str) -> Path:
    """``sim/<task>.xml`` of a registered task."""
    from robot_rl.sim.registry import task_entry

    task_entry(task_name)  # an unknown name is refused with the registered ones
    path = model_dir() / f"{task_name}.xml"
    if not path.is_file():
        raise FileNotFoundError(f"task {task_name!r} has no model file {path}; write it with {REGENERATE}")
    return path


def default_model_text(task_name: str) -> str:
    """What ``sim/<task>.xml`` must hold: the task's default-config scene, indented, with a header."""
    from robot_rl.sim.registry import task_entry

    entry = task_entry(task_name)
    root = ET.fromstring(task_scene_xml(entry.task(entry.config())))
    root.insert(0, ET.Comment(
        f" {task_name}: the scene at the task's default config ({entry.config.__name__}). Written by "
        f"{REGENERATE} from robot_rl/sim/arm.py and robot_rl/sim/tasks/{task_name}.py; change those and "
        "rewrite, or a test reports the difference. Per-episode poses are set by the task's reset. "))
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="unicode") + "\n"


def write_model_files(directory: Path = CHECKOUT_DIR) -> list[Path]:
    from robot_rl.sim.registry import TASKS

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TASKS:
        path = directory / f"{name}.xml"
        path.write_text(default_model_text(name))
        written.append(path)
    return written


def stale_model_files(directory: Path = CHECKOUT_DIR) -> list[str]:
    """Registered tasks whose file in ``directory`` is missing or differs from the code."""
    from robot_rl.sim.registry import TASKS

    return [name for name in TASKS
            if not (directory / f"{name}.xml").is_file()
            or (directory / f"{name}.xml").read_text() != default_model_text(name)]
