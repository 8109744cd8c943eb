"""The package graph: modules and lines per package, and import arrows between packages."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from layering.imports import Module, read_modules
from layering.layers import package_of

#: Where each root package's sources are, relative to the repository.
SOURCES = {"dataflow_engine": Path("engine"), "dataflow_operator": Path("operator")}


@dataclass(frozen=True)
class PackageGraph:
    modules: Counter[str]
    lines: Counter[str]
    #: ``(importer, imported)`` -> how many module imports make the arrow.
    arrows: dict[tuple[str, str], int]


def read_graph(repo: Path) -> PackageGraph:
    modules = [module for root, source in SOURCES.items()
               for module in read_modules(repo / source, root)]
    return package_graph(modules)


def package_graph(modules: list[Module]) -> PackageGraph:
    counts: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    arrows: Counter[tuple[str, str]] = Counter()
    for module in modules:
        source = package_of(module.name)
        assert source is not None, module.name
        counts[source] += 1
        lines[source] += module.lines
        targets = {package_of(name) for name in module.imports} - {None, source}
        arrows.update((source, target) for target in targets if target is not None)
    return PackageGraph(counts, lines, dict(arrows))
