"""The packages of ``robot_rl`` import each other in layers: no package may import one that imports it back
(directly or through others), lazily inside a function or not. A cycle fails here with the files that close it."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "robot_rl"


def package_of(module: str) -> str | None:
    """``robot_rl.x.y`` -> ``x`` for a subpackage ``x``; top-level modules (``robot_rl.cli``) are no package."""
    parts = module.split(".")
    if parts[0] != "robot_rl" or len(parts) < 2 or not (ROOT / parts[1]).is_dir():
        return None
    return parts[1]


def import_graph() -> dict[tuple[str, str], set[str]]:
    """(importing package, imported package) -> the files with such an import."""
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent)
        source = package_of(".".join(rel.with_suffix("").parts))
        if source is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                target = package_of(name)
                if target is not None and target != source:
                    edges[(source, target)].add(str(rel))
    return edges


def cycles(edges: dict[tuple[str, str], set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one package (Tarjan)."""
    succ: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        succ[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted({p for edge in edges for p in edge}):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_between_packages() -> None:
    edges = import_graph()
    problems = []
    for group in cycles(edges):
        inside = [f"  {a} -> {b}: {', '.join(sorted(edges[(a, b)]))}" for a in group for b in group if (a, b) in edges]
        problems.append(f"import cycle between {group}:\n" + "\n".join(inside))
    assert not problems, "\n".join(problems)


def test_the_cycle_check_finds_a_cycle() -> None:
    edges = {("a", "b"): {"a/x.py"}, ("b", "c"): {"b/y.py"}, ("c", "a"): {"c/z.py"}, ("c", "d"): {"c/w.py"}}
    assert cycles(edges) == [["a", "b", "c"]]


def test_the_core_library_imports_neither_ros_nor_the_runners() -> None:
    """The contract, data, agents and safety layers are what every backend and runner builds on."""
    edges = import_graph()
    low = {"utils", "envs", "data", "agents", "safety"}
    high = {"sim", "teleop", "rewards", "training", "distributed", "ros", "commands"}
    wrong = {edge: files for edge, files in edges.items() if edge[0] in low and edge[1] in high}
    assert not wrong, wrong
