"""The package picture: docs/architecture.md is what hack/architecture generates, and no
package imports one of a higher layer (hack/layering/layers.py declares the order)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack"))

from layering.cli import DOCUMENT  # noqa: E402
from layering.graph import PackageGraph, package_graph, read_graph  # noqa: E402
from layering.imports import read_modules  # noqa: E402
from layering.layers import Layer, beyond_the_contract, upward  # noqa: E402
from layering.picture import render  # noqa: E402

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def graph() -> PackageGraph:
    return read_graph(REPO)


def test_docs_architecture_is_what_hack_architecture_generates(graph: PackageGraph) -> None:
    assert (REPO / DOCUMENT).read_text() == render(graph), (
        f"{DOCUMENT} is stale: run .venv/bin/python hack/architecture")


def test_no_package_imports_a_higher_layer(graph: PackageGraph) -> None:
    arrows = upward(graph.arrows)
    assert not arrows, "imports of a higher layer (move the code, or the layer in " \
        "hack/layering/layers.py):\n" + "\n".join(
            f"  {source} -> {target} ({count} modules)"
            for (source, target), count in sorted(arrows.items()))


def test_the_operator_uses_only_the_protocol_the_spec_and_the_compiler(
        graph: PackageGraph) -> None:
    beyond = beyond_the_contract(graph.arrows)
    assert not beyond, "the operator imports engine packages beyond its contract " \
        "(OPERATOR_USES in hack/layering/layers.py):\n" + "\n".join(
            f"  {source} -> {target} ({count} modules)"
            for (source, target), count in sorted(beyond.items()))
    assert beyond_the_contract({("operator.backends", "engine.runtime.jobmaster"): 1}) == {
        ("operator.backends", "engine.runtime.jobmaster"): 1}


def test_an_import_of_a_higher_layer_is_reported(tmp_path: Path) -> None:
    package = tmp_path / "dataflow_engine"
    (package / "runtime" / "tasks").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "spec.py").write_text("from .runtime.tasks import failures\n")
    (package / "runtime" / "__init__.py").write_text("")
    (package / "runtime" / "tasks" / "__init__.py").write_text("")
    (package / "runtime" / "tasks" / "failures.py").write_text("from dataflow_engine import spec\n")
    layers = (Layer("basics", ("engine", "engine.spec")),
              Layer("runtime", ("engine.runtime", "engine.runtime.*")))

    arrows = package_graph(read_modules(tmp_path, "dataflow_engine")).arrows

    assert arrows == {("engine.spec", "engine.runtime.tasks"): 1,
                      ("engine.runtime.tasks", "engine.spec"): 1}
    assert upward(arrows, layers) == {("engine.spec", "engine.runtime.tasks"): 1}
