"""YAML for configs that move hardware: PyYAML's safe loader, but a key given twice in one mapping is an error.

PyYAML keeps the last of two equal keys without a word; in a hardware config that silently replaces a limit.
Errors name the file, the line and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class _UniqueKeyLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key]})", key_node.start_mark)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: Path) -> Any:
    """Parse ``path``; ``ValueError`` naming the file (and line) for unreadable YAML or a duplicate key."""
    try:
        text = path.read_text()
    except OSError as err:
        raise ValueError(f"{path}: cannot read ({err.strerror})") from err
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or str(err)
        raise ValueError(f"{where}: not valid YAML: {problem}") from err
