"""Flink's window triggers: when a window's contents are emitted and when they are dropped."""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from dataflow_engine.runtime.windowing._params import (
    description_type,
    positive,
    positive_count,
    read_description,
)
from dataflow_engine.runtime.windowing.windows import Window, java_remainder


class TriggerResult(Enum):
    """What the window operator does after a trigger call: (fire?, purge?)."""

    CONTINUE = (False, False)
    FIRE = (True, False)
    PURGE = (False, True)
    FIRE_AND_PURGE = (True, True)

    def is_fire(self) -> bool:
        return bool(self.value[0])

    def is_purge(self) -> bool:
        return bool(self.value[1])


class StateDescriptor(Protocol):
    """Names a piece of trigger state; ``get_partitioned_state`` scopes it to key and window."""

    @property
    def name(self) -> str: ...


class ValueStateLike(Protocol):
    """The part of Flink's value state a trigger uses; ``value()`` is None when unset."""

    def value(self) -> Any: ...

    def update(self, value: Any) -> None: ...

    def clear(self) -> None: ...


@dataclass(frozen=True)
class ReducingValueDescriptor:
    """Value state whose values, when windows merge, fold into one with ``reduce_function``.

    This stands in for Flink's ``ReducingStateDescriptor``: the window operator's
    ``merge_partitioned_state`` reduces the merged windows' values with it.
    """

    name: str
    reduce_function: Callable[[Any, Any], Any]


class TriggerContext(Protocol):
    """What the window operator gives a trigger: clocks, timers and per-window state."""

    def get_current_processing_time(self) -> int: ...

    def get_current_watermark(self) -> int: ...

    def register_processing_time_timer(self, time: int) -> None: ...

    def register_event_time_timer(self, time: int) -> None: ...

    def delete_processing_time_timer(self, time: int) -> None: ...

    def delete_event_time_timer(self, time: int) -> None: ...

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> ValueStateLike: ...


class OnMergeContext(TriggerContext, Protocol):
    """The context of ``on_merge``: the merged windows' state folds into the result's."""

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None: ...


class Trigger(ABC):
    """Decides per element and per timer whether a window fires and/or purges."""

    @abstractmethod
    def on_element(self, element: Any, timestamp: int, window: Window,
                   ctx: TriggerContext) -> TriggerResult: ...

    @abstractmethod
    def on_processing_time(self, time: int, window: Window,
                           ctx: TriggerContext) -> TriggerResult: ...

    @abstractmethod
    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult: ...

    def can_merge(self) -> bool:
        """Merging assigners (sessions) require triggers that can merge their state."""
        return False

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        raise NotImplementedError("This trigger does not support merging.")

    @abstractmethod
    def clear(self, window: Window, ctx: TriggerContext) -> None:
        """Drops this trigger's timers and state for ``window`` (the window is gone)."""

    def describe(self) -> dict[str, Any]:
        """Plain data for a manifest; only the built-in triggers can be described."""
        raise TypeError(f"trigger {self} cannot be described as plain data")


@dataclass(frozen=True)
class EventTimeTrigger(Trigger):
    """Fires once the watermark passes the window's end; late elements fire at once."""

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: Window,
                   ctx: TriggerContext) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            # Late but within allowed lateness: the window was already evaluated.
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window,
                           ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        # A merged window whose end the watermark already passed fires on the next element.
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())

    def describe(self) -> dict[str, Any]:
        return {"type": "eventTime"}

    def __str__(self) -> str:
        return "EventTimeTrigger()"


@dataclass(frozen=True)
class ProcessingTimeTrigger(Trigger):
    """Fires when the processing-time clock reaches the window's end."""

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        return ProcessingTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: Window,
                   ctx: TriggerContext) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window,
                           ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        if window.max_timestamp() > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())

    def describe(self) -> dict[str, Any]:
        return {"type": "processingTime"}

    def __str__(self) -> str:
        return "ProcessingTimeTrigger()"


_COUNT = ReducingValueDescriptor("count", operator.add)


@dataclass(frozen=True)
class CountTrigger(Trigger):
    """Fires each time a window has collected ``count`` more elements."""

    count: int

    def __post_init__(self) -> None:
        positive_count("CountTrigger", "count", self.count)

    @staticmethod
    def of(count: int) -> CountTrigger:
        return CountTrigger(count)

    def on_element(self, element: Any, timestamp: int, window: Window,
                   ctx: TriggerContext) -> TriggerResult:
        state = ctx.get_partitioned_state(_COUNT)
        seen = (state.value() or 0) + 1
        if seen >= self.count:
            state.clear()
            return TriggerResult.FIRE
        state.update(seen)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window,
                           ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        # Flink sums the counts and waits for the next element to fire, even if over count.
        ctx.merge_partitioned_state(_COUNT)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(_COUNT).clear()

    def describe(self) -> dict[str, Any]:
        return {"type": "count", "count": self.count}

    def __str__(self) -> str:
        return f"CountTrigger({self.count})"


@dataclass(frozen=True)
class PurgingTrigger(Trigger):
    """Wraps a trigger so every FIRE also purges: each firing sees only new elements."""

    nested_trigger: Trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> PurgingTrigger:
        return PurgingTrigger(nested_trigger)

    def on_element(self, element: Any, timestamp: int, window: Window,
                   ctx: TriggerContext) -> TriggerResult:
        return _purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return _purging(self.nested_trigger.on_event_time(time, window, ctx))

    def on_processing_time(self, time: int, window: Window,
                           ctx: TriggerContext) -> TriggerResult:
        return _purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        self.nested_trigger.on_merge(window, ctx)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        self.nested_trigger.clear(window, ctx)

    def describe(self) -> dict[str, Any]:
        return {"type": "purging", "trigger": self.nested_trigger.describe()}

    def __str__(self) -> str:
        return f"PurgingTrigger({self.nested_trigger})"


def _purging(result: TriggerResult) -> TriggerResult:
    return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result


@dataclass(frozen=True)
class NeverTrigger(Trigger):
    """The default trigger of :class:`GlobalWindows`: a global window never ends by itself."""

    def on_element(self, element: Any, timestamp: int, window: Window,
                   ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window,
                           ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        return None

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"type": "never"}

    def __str__(self) -> str:
        return "NeverTrigger()"


_FIRE_TIME = ReducingValueDescriptor("fire-time", min)


@dataclass(frozen=True)
class ContinuousEventTimeTrigger(Trigger):
    """Fires every ``interval`` of event time, aligned to the epoch, and at the window's end."""

    interval: int

    def __post_init__(self) -> None:
        # Accepts a PyFlink Time too; stored as milliseconds.
        object.__setattr__(self, "interval",
                           positive("ContinuousEventTimeTrigger", "interval", self.interval))

    @staticmethod
    def of(interval: object) -> ContinuousEventTimeTrigger:
        return ContinuousEventTimeTrigger(interval)  # type: ignore[arg-type]

    def on_element(self, element: Any, timestamp: int, window: Window,
                   ctx: TriggerContext) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        fire_time = ctx.get_partitioned_state(_FIRE_TIME)
        if fire_time.value() is None:
            # Flink aligns with Java's remainder, i.e. towards zero for negative timestamps.
            aligned = timestamp - java_remainder(timestamp, self.interval)
            self._register_next(aligned, window, ctx, fire_time)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        fire_time = ctx.get_partitioned_state(_FIRE_TIME)
        if fire_time.value() == time:
            fire_time.clear()
            self._register_next(time, window, ctx, fire_time)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window,
                           ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(_FIRE_TIME)
        next_fire = ctx.get_partitioned_state(_FIRE_TIME).value()
        if next_fire is not None:
            ctx.register_event_time_timer(next_fire)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        fire_time = ctx.get_partitioned_state(_FIRE_TIME)
        pending = fire_time.value()
        if pending is not None:
            ctx.delete_event_time_timer(pending)
            fire_time.clear()

    def _register_next(self, time: int, window: Window, ctx: TriggerContext,
                       fire_time: ValueStateLike) -> None:
        next_fire = min(time + self.interval, window.max_timestamp())
        fire_time.update(next_fire)
        ctx.register_event_time_timer(next_fire)

    def describe(self) -> dict[str, Any]:
        return {"type": "continuousEventTime", "interval": self.interval}

    def __str__(self) -> str:
        return f"ContinuousEventTimeTrigger({self.interval})"


def trigger_from(data: object) -> Trigger:
    """Rebuilds a built-in trigger from :meth:`Trigger.describe`'s data."""
    kind = description_type(data, "trigger")
    if kind == "eventTime":
        read_description(data, "trigger", ())
        return EventTimeTrigger.create()
    if kind == "processingTime":
        read_description(data, "trigger", ())
        return ProcessingTimeTrigger.create()
    if kind == "never":
        read_description(data, "trigger", ())
        return NeverTrigger()
    if kind == "count":
        fields = read_description(data, "trigger", ("count",))
        return CountTrigger.of(fields["count"])
    if kind == "purging":
        fields = read_description(data, "trigger", ("trigger",))
        return PurgingTrigger.of(trigger_from(fields["trigger"]))
    if kind == "continuousEventTime":
        fields = read_description(data, "trigger", ("interval",))
        return ContinuousEventTimeTrigger.of(fields["interval"])
    raise ValueError(f"unknown trigger type {kind!r} (known: continuousEventTime, count, "
                     "eventTime, never, processingTime, purging)")
