"""docs/architecture.md: the package picture (Mermaid), the layer order and the package sizes."""

from __future__ import annotations

from layering.graph import PackageGraph
from layering.layers import LAYERS, OPERATOR_USES, Layer, beyond_the_contract, layer_of, upward

HEADER = """\
# Architecture

The packages of `dataflow_engine` and `dataflow_operator` and the imports between them, read
from the sources by `hack/architecture` (which writes this file; do not edit it by hand).
`tests/unit/tooling/test_architecture.py` fails when this file is stale, when a package imports one
of a higher layer, and when the operator uses more of the engine than the driver protocol, the
spec and the compiler. Both rules are declared once, in `hack/layering/layers.py`.
"""


def render(graph: PackageGraph, layers: tuple[Layer, ...] = LAYERS) -> str:
    by_layer: dict[int, list[str]] = {}
    for package in sorted(graph.modules):
        by_layer.setdefault(layer_of(package, layers), []).append(package)
    sections = [
        HEADER,
        _picture(graph, layers, by_layer),
        _layer_table(layers, by_layer),
        _size_table(graph, layers, by_layer),
        _upward_section(graph, layers),
        _operator_section(graph),
    ]
    return "\n".join(sections)


def _node(package: str) -> str:
    """A Mermaid id (no dots; the prefix keeps ids off Mermaid's keywords and edge markers)."""
    return "p_" + package.replace(".", "_")


def _picture(graph: PackageGraph, layers: tuple[Layer, ...],
             by_layer: dict[int, list[str]]) -> str:
    """Importers above what they import; one box per layer."""
    lines = ["## Packages and imports", "", "An arrow points from the importing package to the "
             "imported one.", "", "```mermaid", "flowchart TB"]
    for index in sorted(by_layer, reverse=True):
        lines.append(f'  subgraph L{index}["{index}: {layers[index].name}"]')
        lines.extend(f'    {_node(package)}["{package}"]' for package in by_layer[index])
        lines.append("  end")
    lines.extend(f"  {_node(source)} --> {_node(target)}"
                 for source, target in sorted(graph.arrows))
    lines += ["```", ""]
    return "\n".join(lines)


def _layer_table(layers: tuple[Layer, ...], by_layer: dict[int, list[str]]) -> str:
    lines = ["## Layers, lowest first", "", "| layer | name | packages |", "| --- | --- | --- |"]
    lines.extend(f"| {index} | {layer.name} | "
                 f"{', '.join(f'`{package}`' for package in by_layer.get(index, []))} |"
                 for index, layer in enumerate(layers))
    return "\n".join([*lines, ""])


def _size_table(graph: PackageGraph, layers: tuple[Layer, ...],
                by_layer: dict[int, list[str]]) -> str:
    lines = ["## Package sizes", "",
             "| package | layer | modules | imports | imported by |",
             "| --- | --- | ---: | ---: | ---: |"]
    for index in sorted(by_layer):
        for package in by_layer[index]:
            imports = sum(1 for source, _ in graph.arrows if source == package)
            imported_by = sum(1 for _, target in graph.arrows if target == package)
            lines.append(f"| `{package}` | {layers[index].name} | {graph.modules[package]} | "
                         f"{imports} | {imported_by} |")
    lines.append(f"| total: {len(graph.modules)} packages, {len(graph.arrows)} arrows | | "
                 f"{sum(graph.modules.values())} | | |")
    return "\n".join([*lines, ""])


def _upward_section(graph: PackageGraph, layers: tuple[Layer, ...]) -> str:
    arrows = upward(graph.arrows, layers)
    lines = ["## Upward arrows", ""]
    if not arrows:
        return "\n".join([*lines, "None.", ""])
    lines.extend(f"- `{source}` -> `{target}` ({count} modules)"
                 for (source, target), count in sorted(arrows.items()))
    return "\n".join([*lines, ""])


def _operator_section(graph: PackageGraph) -> str:
    lines = ["## What the operator uses of the engine", "",
             "Only " + ", ".join(f"`{package}`" for package in OPERATOR_USES) + ".", ""]
    beyond = beyond_the_contract(graph.arrows)
    if beyond:
        lines += ["Beyond that:", ""]
        lines.extend(f"- `{source}` -> `{target}` ({count} modules)"
                     for (source, target), count in sorted(beyond.items()))
        lines.append("")
    return "\n".join(lines)
