"""The core stays importable without gRPC; the distributed configs too (the CLI builds them)."""

from __future__ import annotations

import subprocess
import sys


def test_core_and_cli_import_without_grpc() -> None:
    code = (
        "import sys; sys.modules['grpc'] = None; sys.modules['grpc_tools'] = None\n"
        "import robot_rl, robot_rl.cli, robot_rl.training.loop\n"
        "from robot_rl.distributed import LearnerConfig, available\n"
        "assert not available()\n"
        "try:\n"
        "    import robot_rl.distributed.learner\n"
        "except ImportError as e:\n"
        "    assert 'robot_rl[dist]' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('expected an ImportError naming the extra')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
