"""Packaging beyond pyproject.toml: the wheel carries the top-level ``sim/`` model files as
``robot_rl/sim/mjcf/`` (where ``robot_rl.sim.models`` looks when there is no checkout)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithModels(build_py):
    def run(self) -> None:
        super().run()
        shutil.copytree(Path(__file__).parent / "sim", Path(self.build_lib) / "robot_rl" / "sim" / "mjcf",
                        dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithModels})
