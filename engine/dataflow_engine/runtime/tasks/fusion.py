"""Fused runs of chained maps and filters: one generated function per run, not one per operator.

A chain calls one ``process_element`` closure per operator, and each closure calls the user
function: two Python calls per operator and record. For a run of chained stateless operators
(StreamMap, StreamFilter, each with a single chained output) the head's ``process_element``
is instead generated as one function that inlines every step, as Spark's whole-stage code
generation does for its operators. Nothing observable changes:

* every operator still copies its input when object reuse is off (Flink's ``serializer.copy``);
  a value that cannot change is passed as it is, and a filter or timestamp assigner passes on
  the object it was given, so the steps after it know without looking again whether it can;
* a failing user function still fails as its own operator: one ``try`` around a function's
  body (around the whole loop in ``process_all``) finds the step whose call raised from the
  traceback's line, since a ``try`` per step cost a 10-operator chain a fifth of its time;
* every operator still counts its records: consecutive steps that see the same records share
  one counter object (a map passes on exactly what it receives, so its ``numRecordsIn`` is its
  successor's), and only a filter starts a new count;
* a RecordWriter that keeps records until its batch leaves still gets a copy of one that could
  change, made here, where what the last step found out about the record is known.

A second generated function, ``process_all``, runs the same steps in one loop over many
records (a source's, which pushes its split in chunks): each record still passes every step
before the next one starts, as in Flink, and the loop spares a call per record and reads the
functions and counters as local variables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from dataflow_engine.runtime.tasks.outputs import (
    Collect,
    CollectAll,
    Counter,
    Target,
    copy_record,
    input_copier,
)
from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP


@dataclass(frozen=True)
class FusedStep:
    """What one operator contributes to a fused run."""

    #: A filter passes its input on when the function says so; a map passes the result on;
    #: a stamp (a timestamp assigner) passes its input on with the timestamp it extracts.
    kind: Literal["map", "filter", "stamp"]
    function: Callable[..., Any]
    failure: Callable[[BaseException], BaseException]
    #: Copy the input first (no object reuse).
    copying: bool
    #: The operator's ``numRecordsIn``.
    counter: Counter
    #: A stamp's subtask timestamp cell and its watermark generator (which keeps the highest
    #: timestamp in ``max_timestamp``; None in BATCH mode, which has no watermarks).
    cell: Any = None
    generator: Any = None


@dataclass(frozen=True)
class FusedRun:
    process_element: Collect
    process_all: CollectAll
    #: The counter each step counts its input with (steps that see the same records share
    #: one: the caller makes them the operators' counters).
    counters: list[Counter]


def _frozen_check(changeable_item: str, changeable: list[str]) -> list[str]:
    """Lines setting ``frozen``, whether ``value`` cannot change: true for an atom and for a
    tuple of atoms; ``changeable_item`` runs for a tuple at its first item that can change,
    ``changeable`` for anything else (each then decides ``frozen`` itself)."""
    return ["if value.__class__ in atomic: frozen = True",
            "elif value.__class__ is tuple:",
            "    frozen = True",
            "    for item in value:",
            "        if item.__class__ not in atomic:",
            f"            {changeable_item}",
            "            break",
            "else:", *(f"    {line}" for line in changeable)]


def fuse(steps: list[FusedStep], *outputs: Target) -> FusedRun:
    """The run's ``process_element`` and ``process_all``, which hand each record the run
    makes to every one of ``outputs`` in turn (an operator's several outputs called here, not
    through a BroadcastingOutputCollector's call), a copy where an output asks for one; with
    none, the run drops its records."""
    _, atomic, _ = input_copier(True)
    namespace: dict[str, Any] = {"atomic": atomic, "copy": copy_record, "MIN": MIN_TIMESTAMP}
    namespace.update({f"o{index}": output for index, (output, _) in enumerate(outputs)})
    body: list[str] = []
    #: The body's line (0-based) of each step's call, and the step.
    calls: dict[int, int] = {}
    counters: list[Counter] = []
    #: Keyword-only arguments that start each call's guards (see below) empty, so they are
    #: locals.
    guards: list[str] = []
    #: The cell whose value the run must restore before it returns (set by its first stamp),
    #: and that stamp's index.
    restore, first_stamp = "", len(steps)
    #: The generated ``frozen`` holds for the current value (a step checked this very object).
    checked = False
    for index, step in enumerate(steps):
        counts_anew = index == 0 or steps[index - 1].kind == "filter"  # a filter changes it
        counters.append(step.counter if counts_anew else counters[-1])
        if counts_anew:
            namespace[f"c{index}"] = step.counter
            body.append(f"c{index}.count += 1")
        namespace[f"f{index}"] = step.function
        if step.copying and checked:  # the object the previous step was given and checked
            body.append("if not frozen: value = copy(value)")
        elif step.copying and step.kind == "map":  # no step after it needs ``frozen``
            # Most records of a run are of one class: the atomic class this step saw last
            # (``s<index>``, a local) is recognised without a lookup in ``atomic``. A tuple of
            # atoms (the common record) is looked at here rather than in a call, and
            # ``__class__`` (an attribute) costs less here than calling ``type()``.
            guards.append(f"s{index}=None")
            body += [f"if value.__class__ is not s{index}:",
                     f"    if value.__class__ in atomic: s{index} = value.__class__",
                     "    elif value.__class__ is tuple:",
                     "        for item in value:",
                     "            if item.__class__ not in atomic:",
                     "                value = copy(value)",
                     "                break",
                     "    else:",
                     "        value = copy(value)"]
        elif step.copying:  # a filter or a stamp: the steps after it need ``frozen``
            body += _frozen_check("value, frozen = copy(value), False",
                                  ["copied = copy(value)", "frozen = copied is value",
                                   "value = copied"])
        # A filter or a stamp passes on the object it was given: whether it can change is
        # known, so the next step copies only what must be copied, without looking again.
        checked = step.copying and step.kind != "map"
        if step.kind == "stamp":
            namespace[f"t{index}"], namespace[f"g{index}"] = step.cell, step.generator
            if not restore:
                restore, first_stamp = f"t{index}.value = previous", index
                body.append(f"previous = t{index}.value")
            call = (f"stamp = f{index}(value, MIN if t{index}.value is None "
                    f"else t{index}.value)")
        elif step.kind == "filter":
            call = f"keep = f{index}(value)"
        else:
            call = f"value = f{index}(value)"
        calls[len(body)] = index
        body.append(call)
        if step.kind == "filter":
            body += ["if not keep:", *([f"    {restore}"] if restore else []), "    return"]
        elif step.kind == "stamp":
            if step.generator is not None:
                body.append(f"if stamp > g{index}.max_timestamp: g{index}.max_timestamp = stamp")
            body.append(f"t{index}.value = stamp")
    if any(copying for _, copying in outputs) and not checked:
        # Whether the value can change is not known yet.
        body += _frozen_check("frozen = False", ["frozen = False"])
    # Each writer its own copy: a pre-aggregating one hands it to a reduce function.
    body += [f"o{index}({'value if frozen else copy(value)' if copying else 'value'})"
             for index, (_, copying) in enumerate(outputs)]
    if restore:
        body.append(restore)

    # One handler per function: the step whose call raised fails as its operator (after the
    # run's first stamp, with the cell's value restored); anything else (e.g. an operator
    # downstream, which fails as itself) goes on as it is.
    namespace["failures"] = [step.failure for step in steps]
    handler = ["except Exception as error:",
               "    step = lines.get(error.__traceback__.tb_lineno)",
               "    if step is None: raise",
               *([f"    if step >= {first_stamp}: {restore}"] if restore else []),
               "    raise failures[step](error) from error"]
    guarded = ["*", *guards] if guards else []
    element = [f"def process_element({', '.join(['value', *guarded])}):", "    try:",
               *(f"        {line}" for line in body), *(f"    {line}" for line in handler)]
    # Each step's call line (1-based) in the source compiled below: the body follows
    # process_element's def and try, and process_all's def, try and for.
    namespace["lines"] = {**{3 + at: step for at, step in calls.items()},
                          **{len(element) + 4 + at: step for at, step in calls.items()}}
    # The loop: the same body, a record that a filter drops goes on to the next record, and
    # every name is an argument's default, so a local variable.
    names = ", ".join([*(f"{name}={name}" for name in namespace), *guarded])
    loop = [f"def process_all(records, {names}):", "    try:", "        for value in records:",
            *("            " + (line.replace("return", "continue") if line.strip() == "return"
                                 else line) for line in body),
            *(f"    {line}" for line in handler)]
    exec(compile("\n".join([*element, *loop]), f"<fused run of {len(steps)} operators>", "exec"),
         namespace)
    return FusedRun(namespace["process_element"], namespace["process_all"], counters)
