"""The layer order of the packages, lowest first, and the arrows that break it.

A package may import packages of its own layer and of lower layers; an import of a higher
layer is an upward arrow. This list is the one place the order is declared.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase


@dataclass(frozen=True)
class Layer:
    """A name and the packages in it (``fnmatch`` patterns over package names)."""

    name: str
    packages: tuple[str, ...]


LAYERS: tuple[Layer, ...] = (
    Layer("engine basics", ("engine", "engine.errors", "engine.spec", "engine.functions",
                            "engine.types")),
    # Event time, durations and window assigners are Flink's API-level model (flink-core and
    # streaming.api.windowing): the graph names window operators with them.
    Layer("time", ("engine.runtime.time",)),
    Layer("windowing", ("engine.runtime.windowing",)),
    Layer("graph", ("engine.graph",)),
    Layer("compiler", ("engine.compiler", "engine.render")),
    Layer("rest messages", ("engine.rest",)),
    Layer("secrets", ("engine.runtime.secrets",)),
    Layer("state", ("engine.runtime.state",)),
    Layer("functions", ("engine.runtime.functions",)),
    Layer("checkpoint", ("engine.runtime.checkpoint",)),
    Layer("network", ("engine.runtime.network",)),
    Layer("tasks", ("engine.runtime.tasks",)),
    Layer("streamoperators", ("engine.runtime.streamoperators",)),
    Layer("taskmanager", ("engine.runtime.taskmanager",)),
    Layer("spark", ("engine.runtime.spark",)),
    Layer("jobmaster", ("engine.runtime.jobmaster",)),
    Layer("client", ("engine.runtime.client",)),
    Layer("runtime", ("engine.runtime",)),
    Layer("api", ("engine.api",)),
    Layer("cli", ("engine.cli",)),
    Layer("operator", ("operator", "operator.*")),
)

#: What the operator may use of the engine: the driver protocol, the spec, and the compiler
#: with the graphs it builds and their rendering. Never the runtime or user functions: the
#: operator compiles a job's topology, it does not run it.
OPERATOR_USES = ("engine.errors", "engine.rest", "engine.spec", "engine.compiler",
                 "engine.graph", "engine.render")

#: Source packages and the prefix of their package names in the picture.
ROOTS = {"dataflow_engine": "engine", "dataflow_operator": "operator"}


def package_of(module: str) -> str | None:
    """The package a module belongs to in the picture: a top-level module or package of a root,
    or a sub-package of the engine's runtime; None outside the roots."""
    root, *parts = module.split(".")
    if root not in ROOTS:
        return None
    depth = 2 if root == "dataflow_engine" and parts[:1] == ["runtime"] else 1
    return ".".join([ROOTS[root], *parts[:depth]])


def layer_of(package: str, layers: tuple[Layer, ...] = LAYERS) -> int:
    """The index of the first layer that names ``package``."""
    for index, layer in enumerate(layers):
        if any(fnmatchcase(package, pattern) for pattern in layer.packages):
            return index
    raise ValueError(f"package {package} is in no layer: add it to hack/layering/layers.py")


def upward(arrows: dict[tuple[str, str], int],
           layers: tuple[Layer, ...] = LAYERS) -> dict[tuple[str, str], int]:
    """The arrows from a lower layer to a higher one."""
    return {(source, target): count for (source, target), count in arrows.items()
            if layer_of(source, layers) < layer_of(target, layers)}


def beyond_the_contract(arrows: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """The operator's arrows into the engine that :data:`OPERATOR_USES` does not allow."""
    return {(source, target): count for (source, target), count in arrows.items()
            if source.split(".")[0] == "operator" and target.split(".")[0] == "engine"
            and target not in OPERATOR_USES}
