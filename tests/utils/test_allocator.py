"""retain_freed_memory: freed learner-sized buffers are reused instead of faulted in again."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from robot_rl.utils.allocator import _glibc, retain_freed_memory

# Twelve 2.6 MB buffers (a 10-critic ensemble's activations at batch 256) allocated, written and freed per
# round, as in a learner update; prints minor page faults per round and the pages one round touches.
ROUNDS = textwrap.dedent(
    """
    import resource, sys, torch
    from robot_rl.utils.allocator import retain_freed_memory
    print(retain_freed_memory(int(sys.argv[1])))
    faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(3):
        [torch.ones(10, 256, 256) for _ in range(12)]
    start = faults()
    for _ in range(20):
        [torch.ones(10, 256, 256) for _ in range(12)]
    print((faults() - start) / 20, 12 * 10 * 256 * 256 * 4 // 4096)
    """
)


def fault_rounds(megabytes: int) -> tuple[bool, float, int]:
    out = subprocess.run(
        [sys.executable, "-c", ROUNDS, str(megabytes)], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    return out[0] == "True", float(out[1]), int(out[2])


@pytest.mark.skipif(_glibc() is None, reason="mallopt tuning is glibc-only")
def test_retained_heap_serves_freed_buffers_without_page_faults() -> None:
    applied, faults, pages = fault_rounds(256)
    assert applied
    assert faults < 0.05 * pages, f"{faults} minor faults per round of {pages} pages with the heap retained"


@pytest.mark.skipif(_glibc() is None, reason="mallopt tuning is glibc-only")
def test_zero_keeps_the_c_library_defaults() -> None:
    applied, _, _ = fault_rounds(0)
    assert not applied


def test_negative_size_is_refused() -> None:
    with pytest.raises(ValueError, match="-1"):
        retain_freed_memory(-1)
