"""The import graph of a source tree, read with ``ast`` (nothing is imported or executed)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Module:
    """One source file: its dotted name, its line count and the modules it imports."""

    name: str
    lines: int
    imports: frozenset[str]


def read_modules(root: Path, package: str) -> list[Module]:
    """Every module of ``package`` (a directory under ``root``), sorted by name."""
    paths = sorted((root / package).rglob("*.py"))
    names = {_module_name(root, path) for path in paths}
    return [_read(root, path, names) for path in paths]


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _read(root: Path, path: Path, names: set[str]) -> Module:
    text = path.read_text()
    name = _module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    imports: set[str] = set()
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            imports.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            # ``from package import module`` imports the submodule; ``from module import name``
            # imports the module itself.
            submodules = {f"{base}.{alias.name}" for alias in node.names} & names
            imports.update(submodules or {base})
    return Module(name, len(text.splitlines()), frozenset(imports))


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = ".".join(parts[:len(parts) - node.level + 1])
    return f"{base}.{node.module}" if node.module else base
