"""Checks of a spec that do not need the graph: one problem per finding, each with its field path.

Graph-level rules (partitioning against parallelism, keyed inputs, slot sharing groups) are
checked where they are resolved, in :mod:`dataflow_engine.graph.stream_graph`.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pydantic
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from dataflow_engine.errors import SpecError, SpecProblem
from dataflow_engine.functions.library import BUILTINS
from dataflow_engine.functions.references import is_function_ref, parse_function_ref
from dataflow_engine.graph.stream_graph import resolve_runtime_mode
from dataflow_engine.spec.catalog import (
    Category,
    default_parallelism,
    is_bounded,
    is_continuous,
    kind_of,
)
from dataflow_engine.spec.model import (
    MIN_CPU,
    MIN_JVM_MEMORY,
    DataflowJob,
    DataflowJobSpec,
    OperatorSpec,
    OperatorType,
    RuntimeMode,
    TriggerType,
    UpgradeMode,
    WindowAssignerType,
    WindowFunctionKind,
    WindowTime,
    duration_seconds,
    is_local_storage,
)
from dataflow_engine.spec.quantity import format_memory, parse_quantity
from dataflow_engine.types.json_form import JsonFormError, element_decoder
from dataflow_engine.types.typeinfo import parse_type

_IDENTIFIER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def problems_from_pydantic(error: pydantic.ValidationError, root: str,
                           model: type[pydantic.BaseModel]) -> list[SpecProblem]:
    """Turns pydantic's errors into problems whose paths read like ``spec.pipeline[2].type``.

    A value no branch of a union field (``int | str``) takes fails once per branch, at a path
    ending in the branch's type (``keyBy.int``); those become one problem at the field's path,
    saying what the field takes (its description, a noun phrase) and what it got."""
    problems: list[SpecProblem] = []
    branches: dict[tuple[int | str, ...], list[tuple[ErrorDetails, FieldInfo]]] = {}
    for detail in error.errors():
        union = _union_in(model, detail["loc"])
        if union is None:
            problems.append(SpecProblem(_path(root, detail["loc"]), _message(detail)))
        else:
            branches.setdefault(detail["loc"][:union[0]], []).append((detail, union[1]))
    for loc, failed in branches.items():
        problems += _union_problems(root, loc, failed)
    return problems


def _path(root: str, loc: Sequence[int | str]) -> str:
    path = root
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def _message(detail: ErrorDetails) -> str:
    if detail["type"] == "enum":
        return f"unknown value {detail['input']!r}; expected {detail['ctx']['expected']}"
    if detail["type"] == "extra_forbidden":
        return "unknown field"
    if detail["type"] == "value_error":
        return str(detail["ctx"]["error"])
    return str(detail["msg"])


def _union_in(model: type[pydantic.BaseModel],
              loc: Sequence[int | str]) -> tuple[int, FieldInfo] | None:
    """Where in ``loc`` a union field names its branch, and that field; None without a union."""
    annotation: Any = model
    field: FieldInfo | None = None
    for index, part in enumerate(loc):
        annotation = _without_none(annotation)
        if field is not None and typing.get_origin(annotation) in (typing.Union, types.UnionType):
            return index, field
        if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
            field = next((f for name, f in annotation.model_fields.items()
                          if part in (name, f.alias)), None)
            if field is None:
                return None
            annotation = field.annotation
        elif typing.get_origin(annotation) in (list, dict):
            annotation = typing.get_args(annotation)[-1]
        else:
            return None
    return None


def _without_none(annotation: Any) -> Any:
    """The type a value must have: Annotated's metadata and an optional None set aside."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _without_none(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(kinds) == 1:
            return _without_none(kinds[0])
    return annotation


def _union_problems(root: str, loc: tuple[int | str, ...],
                    failed: list[tuple[ErrorDetails, FieldInfo]]) -> list[SpecProblem]:
    """A branch that took the value's type but not the value says why, at the field's path;
    when none did, the field's description says what it takes."""
    fitting = [detail for detail, _ in failed if len(detail["loc"]) > len(loc) + 1
               or not detail["type"].endswith(("_type", "_parsing", "_from_float"))]
    if fitting:
        return list(dict.fromkeys(SpecProblem(_path(root, (*loc, *d["loc"][len(loc) + 1:])),
                                              _message(d)) for d in fitting))
    detail, field = failed[0]
    takes = (field.description or "another kind of value").rstrip(".")
    shown = json.dumps(detail["input"], default=str)
    return [SpecProblem(_path(root, loc), f"expected {takes[:1].lower()}{takes[1:]}, not {shown}")]


def parse_spec(data: Mapping[str, Any], root: str = "spec") -> DataflowJobSpec:
    """Parses and fully validates a spec; raises :class:`SpecError` listing every problem."""
    try:
        spec = DataflowJobSpec.model_validate(data)
    except pydantic.ValidationError as exc:
        raise SpecError(problems_from_pydantic(exc, root, DataflowJobSpec)) from None
    validate_spec(spec, root)
    return spec


def parse_job(data: Mapping[str, Any]) -> DataflowJob:
    """Parses a whole manifest (apiVersion, kind, metadata, spec)."""
    try:
        job = DataflowJob.model_validate(data)
    except pydantic.ValidationError as exc:
        raise SpecError(problems_from_pydantic(exc, "", DataflowJob)) from None
    validate_spec(job.spec, "spec")
    return job


def validate_spec(spec: DataflowJobSpec, root: str = "spec") -> None:
    problems = list(_spec_problems(spec, root))
    if problems:
        raise SpecError(problems)


def _spec_problems(spec: DataflowJobSpec, root: str) -> Iterator[SpecProblem]:
    seen_groups: set[str] = set()
    for i, group in enumerate(spec.slot_sharing_groups):
        if group.name in seen_groups:
            yield SpecProblem(f"{root}.slotSharingGroups[{i}].name",
                              f"duplicate slot sharing group {group.name!r}")
        seen_groups.add(group.name)
    yield from _resource_problems(spec, root)

    index_of: dict[str, int] = {}
    uid_index: dict[str, int] = {}
    for i, op in enumerate(spec.pipeline):
        at = f"{root}.pipeline[{i}]"
        if op.name in index_of:
            yield SpecProblem(f"{at}.name", f"duplicate operator name {op.name!r} "
                              f"(also {root}.pipeline[{index_of[op.name]}])")
        else:
            index_of[op.name] = i
        if op.effective_uid in uid_index:
            first = uid_index[op.effective_uid]
            yield SpecProblem(f"{at}.uid", f"operator {op.name!r}: duplicate uid "
                              f"{op.effective_uid!r} (also {root}.pipeline[{first}])")
        else:
            uid_index[op.effective_uid] = i
        yield from _operator_problems(spec, op, at)

    consumed: set[str] = set()
    for i, op in enumerate(spec.pipeline):
        for j, edge in enumerate(op.inputs):
            consumed.add(edge.from_)
            upstream = spec.pipeline[index_of[edge.from_]] if edge.from_ in index_of else None
            if (edge.side_output is not None and upstream is not None
                    and kind_of(upstream.type).category is Category.UNION):
                yield SpecProblem(f"{root}.pipeline[{i}].inputs[{j}].sideOutput",
                                  f"operator {op.name!r}: union {edge.from_!r} has no side "
                                  "outputs; name the side output on the union's inputs")
            if edge.from_ not in index_of:
                yield SpecProblem(f"{root}.pipeline[{i}].inputs[{j}].from",
                                  f"operator {op.name!r}: unknown input {edge.from_!r}")
            elif edge.from_ == op.name:
                yield SpecProblem(f"{root}.pipeline[{i}].inputs[{j}].from",
                                  f"operator {op.name!r} cannot consume itself")
    for i, op in enumerate(spec.pipeline):
        kind = kind_of(op.type)
        if kind.is_sink and op.name in consumed:
            yield SpecProblem(f"{root}.pipeline[{i}]", f"sink {op.name!r} cannot have consumers")
        if kind.category is Category.UNION and op.name not in consumed:
            yield SpecProblem(f"{root}.pipeline[{i}]",
                              f"union {op.name!r} has no consumers; a union is virtual and "
                              "only shapes its consumers' inputs")
    if not any(kind_of(op.type).is_sink for op in spec.pipeline):
        yield SpecProblem(f"{root}.pipeline", "the pipeline has no sink")
    yield from _boundedness_problems(spec, root)
    yield from _checkpointing_problems(spec, root)
    yield from _lifecycle_problems(spec, root)
    yield from _autoscaler_problems(spec, root, index_of)
    cycle = _find_cycle(spec, index_of)
    if cycle:
        yield SpecProblem(f"{root}.pipeline[{index_of[cycle[0]]}].inputs",
                          "cycle: " + " -> ".join([*cycle, cycle[0]]))


def _resource_problems(spec: DataflowJobSpec, root: str) -> Iterator[SpecProblem]:
    """Pods that could not run: no CPU to request, or no room for the JVM heap."""
    for i, group in enumerate(spec.slot_sharing_groups):
        at, who = f"{root}.slotSharingGroups[{i}]", f"slot sharing group {group.name!r}"
        yield from _cpu_problems(group.cpu, f"{at}.cpu", f"{who}: cpu")
        slots = spec.slots_per_executor
        executor = parse_quantity(group.memory) * slots
        if executor < parse_quantity(MIN_JVM_MEMORY):
            size = group.memory if slots == 1 else (
                f"{slots} slots (slotsPerExecutor) x {group.memory} = {format_memory(executor)}")
            yield SpecProblem(f"{at}.memory", f"{who}: an executor's memory must be at least "
                              f"{MIN_JVM_MEMORY}, the least heap of its JVM (Spark refuses an "
                              f"executor heap under 450 MiB), not {size}")
    yield from _cpu_problems(spec.driver.cpu, f"{root}.driver.cpu", "the driver's cpu")
    if parse_quantity(spec.driver.memory) < parse_quantity(MIN_JVM_MEMORY):
        yield SpecProblem(f"{root}.driver.memory", f"the driver's memory must be at least "
                          f"{MIN_JVM_MEMORY}, the least heap of its JVM (half the memory, never "
                          f"less than that), not {spec.driver.memory}")


def _cpu_problems(cpu: str, at: str, what: str) -> Iterator[SpecProblem]:
    if parse_quantity(cpu) < parse_quantity(MIN_CPU):
        yield SpecProblem(at, f"{what} must be at least {MIN_CPU} (Kubernetes' smallest CPU "
                          f"unit), not {cpu}")


def _checkpointing_problems(spec: DataflowJobSpec, root: str) -> Iterator[SpecProblem]:
    """Flink ignores checkpointing in BATCH mode; a setting that does nothing is a mistake."""
    if spec.checkpointing is None or resolve_runtime_mode(spec) is not RuntimeMode.BATCH:
        return
    why = ("runtimeMode is BATCH" if spec.runtime_mode is RuntimeMode.BATCH else
           "runtimeMode AUTOMATIC is BATCH here, every source being bounded")
    yield SpecProblem(f"{root}.checkpointing",
                      f"{why}, and a BATCH job takes no checkpoints (Flink ignores them "
                      "there): remove checkpointing, or set runtimeMode STREAMING")


def _lifecycle_problems(spec: DataflowJobSpec, root: str) -> Iterator[SpecProblem]:
    """Stateful upgrades, and snapshots on a schedule, need somewhere durable for the state."""
    mode = spec.job.upgrade_mode
    checkpointing = spec.checkpointing
    periodic = {"savepoint": spec.job.savepoint.interval,
                "checkpoint": spec.job.checkpoint.interval if spec.job.checkpoint else None}
    for kind, interval in periodic.items():
        at = f"{root}.job.{kind}.interval"
        if interval is not None and duration_seconds(interval) <= 0:
            yield SpecProblem(at, f"a periodic {kind} needs an interval above 0 (unset it to "
                              "take none)")
        elif interval is not None and (checkpointing is None or (checkpointing.storage is None
                                       and (kind == "checkpoint"
                                            or checkpointing.savepoint_storage is None))):
            where = ("checkpointing.storage" if kind == "checkpoint"
                     else "checkpointing.savepointStorage (or storage)")
            yield SpecProblem(at, f"a periodic {kind} is written to {root}.{where}: set it")
    if mode is UpgradeMode.STATELESS or (checkpointing is not None and (
            checkpointing.storage is not None or (mode is UpgradeMode.SAVEPOINT and
                                                  checkpointing.savepoint_storage is not None))):
        return
    yield SpecProblem(f"{root}.job.upgradeMode",
                      f"upgradeMode {mode.value} keeps the job's state across upgrades: set "
                      f"{root}.checkpointing.storage")


def _autoscaler_problems(spec: DataflowJobSpec, root: str,
                         index_of: dict[str, int]) -> Iterator[SpecProblem]:
    """An autoscaler that applies its decisions upgrades the job with its state; its bounds
    and windows must make sense (whether the job is continuous is the compiler's to say)."""
    autoscaler, at = spec.job.autoscaler, f"{root}.job.autoscaler"
    if not autoscaler.enabled:
        return
    if not autoscaler.advisory and spec.job.upgrade_mode is UpgradeMode.STATELESS:
        yield SpecProblem(f"{root}.job.upgradeMode", "the autoscaler rescales the job through "
                          "an upgrade that keeps its state: set upgradeMode savepoint or "
                          "last-state (or autoscaler.advisory)")
    for name in ("catch_up_duration", "metrics_window"):
        if duration_seconds(getattr(autoscaler, name)) <= 0:
            yield SpecProblem(f"{at}.{type(autoscaler).model_fields[name].alias}",
                              "must be above 0")
    bounds = [(at, autoscaler.min_parallelism, autoscaler.max_parallelism)] + [
        (f"{at}.vertices[{i}]", v.min_parallelism, v.max_parallelism)
        for i, v in enumerate(autoscaler.vertices)]
    for where, low, high in bounds:
        if low > high:
            yield SpecProblem(f"{where}.minParallelism",
                              f"{low} is above maxParallelism {high}")
    for i, vertex in enumerate(autoscaler.vertices):
        if vertex.operator not in index_of:
            yield SpecProblem(f"{at}.vertices[{i}].operator",
                              f"the pipeline has no operator {vertex.operator!r}")


def _boundedness_problems(spec: DataflowJobSpec, root: str) -> Iterator[SpecProblem]:
    """Unbounded sources need STREAMING; sinks that publish on checkpoints need durable ones
    (Flink's FileSink finalizes part files, and an exactly-once KafkaSink commits its
    transactions, only on checkpoints)."""
    sources = [op for op in spec.pipeline if kind_of(op.type).is_source]
    unbounded = [op.name for op in sources if not is_bounded(op.type, op.args)]
    if unbounded and spec.runtime_mode is RuntimeMode.BATCH:
        yield SpecProblem(f"{root}.runtimeMode",
                          f"BATCH needs bounded sources, and {unbounded[0]!r} is unbounded "
                          "(a datagen source is bounded with args.numberOfRows)")
    continuous = [op.name for op in sources if is_continuous(op.type, op.args)] if (
        spec.runtime_mode is RuntimeMode.STREAMING or unbounded) else []
    checkpointing = spec.checkpointing
    durable = checkpointing is not None and checkpointing.storage is not None
    prefixes: dict[str, str] = {}
    for i, op in enumerate(spec.pipeline):
        if op.type is OperatorType.KAFKA_SINK and (
                op.args.get("deliveryGuarantee") == "exactly-once"):
            at = f"{root}.pipeline[{i}].args.deliveryGuarantee"
            if not continuous:
                yield SpecProblem(at, f"kafka sink {op.name!r} commits its transactions on "
                                  "checkpoints, which only a continuous job takes (STREAMING "
                                  "with a kafka, datagen or monitored text source); use "
                                  "at-least-once")
            elif not durable:
                yield SpecProblem(at, f"kafka sink {op.name!r} commits its transactions on "
                                  f"durable checkpoints: set {root}.checkpointing.storage")
            prefix = str(op.args.get("transactionalIdPrefix"))
            if prefix in prefixes:
                yield SpecProblem(f"{root}.pipeline[{i}].args.transactionalIdPrefix",
                                  f"kafka sinks {prefixes[prefix]!r} and {op.name!r} share "
                                  f"transactionalIdPrefix {prefix!r}; each would fence the "
                                  "other's transactions")
            prefixes.setdefault(prefix, op.name)
        elif op.type is OperatorType.FILE and continuous and checkpointing is not None and not (
                is_local_storage(checkpointing.savepoint_storage or checkpointing.storage
                                 or "/")):
            yield SpecProblem(f"{root}.checkpointing.savepointStorage",
                              f"file sink {op.name!r} keeps its pending part files beside "
                              "savepoints, on the filesystem it writes to: set "
                              "savepointStorage to a path (storage may stay a URI)")
        elif op.type is OperatorType.FILE and continuous and not durable and (
                checkpointing is not None or unbounded):
            yield SpecProblem(f"{root}.pipeline[{i}]",
                              f"file sink {op.name!r} of a continuous job (source "
                              f"{continuous[0]!r}) publishes its files on durable "
                              f"checkpoints: set {root}.checkpointing.storage (else a "
                              "restarted driver would publish them again)")


def _operator_problems(spec: DataflowJobSpec, op: OperatorSpec, at: str) -> Iterator[SpecProblem]:
    kind = kind_of(op.type)
    who = f"{op.type.value} operator {op.name!r}"
    try:
        kind.args.model_validate(op.args)
    except pydantic.ValidationError as exc:
        for problem in problems_from_pydantic(exc, f"{at}.args", kind.args):
            yield SpecProblem(problem.path, f"{who}: {problem.message}")

    if kind.function == "required" and op.function is None:
        yield SpecProblem(f"{at}.function", f"{who} needs a function")
    elif kind.function == "forbidden" and op.function is not None:
        yield SpecProblem(f"{at}.function", f"{who} takes no function")
    elif op.function is not None:
        try:
            ref = parse_function_ref(op.function)
        except ValueError as exc:
            yield SpecProblem(f"{at}.function", f"{who}: {exc}")
        else:
            if ref.is_builtin and op.type not in BUILTINS[ref.attribute].fits:
                fits = ", ".join(sorted(t.value for t in BUILTINS[ref.attribute].fits))
                yield SpecProblem(f"{at}.function", f"{who}: built-in {ref.attribute!r} is a "
                                  f"{fits} function")

    yield from _event_time_problems(op, at, who)
    yield from _output_type_problems(op, at, who)
    yield from _window_problems(op, at, who)
    yield from _interval_join_problems(op, at, who)
    yield from _broadcast_problems(op, at, who)

    if kind.is_source and op.inputs:
        yield SpecProblem(f"{at}.inputs", f"source {op.name!r} cannot have inputs")
    if not kind.is_source and not op.inputs:
        yield SpecProblem(f"{at}.inputs", f"{who} needs at least one input")
    if kind.category is not Category.UNION and not kind.is_source:
        if kind.inputs == 1 and len(op.inputs) > 1:
            yield SpecProblem(f"{at}.inputs", f"{who} takes one input; union several streams "
                              "first")
        elif kind.inputs == 2 and len(op.inputs) != 2:
            yield SpecProblem(f"{at}.inputs", f"{who} takes two inputs (input 1, then input "
                              f"2; union several streams into either), not {len(op.inputs)}")

    if kind.category is Category.UNION:
        for field, value in (("parallelism", op.parallelism),
                             ("maxParallelism", op.max_parallelism),
                             ("slotSharingGroup", op.slot_sharing_group),
                             ("uid", op.uid)):
            if value is not None:
                yield SpecProblem(f"{at}.{field}", f"union {op.name!r} is virtual and has no "
                                  f"{field}; set it on the consuming operator")
        if op.start_new_chain or op.disable_chaining:
            yield SpecProblem(f"{at}", f"union {op.name!r} is virtual and cannot be chained; "
                              "set chaining on the consuming operator")
    else:
        parallelism = op.parallelism or default_parallelism(op.type, spec.parallelism)
        max_parallelism = op.max_parallelism or spec.max_parallelism
        if kind.non_parallel and parallelism > 1:
            what = "source" if kind.is_source else "operator (window_all)"
            yield SpecProblem(f"{at}.parallelism", f"{who} is a non-parallel {what}: its "
                              f"parallelism must be 1, not {parallelism} (as in Flink)")
        if parallelism > max_parallelism:
            field = "parallelism" if op.parallelism else "maxParallelism"
            yield SpecProblem(f"{at}.{field}", f"operator {op.name!r}: parallelism {parallelism} "
                              f"exceeds maxParallelism {max_parallelism}")
    if op.slot_sharing_group is not None and op.slot_sharing_group not in spec.group_resources():
        yield SpecProblem(f"{at}.slotSharingGroup",
                          f"operator {op.name!r}: unknown slot sharing group "
                          f"{op.slot_sharing_group!r}; declare it in spec.slotSharingGroups")

    for j, edge in enumerate(op.inputs):
        key = edge.key_by
        if isinstance(key, int) and key < 0:
            yield SpecProblem(f"{at}.inputs[{j}].keyBy", f"operator {op.name!r}: field index "
                              "must be >= 0")
        elif isinstance(key, str) and ":" in key and not is_function_ref(key):
            yield SpecProblem(f"{at}.inputs[{j}].keyBy", f"operator {op.name!r}: malformed key "
                              f"selector {key!r}: expected 'package.module:callable'")
        elif isinstance(key, str) and ":" not in key and not set(key) <= _IDENTIFIER_CHARS:
            yield SpecProblem(f"{at}.inputs[{j}].keyBy", f"operator {op.name!r}: {key!r} is "
                              "neither a field name nor a 'module:callable' key selector")


def _reference_problems(reference: str, at: str, who: str) -> Iterator[SpecProblem]:
    """A 'module:callable' a setting names (built-ins are only operators' functions)."""
    if not is_function_ref(reference):
        yield SpecProblem(at, f"{who}: malformed reference {reference!r}: expected "
                          "'package.module:callable'")


def _event_time_problems(op: OperatorSpec, at: str, who: str) -> Iterator[SpecProblem]:
    strategy = op.watermark_strategy
    if op.type is not OperatorType.TIMESTAMPS:
        if strategy is not None:
            yield SpecProblem(f"{at}.watermarkStrategy", f"{who}: only a timestamps operator "
                              "has a watermarkStrategy")
        return
    if strategy is None:
        yield SpecProblem(f"{at}.watermarkStrategy", f"{who} needs a watermarkStrategy")
        return
    if strategy.timestamp_field is not None and op.function is not None:
        yield SpecProblem(f"{at}.function", f"{who}: give either a function (the timestamp "
                          "assigner) or watermarkStrategy.timestampField, not both")
    if strategy.generator is not None:
        yield from _reference_problems(strategy.generator, f"{at}.watermarkStrategy.generator",
                                       who)


def _output_type_problems(op: OperatorSpec, at: str, who: str) -> Iterator[SpecProblem]:
    """A declared type belongs to operators with an output; a collection's elements must be
    values of it (in its JSON form), checked here so a manifest fails before it runs."""
    if op.output_type is None:
        return
    kind = kind_of(op.type)
    if kind.is_sink or kind.category is Category.UNION:
        what = "a sink" if kind.is_sink else "a union (it has its inputs' type)"
        yield SpecProblem(f"{at}.outputType", f"{who}: {what} has no outputType")
        return
    if op.type is not OperatorType.COLLECTION:
        return
    if op.args.get("tuples"):
        yield SpecProblem(f"{at}.args.tuples", f"{who}: with an outputType the elements are "
                          "of that type; 'tuples' is only for elements without one")
    decode = element_decoder(parse_type(op.output_type))
    elements = op.args.get("elements")
    for index, element in enumerate(elements if isinstance(elements, list) else ()):
        try:
            decode(element, f"{at}.args.elements[{index}]")
        except JsonFormError as exc:
            yield SpecProblem(exc.path, f"{who}: {exc.problem}")


def _interval_join_problems(op: OperatorSpec, at: str, who: str) -> Iterator[SpecProblem]:
    if (op.type is OperatorType.INTERVAL_JOIN) != (op.interval_join is not None):
        message = (f"{who} needs an intervalJoin (lowerBound, upperBound)"
                   if op.interval_join is None else
                   f"{who}: only an interval_join operator has an intervalJoin")
        yield SpecProblem(f"{at}.intervalJoin", message)


def _broadcast_problems(op: OperatorSpec, at: str, who: str) -> Iterator[SpecProblem]:
    if op.type is OperatorType.BROADCAST_PROCESS and not op.broadcast_states:
        yield SpecProblem(f"{at}.broadcastStates", f"{who} needs the names of its broadcast "
                          "states (the MapStateDescriptors given to broadcast())")
    elif op.type is not OperatorType.BROADCAST_PROCESS and op.broadcast_states is not None:
        yield SpecProblem(f"{at}.broadcastStates", f"{who}: only a broadcast_process operator "
                          "has broadcast states")


def _window_problems(op: OperatorSpec, at: str, who: str) -> Iterator[SpecProblem]:
    window = op.window
    if op.type not in (OperatorType.WINDOW, OperatorType.WINDOW_ALL, OperatorType.WINDOW_JOIN):
        if window is not None:
            yield SpecProblem(f"{at}.window", f"{who}: only window, window_all and "
                              "window_join operators have a window")
        return
    if window is None:
        yield SpecProblem(f"{at}.window", f"{who} needs a window (assigner and kind)")
        return
    joins = (WindowFunctionKind.JOIN, WindowFunctionKind.CO_GROUP)
    if (op.type is OperatorType.WINDOW_JOIN) != (window.kind in joins):
        yield SpecProblem(f"{at}.window.kind", f"{who}: kinds join and coGroup belong to "
                          "window_join, which has no other")
    assigner = window.assigner
    if window.allowed_lateness is not None and assigner.time is not WindowTime.EVENT:
        yield SpecProblem(f"{at}.window.allowedLateness", f"{who}: allowed lateness needs "
                          "event-time windows (processing time is never late)")
    if window.window_function is not None:
        if window.kind not in (WindowFunctionKind.REDUCE, WindowFunctionKind.AGGREGATE):
            yield SpecProblem(f"{at}.window.windowFunction", f"{who}: a windowFunction "
                              "follows kind reduce or aggregate only")
        yield from _reference_problems(window.window_function, f"{at}.window.windowFunction",
                                       who)
    if assigner.gap_extractor is not None:
        yield from _reference_problems(assigner.gap_extractor,
                                       f"{at}.window.assigner.gapExtractor", who)
    trigger = window.trigger
    if assigner.type is WindowAssignerType.SESSION and trigger is not None and (
            trigger.type is TriggerType.COUNT or trigger.type is TriggerType.NEVER):
        yield SpecProblem(f"{at}.window.trigger", f"{who}: session windows merge, and a "
                          f"{trigger.type.value} trigger cannot merge")
    if assigner.type is WindowAssignerType.GLOBAL and trigger is None:
        yield SpecProblem(f"{at}.window.trigger", f"{who}: global windows never fire without "
                          "a trigger (e.g. {type: count, count: 100, purging: true})")


def _find_cycle(spec: DataflowJobSpec, index_of: dict[str, int]) -> list[str] | None:
    """A cycle through inputs, as operator names in data-flow order, or None."""
    inputs = {op.name: [e.from_ for e in op.inputs if e.from_ in index_of] for op in spec.pipeline}
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(inputs, white)
    for start in inputs:
        if color[start] != white:
            continue
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(inputs[start]))]
        color[start] = grey
        while stack:
            name, it = stack[-1]
            upstream = next(it, None)
            if upstream is None:
                color[name] = black
                stack.pop()
            elif color[upstream] == grey:
                path = [n for n, _ in stack]
                cycle = path[path.index(upstream):]
                return list(reversed(cycle))
            elif color[upstream] == white:
                color[upstream] = grey
                stack.append((upstream, iter(inputs[upstream])))
    return None
