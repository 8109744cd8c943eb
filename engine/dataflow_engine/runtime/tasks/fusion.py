"""Fused runs of chained maps and filters: one generated function per run, not one per operator.

A chain calls one ``process_element`` closure per operator, and each closure calls the user
function: two Python calls per operator and record. For a run of chained stateless operators
(StreamMap, StreamFilter, each with a single chained output) the head's ``process_element``
is instead generated as one function that inlines every step, as Spark's whole-stage code
generation does for its operators. Nothing observable changes:

* every operator still copies its input when object reuse is off (Flink's ``serializer.copy``);
* a failing user function still fails as its own operator (a ``try`` per step costs nothing in
  Python 3.11 until something is raised);
* every operator still counts its records: consecutive steps that see the same records share
  one counter object (a map passes on exactly what it receives, so its ``numRecordsIn`` is its
  successor's), and only a filter starts a new count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dataflow_engine.runtime.tasks.outputs import Collect, Counter, copy_record, input_copier


@dataclass(frozen=True)
class FusedStep:
    """What one operator contributes to a fused run."""

    #: A filter passes its input on when the function says so; a map passes the result on.
    is_filter: bool
    function: Callable[[Any], Any]
    failure: Callable[[BaseException], BaseException]
    #: Copy the input first (no object reuse).
    copying: bool
    #: The operator's ``numRecordsIn``.
    counter: Counter


def fuse(steps: list[FusedStep], collect: Collect) -> tuple[Collect, list[Counter]]:
    """The run's ``process_element``, and the counter each step counts its input with (steps
    that see the same records share one: the caller makes them the operators' counters)."""
    _, atomic, _ = input_copier(True)
    namespace: dict[str, Any] = {"atomic": atomic, "copy": copy_record, "collect": collect}
    lines = ["def process_element(value):"]
    counters: list[Counter] = []
    for index, step in enumerate(steps):
        counts_anew = index == 0 or steps[index - 1].is_filter  # a filter changes the count
        counters.append(step.counter if counts_anew else counters[-1])
        if counts_anew:
            namespace[f"c{index}"] = step.counter
            lines.append(f"    c{index}.count += 1")
        namespace[f"f{index}"], namespace[f"x{index}"] = step.function, step.failure
        if step.copying:  # __class__ (an attribute) is cheaper here than calling type()
            lines.append("    if value.__class__ not in atomic: value = copy(value)")
        call = f"keep = f{index}(value)" if step.is_filter else f"value = f{index}(value)"
        lines += ["    try:", f"        {call}", "    except Exception as error:",
                  f"        raise x{index}(error) from error"]
        if step.is_filter:
            lines.append("    if not keep: return")
    lines.append("    collect(value)")
    exec(compile("\n".join(lines), f"<fused run of {len(steps)} operators>", "exec"),
         namespace)
    return namespace["process_element"], counters
