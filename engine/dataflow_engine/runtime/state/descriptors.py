"""What user code hands the runtime to ask for keyed state, spelled as in PyFlink.

``pyflink.datastream.state`` programs import these names and call them unchanged; type
information is accepted and kept for compatibility, but the heap backend never needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, Protocol

from dataflow_engine.runtime.time.durations import to_millis


class AggregateFunction(Protocol):
    """PyFlink's ``AggregateFunction`` as aggregating state uses it."""

    def create_accumulator(self) -> Any: ...

    def add(self, value: Any, accumulator: Any) -> Any: ...

    def get_result(self, accumulator: Any) -> Any: ...

    def merge(self, acc_a: Any, acc_b: Any) -> Any: ...


class StateTtlConfig:
    """How long keyed state lives after its last access (processing time only, as Flink)."""

    class UpdateType(Enum):
        Disabled = 0
        OnCreateAndWrite = 1
        OnReadAndWrite = 2

    class StateVisibility(Enum):
        ReturnExpiredIfNotCleanedUp = 0
        NeverReturnExpired = 1

    class TtlTimeCharacteristic(Enum):
        ProcessingTime = 0

    def __init__(self, update_type: StateTtlConfig.UpdateType,
                 state_visibility: StateTtlConfig.StateVisibility,
                 ttl_time_characteristic: StateTtlConfig.TtlTimeCharacteristic,
                 ttl: int, cleanup_full_snapshot: bool = False,
                 cleanup_in_background: bool = True) -> None:
        if ttl <= 0:
            raise ValueError(f"TTL must be positive, not {ttl} ms")
        self._update_type = update_type
        self._state_visibility = state_visibility
        self._ttl_time_characteristic = ttl_time_characteristic
        self._ttl = ttl
        #: Leave expired values out of snapshots (``cleanup_full_snapshot()``).
        self.cleanup_full_snapshot = cleanup_full_snapshot
        #: Kept for compatibility; the heap backend cleans lazily, on access.
        self.cleanup_in_background = cleanup_in_background

    @staticmethod
    def new_builder(ttl: object) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(ttl)

    def get_ttl(self) -> int:
        """The time to live in milliseconds."""
        return self._ttl

    def get_update_type(self) -> StateTtlConfig.UpdateType:
        return self._update_type

    def get_state_visibility(self) -> StateTtlConfig.StateVisibility:
        return self._state_visibility

    def get_ttl_time_characteristic(self) -> StateTtlConfig.TtlTimeCharacteristic:
        return self._ttl_time_characteristic

    def is_enabled(self) -> bool:
        """``UpdateType.Disabled`` turns TTL off entirely, as in Flink."""
        return self._update_type is not StateTtlConfig.UpdateType.Disabled

    def __repr__(self) -> str:
        return (f"StateTtlConfig(ttl={self._ttl}ms, {self._update_type.name}, "
                f"{self._state_visibility.name}, full_snapshot={self.cleanup_full_snapshot})")

    class Builder:
        """PyFlink's fluent builder; every setter returns the builder."""

        def __init__(self, ttl: object) -> None:
            self._ttl = to_millis(ttl, "ttl")
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._characteristic = StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            self._full_snapshot = False
            self._in_background = True

        def set_update_type(self, update_type: StateTtlConfig.UpdateType
                            ) -> StateTtlConfig.Builder:
            self._update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(self, visibility: StateTtlConfig.StateVisibility
                                 ) -> StateTtlConfig.Builder:
            self._visibility = visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(
                StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
                self, characteristic: StateTtlConfig.TtlTimeCharacteristic
        ) -> StateTtlConfig.Builder:
            self._characteristic = characteristic
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self.set_ttl_time_characteristic(
                StateTtlConfig.TtlTimeCharacteristic.ProcessingTime)

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            self._full_snapshot = True
            return self

        def cleanup_incrementally(self, cleanup_size: int,
                                  run_cleanup_for_every_record: bool) -> StateTtlConfig.Builder:
            """Accepted so PyFlink programs run; the heap backend already cleans on access."""
            return self

        def cleanup_in_rocksdb_compact_filter(
                self, query_time_after_num_entries: int,
                periodic_compaction_time: object = None) -> StateTtlConfig.Builder:
            """Accepted so PyFlink programs run; there is no RocksDB here."""
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            self._in_background = False
            return self

        def set_ttl(self, ttl: object) -> StateTtlConfig.Builder:
            self._ttl = to_millis(ttl, "ttl")
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(self._update_type, self._visibility, self._characteristic,
                                  self._ttl, self._full_snapshot, self._in_background)


class StateDescriptor:
    """Names a keyed state; the backend creates the state object once per name."""

    def __init__(self, name: str, type_info: Any = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"state name must be a non-empty str, not {name!r}")
        self.name = name
        self.type_info = type_info
        self.ttl_config: StateTtlConfig | None = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        self.ttl_config = ttl_config

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ValueStateDescriptor(StateDescriptor):
    def __init__(self, name: str, value_type_info: Any = None) -> None:
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    def __init__(self, name: str, elem_type_info: Any = None) -> None:
        super().__init__(name, elem_type_info)
        self.elem_type_info = elem_type_info


class MapStateDescriptor(StateDescriptor):
    def __init__(self, name: str, key_type_info: Any = None,
                 value_type_info: Any = None) -> None:
        super().__init__(name, (key_type_info, value_type_info))
        self.key_type_info = key_type_info
        self.value_type_info = value_type_info


class ReducingStateDescriptor(StateDescriptor):
    """``reduce_function`` is a callable ``(a, b) -> c`` or has PyFlink's ``reduce(a, b)``."""

    def __init__(self, name: str, reduce_function: Any, type_info: Any = None) -> None:
        super().__init__(name, type_info)
        self.reduce_function = reduce_function
        self.reduce: Callable[[Any, Any], Any] = _as_reducer(reduce_function)

    def get_reduce_function(self) -> Any:
        return self.reduce_function


class AggregatingStateDescriptor(StateDescriptor):
    def __init__(self, name: str, agg_function: AggregateFunction,
                 state_type_info: Any = None) -> None:
        super().__init__(name, state_type_info)
        for method in ("create_accumulator", "add", "get_result"):
            if not callable(getattr(agg_function, method, None)):
                raise TypeError(f"aggregating state {name!r}: {agg_function!r} has no "
                                f"{method}() (expected PyFlink's AggregateFunction)")
        self.agg_function = agg_function

    def get_agg_function(self) -> AggregateFunction:
        return self.agg_function


def _as_reducer(function: Any) -> Callable[[Any, Any], Any]:
    """Prefer a ``reduce`` method (PyFlink's ReduceFunction) over calling the object itself."""
    method = getattr(function, "reduce", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(function):
        return function  # type: ignore[no-any-return]
    raise TypeError(f"reduce_function must be callable or have reduce(a, b), not {function!r}")
