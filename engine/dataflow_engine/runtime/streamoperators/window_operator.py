"""Flink's WindowOperator and EvictingWindowOperator for keyed ``(key, value)`` input.

Each element goes into the windows its assigner picks; the window's contents are kept in a heap
keyed state backend under the window as namespace (reduced, aggregated or listed, as the window
function needs), and the trigger decides on each element and timer whether the window fires
and/or purges. A cleanup timer at the window's end plus the allowed lateness drops the window;
elements arriving after that are late and go to the late-data side output or are dropped.
Session windows merge through a per-key :class:`MergingWindowSet` kept in the backend too.

With an evictor the contents are ``(timestamp, value)`` lists, so the evictor can look at
timestamps, and reduce/aggregate functions run over the evicted list when the window fires
(Flink's EvictingWindowOperator).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dataflow_engine.functions.references import parse_function_ref, resolve
from dataflow_engine.runtime.functions.context import RuntimeContext, TaskInfo
from dataflow_engine.runtime.functions.udf import UserFunction, load_user_function
from dataflow_engine.runtime.state.backend import HeapKeyedStateBackend
from dataflow_engine.runtime.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from dataflow_engine.runtime.state.key_groups import key_hash
from dataflow_engine.runtime.state.keyed_state import MISSING, KeyedState, ValueState
from dataflow_engine.runtime.state.timer_service import InternalTimer, InternalTimerService
from dataflow_engine.runtime.streamoperators.stream_operators import (
    BackendStateOperator,
    StreamOperator,
    results_emitter,
)
from dataflow_engine.runtime.tasks.descriptors import OperatorConfig, PayloadKind
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.outputs import Collect, CollectAll, Output
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP, MIN_TIMESTAMP
from dataflow_engine.runtime.windowing.assigners import (
    MergingWindowAssigner,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    WindowAssigner,
    assigner_from,
    missing_timestamp,
)
from dataflow_engine.runtime.windowing.evictors import Evictor, evictor_from
from dataflow_engine.runtime.windowing.merging_window_set import MergingWindowSet
from dataflow_engine.runtime.windowing.triggers import (
    StateDescriptor as TriggerStateDescriptor,
)
from dataflow_engine.runtime.windowing.triggers import Trigger, TriggerResult, trigger_from
from dataflow_engine.runtime.windowing.windows import TimeWindow, Window
from dataflow_engine.spec.model import RuntimeMode

#: The window function kinds of ``config.args["window"]["kind"]``, and the method each calls.
WINDOW_KINDS: Mapping[str, str] = {
    "reduce": "reduce", "aggregate": "add", "process": "process", "apply": "apply",
    "join": "join", "coGroup": "co_group"}
#: Kinds whose window contents are the listed elements (the rest reduce or aggregate).
_LISTING = frozenset({"process", "apply", "join", "coGroup"})
_KEYS = frozenset({"assigner", "trigger", "evictor", "allowedLateness", "lateDataTag", "kind",
                   "windowFunction"})
# Internal state names; the prefix keeps them apart from the user's own state names.
_CONTENTS = "__window__contents"
_MERGING_SETS = "__window__merging-sets"
_TRIGGER_STATE = "__window__trigger:"
_CONTINUE = TriggerResult.CONTINUE


@dataclass(frozen=True)
class WindowConfig:
    """``config.args["window"]``, checked and rebuilt into objects."""

    assigner: WindowAssigner[Any]
    trigger: Trigger
    evictor: Evictor | None
    allowed_lateness: int
    late_data_tag: str | None
    kind: str
    window_function: str | None

    @staticmethod
    def parse(data: object) -> WindowConfig:
        """Fails on unknown keys and bad values, so a typo does not silently mean a default."""
        if not isinstance(data, Mapping):
            raise TypeError(f"args['window'] must be a mapping, not {type(data).__name__}")
        unknown = sorted(str(key) for key in data.keys() - _KEYS)
        if unknown:
            raise ValueError(f"args['window']: unknown keys {unknown} (known: {sorted(_KEYS)})")
        if data.get("assigner") is None:
            raise ValueError("args['window'] needs an 'assigner'")
        assigner = assigner_from(data["assigner"])
        trigger = (assigner.get_default_trigger() if data.get("trigger") is None
                   else trigger_from(data["trigger"]))
        evictor = None if data.get("evictor") is None else evictor_from(data["evictor"])
        lateness = data.get("allowedLateness", 0) or 0
        if isinstance(lateness, bool) or not isinstance(lateness, int) or lateness < 0:
            raise ValueError(f"allowedLateness must be milliseconds >= 0, not {lateness!r}")
        tag, kind, function = data.get("lateDataTag"), data.get("kind"), data.get("windowFunction")
        if tag is not None and not isinstance(tag, str):
            raise TypeError(f"lateDataTag must be a str, not {type(tag).__name__}")
        if kind not in WINDOW_KINDS:
            raise ValueError(f"window kind must be one of {sorted(WINDOW_KINDS)}, not {kind!r}")
        if function is not None and (kind not in ("reduce", "aggregate")
                                     or not isinstance(function, str)):
            raise ValueError(f"windowFunction {function!r} needs kind 'reduce' or 'aggregate' "
                             "and a 'module:callable' reference")
        if isinstance(assigner, MergingWindowAssigner) and not trigger.can_merge():
            raise ValueError(f"A merging window assigner ({assigner}) cannot be used with a "
                             f"trigger that does not support merging ({trigger}).")
        return WindowConfig(assigner, trigger, evictor, lateness, tag, str(kind), function)


def pre_aggregable(window: object) -> bool:
    """Whether a BATCH producer may pre-aggregate this window's input per key and window
    (:mod:`dataflow_engine.runtime.tasks.window_combiner`): a reduce without an evictor,
    over tumbling or sliding event-time windows (every record in one at least) fired by their
    default trigger.

    Not an aggregate: Flink calls an AggregateFunction's ``merge`` only for merging windows,
    so a PyFlink function may well have a stub there, and merging partials would lose data.
    """
    try:
        config = WindowConfig.parse(window)
    except Exception:
        return False  # the operator reports a bad window itself
    assert isinstance(window, Mapping)
    assigner, trigger = config.assigner, window.get("trigger")
    return (config.kind == "reduce" and config.evictor is None
            and (isinstance(assigner, TumblingEventTimeWindows)
                 or (isinstance(assigner, SlidingEventTimeWindows)
                     and assigner.slide <= assigner.size))
            and (trigger is None or trigger == assigner.get_default_trigger().describe()))


@dataclass(frozen=True, slots=True)
class WindowNamespace:
    """Namespace of a ProcessWindowFunction's per-window state: never a contents namespace."""

    window: Window


class _ScopedState:
    """A user-facing state that always works in one namespace, whatever the operator set last
    (the backend's states read its current namespace on every access)."""

    __slots__ = ("_backend", "_namespace", "_state")

    def __init__(self, state: KeyedState, backend: HeapKeyedStateBackend,
                 namespace: Any) -> None:
        self._state: Any = state
        self._backend = backend
        self._namespace = namespace

    def _call(self, method: Callable[..., Any], *args: Any) -> Any:
        backend = self._backend
        saved, backend.current_namespace = backend.current_namespace, self._namespace
        try:
            return method(*args)
        finally:
            backend.current_namespace = saved

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._state, name)
        if not callable(attribute):
            return attribute
        return functools.partial(self._call, attribute)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._call(self._state.__iter__))

    def __contains__(self, key: object) -> bool:
        return bool(self._call(self._state.__contains__, key))

    def __getitem__(self, key: Any) -> Any:
        return self._call(self._state.__getitem__, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._call(self._state.__setitem__, key, value)

    def __delitem__(self, key: Any) -> None:
        self._call(self._state.__delitem__, key)


class ScopedStateStore:
    """PyFlink's KeyedStateStore of ``window_state()``/``global_state()``: the current key's
    state in one fixed namespace."""

    __slots__ = ("_backend", "_namespace")

    def __init__(self, backend: HeapKeyedStateBackend, namespace: Any) -> None:
        self._backend = backend
        self._namespace = namespace

    def _scoped(self, state: KeyedState) -> Any:
        return _ScopedState(state, self._backend, self._namespace)

    def get_state(self, descriptor: Any) -> Any:
        return self._scoped(self._backend.get_state(descriptor))

    def get_list_state(self, descriptor: Any) -> Any:
        return self._scoped(self._backend.get_list_state(descriptor))

    def get_map_state(self, descriptor: Any) -> Any:
        return self._scoped(self._backend.get_map_state(descriptor))

    def get_reducing_state(self, descriptor: Any) -> Any:
        return self._scoped(self._backend.get_reducing_state(descriptor))

    def get_aggregating_state(self, descriptor: Any) -> Any:
        return self._scoped(self._backend.get_aggregating_state(descriptor))


class _TriggerState:
    """A trigger's value state, in the namespace of the window the trigger context is on."""

    __slots__ = ("_context", "_state")

    def __init__(self, state: ValueState[Any], context: WindowTriggerContext) -> None:
        self._state = state
        self._context = context

    def value(self) -> Any:
        backend = self._context.backend
        saved, backend.current_namespace = backend.current_namespace, self._context.window
        try:
            return self._state.value()
        finally:
            backend.current_namespace = saved

    def update(self, value: Any) -> None:
        backend = self._context.backend
        saved, backend.current_namespace = backend.current_namespace, self._context.window
        try:
            self._state.update(value)
        finally:
            backend.current_namespace = saved

    def clear(self) -> None:
        self.update(None)


class WindowTriggerContext:
    """Flink's ``WindowOperator.Context``: what a trigger sees of the current key and window.

    One object serves every call; the operator points ``window`` (and, while merging,
    ``merged_windows``) at the window in question first, as Flink does.
    """

    __slots__ = ("_states", "_timers", "backend", "merged_windows", "window")

    def __init__(self, backend: HeapKeyedStateBackend, timers: InternalTimerService) -> None:
        self.backend = backend
        self._timers = timers
        self._states: dict[str, _TriggerState] = {}
        self.window: Any = None
        self.merged_windows: list[Any] = []

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def get_current_watermark(self) -> int:
        return self._timers.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        self._timers.register_processing_time_timer(self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        self._timers.register_event_time_timer(self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._timers.delete_processing_time_timer(self.window, time)

    def delete_event_time_timer(self, time: int) -> None:
        self._timers.delete_event_time_timer(self.window, time)

    def get_partitioned_state(self, state_descriptor: TriggerStateDescriptor) -> _TriggerState:
        name = state_descriptor.name
        state = self._states.get(name)
        if state is None:
            value_state = self.backend.get_state(ValueStateDescriptor(_TRIGGER_STATE + name))
            state = self._states[name] = _TriggerState(value_state, self)
        return state

    def merge_partitioned_state(self, state_descriptor: TriggerStateDescriptor) -> None:
        """Folds the merged windows' values into the current window's (Flink's
        ``mergeNamespaces``), with the descriptor's ``reduce_function``."""
        reduce = getattr(state_descriptor, "reduce_function", None)
        if reduce is None:
            raise TypeError(f"trigger state {state_descriptor.name!r} cannot be merged: it needs "
                            "a reduce_function (a ReducingValueDescriptor)")
        state, target = self.get_partitioned_state(state_descriptor), self.window
        merged = MISSING
        for window in self.merged_windows:
            self.window = window
            value = state.value()
            if value is not None:
                state.clear()
                merged = value if merged is MISSING else reduce(merged, value)
        self.window = target
        if merged is not MISSING:
            current = state.value()
            state.update(merged if current is None else reduce(current, merged))


class WindowProcessContext:
    """PyFlink's ``ProcessWindowFunction.Context`` for the window being evaluated or cleared."""

    __slots__ = ("_global", "_operator", "current_window")

    def __init__(self, operator: WindowOperator) -> None:
        self._operator = operator
        self._global = ScopedStateStore(operator.backend, None)
        self.current_window: Any = None

    def window(self) -> Any:
        return self.current_window

    def current_processing_time(self) -> int:
        return self._operator.timers.current_processing_time()

    def current_watermark(self) -> int:
        return self._operator.timers.current_watermark

    def window_state(self) -> ScopedStateStore:
        """State of this key and window; ``clear(context)`` should drop it, as in Flink."""
        return ScopedStateStore(self._operator.backend, WindowNamespace(self.current_window))

    def global_state(self) -> ScopedStateStore:
        """State of this key shared by all its windows."""
        return self._global

    def output(self, output_tag: Any, value: Any) -> None:
        """Emits to a side output (PyFlink's ``context.output(tag, value)``)."""
        self._operator.emit_side_output(str(getattr(output_tag, "tag_id", output_tag)), value)


def _window_function_method(reference: str) -> str:
    """``process`` for a ProcessWindowFunction (or a plain callable), ``apply`` for a
    WindowFunction."""
    target = resolve(parse_function_ref(reference))
    return "apply" if hasattr(target, "apply") and not hasattr(target, "process") else "process"


class WindowOperator(BackendStateOperator):
    """Flink's WindowOperator (and, with an evictor, its EvictingWindowOperator)."""

    USES_PROCESSING_TIME = True

    def __init__(self, config: OperatorConfig, task: TaskInfo, mode: RuntimeMode,
                 payload: PayloadKind) -> None:
        super().__init__(config, task, mode, payload)
        try:
            self.window_config = WindowConfig.parse(config.args.get("window"))
        except Exception as error:
            raise self.failure(error) from error
        window = self.window_config
        self.assigner = window.assigner
        self.trigger = window.trigger
        self.evictor = window.evictor
        self.allowed_lateness = window.allowed_lateness
        self.late_data_tag = window.late_data_tag
        self.kind = window.kind
        self.event_time = window.assigner.is_event_time()
        self.merging = isinstance(window.assigner, MergingWindowAssigner)
        #: Late elements dropped (Flink's ``numLateRecordsDropped``).
        self.num_late_records_dropped = 0
        self.window_function: UserFunction | None = None
        self.backend = HeapKeyedStateBackend(
            config.max_parallelism, lambda: self.time.processing_time.get_current_processing_time(),
            key_hash(config.key_type))
        self.timers = InternalTimerService(self, self.backend, self.time.processing_time)
        self.trigger_context = WindowTriggerContext(self.backend, self.timers)
        self.process_context = WindowProcessContext(self)
        self._merging_sets = self.backend.get_state(ValueStateDescriptor(_MERGING_SETS))
        self._window_apply: Callable[..., Any] | None = None
        self._clear_hooks: list[Callable[[Any], Any]] = []

    def runtime_context(self) -> RuntimeContext:
        """Keyed state of the current key, outside any window (as Flink's RuntimeContext)."""
        return self.task.runtime_context(self.name, ScopedStateStore(self.backend, None))

    def setup(self, output: Output) -> None:
        StreamOperator.setup(self, output)
        # The TaskTime is attached after construction: bind the timers to its clock now.
        self.timers.processing_time = self.time.processing_time
        try:
            self._load_functions()
        except Exception as error:
            raise self.failure(error) from error

    def _load_functions(self) -> None:
        if self.config.function is None:
            raise ValueError("a window operator needs a function")
        main = self.user_function = load_user_function(self.config.function,
                                                       WINDOW_KINDS[self.kind])
        if self.kind == "aggregate":
            needed = ("create_accumulator", "add", "get_result", *(
                ("merge",) if self.merging else ()))
            missing = [name for name in needed if not callable(getattr(main.instance, name,
                                                                        None))]
            if missing:
                raise TypeError(f"{self.config.function} is not an AggregateFunction class: "
                                f"it has no {', '.join(missing)}")
        contents: StateDescriptor
        if self.evictor is not None or self.kind in _LISTING:
            contents = ListStateDescriptor(_CONTENTS)
        elif self.kind == "reduce":
            contents = ReducingStateDescriptor(_CONTENTS, main.call)
        else:
            contents = AggregatingStateDescriptor(_CONTENTS, main.instance)
        #: The contents state: reducing, aggregating or list state (typed by kind at run time).
        self.contents: Any = self.backend.get_state(contents)
        functions = [main] if self.kind == "process" else []
        reference = self.window_config.window_function
        if reference is not None:
            method = _window_function_method(reference)
            self.window_function = load_user_function(reference, method)
            call = self.window_function.call
            self._window_apply = (call if method == "apply"
                                  else lambda key, window, inputs: call(
                                      key, self.process_context, inputs))
            if method == "process":
                functions.append(self.window_function)
        for function in functions:
            clear = getattr(function.instance, "clear", None)
            if callable(clear):
                self._clear_hooks.append(clear)

    def open(self) -> None:
        function = self.window_function
        if function is not None and function.open is not None:
            try:
                function.open(self.runtime_context())
            except Exception as error:
                raise self.failure(error) from error
        super().open()

    def close(self) -> None:
        try:
            super().close()
        finally:
            function = self.window_function
            if function is not None and function.close is not None:
                try:
                    function.close()
                except Exception as error:
                    raise self.failure(error) from error

    # -- elements -------------------------------------------------------------------------

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        self._emit_results = results_emitter(collect, self.emit_side_output)
        counter, failure, cell = self.records_in, self.failure, self.time.timestamp
        backend, timers, ctx = self.backend, self.timers, self.trigger_context
        assign, clock = self.assigner.assign_windows, self.time.processing_time
        on_element, add = self.trigger.on_element, self.contents.add
        cleanup_time, register_cleanup = self._cleanup_time, self._register_cleanup_timer
        on_result, late = self._on_result, self._late_element
        event_time, evicting, lateness = self.event_time, self.evictor is not None, (
            self.allowed_lateness)
        missing_timestamp = self._missing_timestamp

        def process_element(pair: Any) -> None:
            counter.count += 1
            key, value = pair
            stamp = cell.value
            if stamp is None:
                if event_time:
                    raise failure(missing_timestamp())
                timestamp = MIN_TIMESTAMP
            else:
                timestamp = stamp
            backend.current_key = key
            try:
                skipped = True
                for window in assign(value, timestamp, clock):
                    if event_time and cleanup_time(window) <= timers.current_watermark:
                        continue
                    skipped = False
                    backend.current_namespace = window
                    add((stamp, value) if evicting else value)
                    ctx.window = window
                    result = on_element(value, timestamp, window, ctx)
                    if result is not _CONTINUE:
                        on_result(result, window, window)
                    register_cleanup(window)
                if (skipped and event_time
                        and timestamp + lateness <= timers.current_watermark):
                    late(value)
            except OperatorFailure:
                raise
            except Exception as error:
                raise failure(error) from error

        def process_merging(pair: Any) -> None:
            counter.count += 1
            key, value = pair
            stamp = cell.value
            if stamp is None:
                if event_time:
                    raise failure(missing_timestamp())
                timestamp = MIN_TIMESTAMP
            else:
                timestamp = stamp
            backend.current_key = key
            try:
                self._process_merging(value, stamp, timestamp)
            except OperatorFailure:
                raise
            except Exception as error:
                raise failure(error) from error

        if self.payload is PayloadKind.WINDOW_PARTIAL:
            return self._partial_processor(process_element)
        return process_merging if self.merging else process_element

    def _partial_processor(self, process_element: Collect) -> Collect:
        """Input from a pre-aggregating producer (BATCH, see :func:`pre_aggregable`): a
        partial per key and window is reduced into the window's contents as a record would be,
        and a record the producer passed on whole is processed as usual."""
        counter, failure, cell = self.records_in, self.failure, self.time.timestamp
        backend, ctx, on_element = self.backend, self.trigger_context, self.trigger.on_element
        on_result, register_cleanup = self._on_result, self._register_cleanup_timer
        add = self.contents.add

        def process_partial(item: Any) -> None:
            if len(item) == 3:
                key, cell.value, record = item
                process_element((key, record))
                return
            key, start, end, partial, count = item
            counter.count += count
            window = TimeWindow(start, end)
            backend.current_key = key
            backend.current_namespace = window
            try:
                add(partial)
                ctx.window = window
                result = on_element(partial, window.max_timestamp(), window, ctx)
                if result is not _CONTINUE:
                    on_result(result, window, window)
                register_cleanup(window)
            except OperatorFailure:
                raise
            except Exception as error:
                raise failure(error) from error

        return process_partial

    def _process_merging(self, value: Any, stamp: int | None, timestamp: int) -> None:
        windows = self.assigner.assign_windows(value, timestamp, self.time.processing_time)
        merging = self._merging_set()
        ctx, add = self.trigger_context, self.contents.add
        skipped = True
        for window in windows:
            actual = merging.add_window(window, self._merge)
            if self._is_window_late(actual):
                merging.retire_window(actual)
                continue
            skipped = False
            state_window = merging.get_state_window(actual)
            if state_window is None:
                raise RuntimeError(f"Window {actual} is not in in-flight window set.")
            self.backend.current_namespace = state_window
            add(value if self.evictor is None else (stamp, value))
            ctx.window = actual
            result = self.trigger.on_element(value, timestamp, actual, ctx)
            if result is not _CONTINUE:
                self._on_result(result, actual, state_window)
            self._register_cleanup_timer(actual)
        self._persist(merging)
        if (skipped and self.event_time
                and timestamp + self.allowed_lateness <= self.timers.current_watermark):
            self._late_element(value)

    def _missing_timestamp(self) -> RuntimeError:
        return RuntimeError(missing_timestamp(self.name, self.assigner))

    def _late_element(self, value: Any) -> None:
        """Flink sends late elements to the late-data side output, else drops and counts them."""
        if self.late_data_tag is not None:
            self.emit_side_output(self.late_data_tag, value)
        else:
            self.num_late_records_dropped += 1

    # -- merging --------------------------------------------------------------------------

    def _merging_set(self) -> MergingWindowSet[Any]:
        assert isinstance(self.assigner, MergingWindowAssigner)
        self.backend.current_namespace = None
        return MergingWindowSet(self.assigner, self._merging_sets.value())

    def _persist(self, merging: MergingWindowSet[Any]) -> None:
        self.backend.current_namespace = None
        self._merging_sets.update(merging.persist() or None)

    def _merge(self, merge_result: Any, merged_windows: list[Any], state_window: Any,
               merged_state_windows: list[Any]) -> None:
        """Flink's merge callback: trigger state and contents follow the merged windows."""
        if self.event_time and (merge_result.max_timestamp() + self.allowed_lateness
                                <= self.timers.current_watermark):
            raise RuntimeError(
                "The end timestamp of an event-time window cannot become earlier than the "
                f"current watermark by merging. Current watermark: "
                f"{self.timers.current_watermark} window: {merge_result}")
        if not self.event_time and (merge_result.max_timestamp()
                                    <= self.timers.current_processing_time()):
            raise RuntimeError(
                "The end timestamp of a processing-time window cannot become earlier than the "
                f"current processing time by merging. Current processing time: "
                f"{self.timers.current_processing_time()} window: {merge_result}")
        ctx = self.trigger_context
        ctx.window, ctx.merged_windows = merge_result, merged_windows
        self.trigger.on_merge(merge_result, ctx)
        ctx.merged_windows = []
        for window in merged_windows:
            ctx.window = window
            self.trigger.clear(window, ctx)
            self._delete_cleanup_timer(window)
        self._merge_contents(state_window, merged_state_windows)

    def _merge_contents(self, target: Any, sources: list[Any]) -> None:
        """Flink's ``mergeNamespaces`` of the contents state."""
        backend, contents = self.backend, self.contents
        for source in sources:
            backend.current_namespace = source
            if self.evictor is not None or self.kind in _LISTING:
                moved: Any = contents.get()
                contents.clear()
                backend.current_namespace = target
                contents.add_all(moved)
            elif self.kind == "reduce":
                value = contents.get()
                contents.clear()
                backend.current_namespace = target
                contents.add(value)
            else:
                contents.merge_namespaces(target, [source])

    # -- firing and cleanup ---------------------------------------------------------------

    def _on_result(self, result: TriggerResult, window: Any, state_window: Any) -> None:
        if result.is_fire():
            self._fire(window, state_window)
        if result.is_purge():
            self.backend.current_namespace = state_window
            self.contents.clear()

    def _fire(self, window: Any, state_window: Any) -> None:
        """Emits the window's result, stamped with the window's last instant."""
        backend = self.backend
        backend.current_namespace = state_window
        contents = self.contents.get()
        if contents is None or (type(contents) is list and not contents):
            return
        cell = self.time.timestamp
        previous, cell.value = cell.value, window.max_timestamp()
        try:
            if self.evictor is None:
                self._emit(backend.current_key, window, contents)
                return
            evictor, ctx = self.evictor, self.trigger_context
            ctx.window = window
            evictor.evict_before(contents, len(contents), window, ctx)
            self._emit_evicted(backend.current_key, window, [value for _, value in contents])
            evictor.evict_after(contents, len(contents), window, ctx)
            backend.current_namespace = state_window
            self.contents.update(contents)
        finally:
            cell.value = previous

    def _emit(self, key: Any, window: Any, contents: Any) -> None:
        """``contents``: the reduced value, the aggregate's result or the listed values."""
        if self.kind == "process":
            self.process_context.current_window = window
            results = self.udf.call(key, self.process_context, contents)
        elif self.kind == "apply":
            results = self.udf.call(key, window, contents)
        elif self._window_apply is not None:
            self.process_context.current_window = window
            results = self._window_apply(key, window, [contents])
        else:
            self.collect(contents)
            return
        if results is not None:
            self._emit_results(results)

    def _emit_evicted(self, key: Any, window: Any, values: list[Any]) -> None:
        """The evicting operator reduces or aggregates only when the window fires."""
        if self.kind == "reduce":
            if values:
                self._emit(key, window, functools.reduce(self.udf.call, values))
        elif self.kind == "aggregate":
            function = self.udf.instance
            accumulator = function.create_accumulator()
            for value in values:
                accumulator = function.add(value, accumulator)
            self._emit(key, window, function.get_result(accumulator))
        else:
            self._emit(key, window, values)

    def _cleanup_time(self, window: Any) -> int:
        """When a window's state is dropped: its end plus the allowed lateness in event time
        (MAX_TIMESTAMP, never, on overflow), its end in processing time."""
        end: int = window.max_timestamp()
        if not self.event_time:
            return end
        return min(end + self.allowed_lateness, MAX_TIMESTAMP)

    def _is_window_late(self, window: Any) -> bool:
        return self.event_time and self._cleanup_time(window) <= self.timers.current_watermark

    def _register_cleanup_timer(self, window: Any) -> None:
        time = self._cleanup_time(window)
        if time == MAX_TIMESTAMP:
            return  # a window that never ends (global) is never cleaned up
        if self.event_time:
            self.timers.register_event_time_timer(window, time)
        else:
            self.timers.register_processing_time_timer(window, time)

    def _delete_cleanup_timer(self, window: Any) -> None:
        time = self._cleanup_time(window)
        if time == MAX_TIMESTAMP:
            return
        if self.event_time:
            self.timers.delete_event_time_timer(window, time)
        else:
            self.timers.delete_processing_time_timer(window, time)

    def _clear_all_state(self, window: Any, state_window: Any,
                         merging: MergingWindowSet[Any] | None) -> None:
        self.backend.current_namespace = state_window
        self.contents.clear()
        ctx = self.trigger_context
        ctx.window = window
        self.trigger.clear(window, ctx)
        self.process_context.current_window = window
        for clear in self._clear_hooks:
            clear(self.process_context)
        if merging is not None:
            merging.retire_window(window)

    # -- timers and watermarks ------------------------------------------------------------

    def on_event_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, True)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, False)

    def _on_timer(self, timer: InternalTimer, event_time: bool) -> None:
        """The timer service has switched the backend to the timer's key."""
        window = timer.namespace
        try:
            merging = None
            state_window = window
            if self.merging:
                merging = self._merging_set()
                state_window = merging.get_state_window(window)
                if state_window is None:
                    return  # the window was merged away or already cleaned up
            ctx = self.trigger_context
            ctx.window = window
            on_timer = self.trigger.on_event_time if event_time else (
                self.trigger.on_processing_time)
            result = on_timer(timer.timestamp, window, ctx)
            if result is not _CONTINUE:
                self._on_result(result, window, state_window)
            if event_time == self.event_time and timer.timestamp == self._cleanup_time(window):
                self._clear_all_state(window, state_window, merging)
            if merging is not None:
                self._persist(merging)
        except OperatorFailure:
            raise
        except Exception as error:
            raise self.failure(error) from error

    def process_watermark(self, timestamp: int) -> None:
        self.timers.advance_watermark(timestamp)
        super().process_watermark(timestamp)

    def finish(self) -> None:
        """BATCH: the end of input is the end of time, so every window fires once now."""
        if not self.time.streaming:
            self.timers.advance_watermark(MAX_TIMESTAMP)
            self.timers.fire_processing_time(MAX_TIMESTAMP)


#: The key of every element of a non-keyed window (Flink's NullByteKeySelector gives byte 0).
ALL_WINDOWS_KEY = 0


class AllWindowOperator(WindowOperator):
    """``window_all``: one subtask windows the whole stream, as Flink's AllWindowedStream does
    with a constant key. Its functions take no key: a ProcessAllWindowFunction's
    ``process(context, elements)`` and an AllWindowFunction's ``apply(window, inputs)``."""

    def _load_functions(self) -> None:
        super()._load_functions()
        main = self.udf
        if self.kind in ("process", "apply"):
            self.user_function = dataclasses.replace(
                main, call=lambda key, *arguments: main.call(*arguments))
        window_apply = self._window_apply
        if window_apply is not None:
            function = self.window_function
            assert function is not None
            call = function.call
            if _window_function_method(self.window_config.window_function or "") == "apply":
                self._window_apply = lambda key, window, inputs: call(window, inputs)
            else:
                self._window_apply = lambda key, window, inputs: call(self.process_context,
                                                                      inputs)

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        keyed = super().create_processor(collect, collect_all)
        key = ALL_WINDOWS_KEY

        def process_element(value: Any) -> None:
            keyed((key, value))

        return process_element


class WindowJoinOperator(WindowOperator):
    """Flink's window join and coGroup of two keyed streams (``join(...).where(...)
    .equal_to(...).window(...)``). Flink unions the two inputs tagged by side, keys and
    windows them, and runs a CoGroupWindowFunction; here the two-input head tags the records
    itself and the window's listed contents are split by side when it fires. ``join`` calls a
    JoinFunction's ``join(first, second)`` for every pair of the key's window (an inner join);
    ``coGroup`` calls ``co_group(firsts, seconds)`` once per key and window."""

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        keyed = super().create_processor(collect, collect_all)

        def process_element(item: Any) -> None:
            number, (key, value) = item
            keyed((key, (number, value)))

        return process_element

    def _emit(self, key: Any, window: Any, contents: Any) -> None:
        firsts = [value for number, value in contents if number == 1]
        seconds = [value for number, value in contents if number == 2]
        call = self.udf.call
        if self.kind == "join":
            for first in firsts:
                for second in seconds:
                    self.collect(call(first, second))
            return
        results = call(firsts, seconds)
        if results is not None:
            self._emit_results(results)
