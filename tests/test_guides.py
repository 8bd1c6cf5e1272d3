"""The guides stay true: every command in ``docs/guides/*.md``, ``docs/sim_to_real.md`` and README's recipes table
runs here, small.

Each guide runs top to bottom in its own sandbox (a copy of ``robot_rl/`` and ``hardware_configs/`` first on
``PYTHONPATH``, a private ``HOME``), so a guide that edits the package or writes files changes only the copy.
``robot-rl`` commands get small budgets appended (the last flag wins), so they check that each command, its
flags and the files it needs work, not how well it learns (docs/benchmarks.md does that).

A code block is steered by an HTML comment on the line before it:

- none: a ``bash`` block runs (other languages are illustrations);
- ``<!-- doc-check: skip: REASON -->``: not run here (a robot, a person at the keyboard, the internet);
- ``<!-- doc-check: file PATH -->``: the block's text is written to PATH in the sandbox;
- ``<!-- doc-check: insert PATH after "ANCHOR" -->``: inserted after the first line of PATH containing ANCHOR;
- ``<!-- doc-check: launch -->``: each ``ros2 launch robot_rl_ros FILE args`` line is planned (its arguments
  exist, its configs load) without starting ROS.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = [*sorted((ROOT / "docs" / "guides").glob("*.md")), ROOT / "docs" / "sim_to_real.md"]
PACKAGE_SRC = ROOT / "ros2_ws" / "src" / "robot_rl_ros"
DIRECTIVE = re.compile(r"^<!--\s*doc-check:\s*(.*?)\s*-->$")
INSERT = re.compile(r'^insert (\S+) after "(.*)"$')
SMALL = {
    "train": "--total-env-steps 150 --learning-starts 100 --eval-every 150 --eval-episodes 1 --scripted-demos 2 "
             "--batch-size 16 --agent.utd-ratio 1 --torch-threads 1 --no-progress",
    "learner": "--train.total-env-steps 150 --train.learning-starts 100 --train.eval-every 150 "
               "--train.eval-episodes 1 --train.scripted-demos 2 --train.batch-size 16 --train.agent.utd-ratio 1 "
               "--train.torch-threads 1",
    "actor": "--max-steps 150 --torch-threads 1",
    "record-demos": "--episodes 2",
    "eval": "--episodes 2",
    "record-success-fail": "--episodes 4",
    "train-classifier": "--classifier.steps 20 --classifier.torch-threads 1",
    "train-bc": "--steps 50 --eval-episodes 1 --torch-threads 1",
    "check-symmetry": "--states 30 --image-states 2",
}
"""Flags appended to each ``robot-rl <command>`` of a guide."""


@dataclass
class Block:
    lang: str
    text: str
    directive: str | None
    where: str


def read_blocks(path: Path) -> list[Block]:
    blocks, lines = [], path.read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        directive = DIRECTIVE.match(before)
        blocks.append(Block(fence.group(1), "\n".join(lines[i + 1 : end]) + "\n",
                            directive.group(1) if directive else None, f"{path.name}:{i + 1}"))
        i = end + 1
    return blocks


def logical_lines(text: str) -> list[str]:
    """Shell lines with backslash continuations joined."""
    return [line for line in text.replace("\\\n", " ").splitlines() if line.strip()]


def shrink(line: str) -> str:
    """``line`` with ``SMALL`` flags after a ``robot-rl <command>`` or ``torchrun ... -m robot_rl.cli <command>``
    (before a trailing ``&``)."""
    # after VAR=value prefixes too, and as torchrun's module
    match = re.match(r"^\s*(?:\w+=\S+\s+)*(?:robot-rl|torchrun\s.*?-m\s+robot_rl\.cli)\s+([\w-]+)", line)
    if not match or match.group(1) not in SMALL:
        return line
    body, background = (line.rstrip()[:-1], " &") if line.rstrip().endswith("&") else (line, "")
    return f"{body.rstrip()} {SMALL[match.group(1)]}{background}"


def make_sandbox(tmp: Path) -> dict[str, str]:
    for name in ("robot_rl", "hardware_configs"):
        shutil.copytree(ROOT / name, tmp / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp / "home").mkdir()
    env = dict(os.environ)
    env.update(HOME=str(tmp / "home"), PYTHONPATH=os.pathsep.join([str(tmp), str(PACKAGE_SRC)]),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
               MUJOCO_GL=env.get("MUJOCO_GL", "egl"), ROS_DOMAIN_ID="87", PYTHONUNBUFFERED="1")
    return env


def check_launch_lines(block: Block, tmp: Path, env: dict[str, str]) -> None:
    for line in logical_lines(block.text):
        words = shlex.split(line, comments=True)
        if not words:
            continue
        assert words[:3] == ["ros2", "launch", "robot_rl_ros"], f"{block.where}: not a robot_rl_ros launch: {line}"
        stem = words[3].removesuffix(".launch.py")
        args = dict(w.split(":=", 1) for w in words[4:])
        probe = ("import sys, json; from robot_rl_ros.plans import plan; from robot_rl.ros.hardware import "
                 "load_arm_config; a = json.loads(sys.argv[1]); plan(sys.argv[2], **a); "
                 "'hardware' in a and load_arm_config(a['hardware'])")
        done = subprocess.run([sys.executable, "-c", probe, json.dumps(args), stem], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{block.where}: {line}\n{done.stderr[-3000:]}"


def run_blocks(blocks: list[Block], tmp: Path, env: dict[str, str]) -> None:
    for block in blocks:
        directive = block.directive or ""
        if directive.startswith("skip"):
            continue
        if directive.startswith("file "):
            target = tmp / directive.removeprefix("file ").strip()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
        elif insert := INSERT.match(directive):
            target, anchor = tmp / insert.group(1), insert.group(2).replace('\\"', '"')
            lines = target.read_text().splitlines(keepends=True)
            at = next(i for i, line in enumerate(lines) if anchor in line)
            target.write_text("".join(lines[: at + 1]) + block.text + "".join(lines[at + 1 :]))
        elif directive == "launch":
            check_launch_lines(block, tmp, env)
        elif block.lang == "bash":
            script = "\n".join(shrink(line) for line in logical_lines(block.text))
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp, env=env,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{script}\n{done.stdout[-3000:]}" \
                                         f"\n{done.stderr[-3000:]}"


def readme_recipes() -> list[Block]:
    """The commands of README's recipes table, one bash block each."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Recipes", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"`(robot-rl [^`]+)`", section)
    assert commands, "README.md: the recipes table has no robot-rl command"
    return [Block("bash", command, None, f"README.md recipe {i + 1}") for i, command in enumerate(commands)]


def test_every_block_is_run_or_skipped_with_a_reason() -> None:
    assert GUIDES, "no guides under docs/guides"
    for guide in GUIDES:
        for block in read_blocks(guide):
            directive = block.directive
            if directive is None or directive == "launch" or directive.startswith("file "):
                continue
            if directive.startswith("skip"):
                assert len(directive.removeprefix("skip").strip(": ")) > 10, f"{block.where}: skip needs a reason"
                continue
            assert INSERT.match(directive), f"{block.where}: unknown doc-check directive {directive!r}"


def test_shrink_appends_small_flags_before_a_trailing_ampersand() -> None:
    assert shrink("robot-rl eval runs/x") == "robot-rl eval runs/x --episodes 2"
    assert shrink("robot-rl actor --task reach &").endswith("--torch-threads 1 &")
    assert shrink("python -c 'print(1)'") == "python -c 'print(1)'"
    assert shrink("PYTHONPATH=. robot-rl eval runs/x") == "PYTHONPATH=. robot-rl eval runs/x --episodes 2"
    assert shrink("torchrun --nproc-per-node 2 -m robot_rl.cli eval runs/x").endswith("runs/x --episodes 2")


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.stem)
def test_guide_commands_run(guide: Path, tmp_path: Path) -> None:
    run_blocks(read_blocks(guide), tmp_path, make_sandbox(tmp_path))


def test_readme_recipes_run(tmp_path: Path) -> None:
    run_blocks(readme_recipes(), tmp_path, make_sandbox(tmp_path))
