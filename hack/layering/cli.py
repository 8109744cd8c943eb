"""hack/architecture: regenerate docs/architecture.md from the sources."""

from __future__ import annotations

from pathlib import Path

from layering.graph import read_graph
from layering.layers import beyond_the_contract, upward
from layering.picture import render

REPO = Path(__file__).resolve().parents[2]
DOCUMENT = Path("docs/architecture.md")


def main() -> int:
    graph = read_graph(REPO)
    (REPO / DOCUMENT).write_text(render(graph))
    arrows = upward(graph.arrows)
    print(f"{DOCUMENT}: {sum(graph.modules.values())} modules in {len(graph.modules)} packages, "
          f"{len(graph.arrows)} arrows, {len(arrows)} upward")
    for source, target in sorted(arrows):
        print(f"  upward: {source} -> {target}")
    beyond = beyond_the_contract(graph.arrows)
    for source, target in sorted(beyond):
        print(f"  beyond the operator's contract: {source} -> {target}")
    return 1 if arrows or beyond else 0
