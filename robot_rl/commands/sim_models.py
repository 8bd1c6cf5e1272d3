"""``robot-rl write-sim-models``: write (or check) the MJCF files in ``sim/`` from the task code."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WriteSimModelsArgs:
    """Write ``sim/<task>.xml`` for every registered task at its default config (after changing a task's
    bodies, the arm or a default), or with ``--check`` only report the files that differ (exit status 1)."""

    check: bool = False
    dir: Path | None = None
    """Folder of the files (default: ``sim/`` of this checkout)."""


def write_sim_models_command(args: WriteSimModelsArgs) -> int:
    from robot_rl.sim.models import CHECKOUT_DIR, REGENERATE, stale_model_files, write_model_files

    directory = args.dir or CHECKOUT_DIR
    if args.check:
        stale = stale_model_files(directory)
        for name in stale:
            print(f"{directory / name}.xml is missing or differs from the code; rewrite it with {REGENERATE}",
                  file=sys.stderr)
        return 1 if stale else 0
    for path in write_model_files(directory):
        print(path)
    return 0
