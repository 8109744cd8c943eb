"""Flink's heap keyed state backend: state tables per name, snapshots per key group.

The operator sets ``current_key`` (and for windows ``current_namespace``) before calling user
code; state objects read them on every access, so setting a key computes nothing. Key groups
are only computed when a snapshot is taken, which is what lets a job be restored at another
parallelism: each restored subtask loads the key groups of its own range.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from dataflow_engine.runtime.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from dataflow_engine.runtime.state.key_groups import KeyHash, assign_to_key_group, java_hash_code
from dataflow_engine.runtime.state.keyed_state import (
    AggregatingState,
    KeyedState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)
from dataflow_engine.runtime.state.ttl_state import (
    TtlAggregatingState,
    TtlListState,
    TtlMapState,
    TtlPolicy,
    TtlReducingState,
    TtlValueState,
)

#: key group -> state name -> {key, or NamespacedKey(key, namespace): stored value}.
Snapshot = dict[int, dict[str, dict[Any, Any]]]
S = TypeVar("S", bound=KeyedState)
_TtlState = (TtlValueState[Any] | TtlListState[Any] | TtlMapState[Any, Any]
             | TtlReducingState[Any] | TtlAggregatingState[Any, Any])

#: Flink's upper bound on max parallelism (number of key groups).
MAX_KEY_GROUPS = 1 << 15


def processing_time_millis() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class NamespacedKey:
    """A snapshot key for a non-default namespace.

    Not a plain ``(key, namespace)`` tuple: tuples are valid keys too, and would collide.
    """

    key: Any
    namespace: Any


class _StateTable:
    """The stored values of one state name; outlives restore and the state object."""

    __slots__ = ("namespaced", "purge", "state", "values")

    def __init__(self) -> None:
        self.values: dict[Any, Any] = {}
        self.namespaced: dict[tuple[Any, Any], Any] = {}
        self.state: KeyedState | None = None
        #: Set for TTL states with ``cleanup_full_snapshot()``: drops expired data.
        self.purge: Callable[[Any, int], Any] | None = None


class HeapKeyedStateBackend:
    """Keyed state of one subtask, held in Python dicts."""

    def __init__(self, max_parallelism: int,
                 clock: Callable[[], int] = processing_time_millis,
                 hash_key: KeyHash = java_hash_code) -> None:
        if not 0 < max_parallelism <= MAX_KEY_GROUPS:
            raise ValueError(f"max_parallelism must be in 1..{MAX_KEY_GROUPS}, "
                             f"not {max_parallelism}")
        self.max_parallelism = max_parallelism
        #: How the job's keyBy hashes keys: snapshots group state by the same key groups.
        self.hash_key = hash_key
        self.clock = clock
        self.current_key: Any = None
        self.current_namespace: Any = None
        self._tables: dict[str, _StateTable] = {}

    def set_current_key(self, key: Any) -> None:
        self.current_key = key

    def get_current_key(self) -> Any:
        return self.current_key

    def set_current_namespace(self, namespace: Any) -> None:
        """``None`` is the default namespace (Flink's VoidNamespace)."""
        self.current_namespace = namespace

    def get_current_namespace(self) -> Any:
        return self.current_namespace

    @overload
    def get_state(self, descriptor: ValueStateDescriptor) -> ValueState[Any]: ...
    @overload
    def get_state(self, descriptor: ListStateDescriptor) -> ListState[Any]: ...
    @overload
    def get_state(self, descriptor: MapStateDescriptor) -> MapState[Any, Any]: ...
    @overload
    def get_state(self, descriptor: ReducingStateDescriptor) -> ReducingState[Any]: ...
    @overload
    def get_state(self, descriptor: AggregatingStateDescriptor
                  ) -> AggregatingState[Any, Any]: ...
    @overload
    def get_state(self, descriptor: StateDescriptor) -> KeyedState: ...

    def get_state(self, descriptor: StateDescriptor) -> KeyedState:
        """The state named by ``descriptor``, created on first use, the same object after."""
        table = self._tables.get(descriptor.name)
        if table is not None and table.state is not None:
            kind = _kind(descriptor)
            if not isinstance(table.state, kind):
                raise ValueError(
                    f"state {descriptor.name!r} is a {_public_name(table.state)}, it cannot be "
                    f"asked for again as a {kind.__name__} ({type(descriptor).__name__})")
            return table.state
        if table is None:
            table = self._tables[descriptor.name] = _StateTable()
        table.state = self._create(descriptor, table)
        return table.state

    def get_list_state(self, descriptor: ListStateDescriptor) -> ListState[Any]:
        return self._typed(descriptor, ListStateDescriptor, ListState)

    def get_map_state(self, descriptor: MapStateDescriptor) -> MapState[Any, Any]:
        return self._typed(descriptor, MapStateDescriptor, MapState)

    def get_reducing_state(self, descriptor: ReducingStateDescriptor) -> ReducingState[Any]:
        return self._typed(descriptor, ReducingStateDescriptor, ReducingState)

    def get_aggregating_state(self, descriptor: AggregatingStateDescriptor
                              ) -> AggregatingState[Any, Any]:
        return self._typed(descriptor, AggregatingStateDescriptor, AggregatingState)

    def _typed(self, descriptor: StateDescriptor, expected: type[StateDescriptor],
               kind: type[S]) -> S:
        if not isinstance(descriptor, expected):
            raise TypeError(f"expected a {expected.__name__}, got {type(descriptor).__name__} "
                            f"for state {getattr(descriptor, 'name', None)!r}")
        state = self.get_state(descriptor)
        assert isinstance(state, kind)
        return state

    def _create(self, descriptor: StateDescriptor, table: _StateTable) -> KeyedState:
        config = descriptor.ttl_config
        if config is None or not config.is_enabled():
            return self._plain(descriptor, table)
        state = self._with_ttl(descriptor, table, TtlPolicy(config, self.clock))
        if config.cleanup_full_snapshot:
            table.purge = state.purge
        return state

    def _plain(self, descriptor: StateDescriptor, table: _StateTable) -> KeyedState:
        values, namespaced = table.values, table.namespaced
        if isinstance(descriptor, ValueStateDescriptor):
            return ValueState[Any](self, values, namespaced)
        if isinstance(descriptor, ListStateDescriptor):
            return ListState[Any](self, values, namespaced)
        if isinstance(descriptor, MapStateDescriptor):
            return MapState[Any, Any](self, values, namespaced)
        if isinstance(descriptor, ReducingStateDescriptor):
            return ReducingState[Any](self, values, namespaced, descriptor.reduce)
        if isinstance(descriptor, AggregatingStateDescriptor):
            return AggregatingState[Any, Any](self, values, namespaced, descriptor.agg_function)
        raise TypeError(f"unsupported state descriptor {descriptor!r}")

    def _with_ttl(self, descriptor: StateDescriptor, table: _StateTable,
                  policy: TtlPolicy) -> _TtlState:
        values, namespaced = table.values, table.namespaced
        if isinstance(descriptor, ValueStateDescriptor):
            return TtlValueState[Any](self, values, namespaced, policy)
        if isinstance(descriptor, ListStateDescriptor):
            return TtlListState[Any](self, values, namespaced, policy)
        if isinstance(descriptor, MapStateDescriptor):
            return TtlMapState[Any, Any](self, values, namespaced, policy)
        if isinstance(descriptor, ReducingStateDescriptor):
            return TtlReducingState[Any](self, values, namespaced, descriptor.reduce, policy)
        if isinstance(descriptor, AggregatingStateDescriptor):
            return TtlAggregatingState[Any, Any](
                self, values, namespaced, descriptor.agg_function, policy)
        raise TypeError(f"unsupported state descriptor {descriptor!r}")

    def keys(self, state_name: str, namespace: Any = None) -> Iterator[Any]:
        """Keys holding a value of ``state_name`` in ``namespace`` (Flink's ``getKeys``).

        Taken from a copy, so the caller may change state while iterating.
        """
        table = self._tables.get(state_name)
        if table is None:
            return iter(())
        if namespace is None:
            return iter(list(table.values))
        return iter([key for key, ns in table.namespaced if ns == namespace])

    def apply_to_all_keys(self, descriptor: StateDescriptor,
                          function: Callable[[Any, Any], None], namespace: Any = None) -> None:
        """Calls ``function(key, state)`` with the state switched to each key in turn."""
        state = self.get_state(descriptor)
        saved = self.current_key, self.current_namespace
        self.current_namespace = namespace
        try:
            for key in self.keys(descriptor.name, namespace):
                self.current_key = key
                function(key, state)
        finally:
            self.current_key, self.current_namespace = saved

    def snapshot(self) -> Snapshot:
        """All state by key group, as plain picklable data (values keep their TTL stamps).

        Lists and maps are copied; the user's values in them are shared with the backend, so
        serialize the snapshot before processing more records.
        """
        groups: dict[Any, int] = {}
        result: Snapshot = {}
        now = self.clock()

        def group_of(key: Any) -> int:
            group = groups.get(key)
            if group is None:
                group = groups[key] = assign_to_key_group(key, self.max_parallelism,
                                                                   self.hash_key)
            return group

        for name, table in self._tables.items():
            purge = table.purge
            entries: Iterable[tuple[Any, Any, Any]] = (
                *((key, key, stored) for key, stored in table.values.items()),
                *((NamespacedKey(key, ns), key, stored)
                  for (key, ns), stored in table.namespaced.items()))
            for snapshot_key, key, stored in entries:
                value = _copied(stored) if purge is None else purge(stored, now)
                if value is not None:
                    result.setdefault(group_of(key), {}).setdefault(name, {})[snapshot_key] = value
        return result

    def restore(self, snapshot_parts: Iterable[Snapshot], key_group_range: range) -> None:
        """Loads the key groups in ``key_group_range`` from every part, leaving the others.

        Restored data is adopted as is, including TTL stamps: a state's descriptor must keep its
        TTL setting (on or off) across a restore, as Flink requires.
        """
        for part in snapshot_parts:
            for group, states in part.items():
                if group not in key_group_range:
                    continue
                for name, entries in states.items():
                    table = self._tables.get(name)
                    if table is None:
                        table = self._tables[name] = _StateTable()
                    for snapshot_key, stored in entries.items():
                        if type(snapshot_key) is NamespacedKey:
                            table.namespaced[(snapshot_key.key, snapshot_key.namespace)] = stored
                        else:
                            table.values[snapshot_key] = stored


_KINDS: tuple[tuple[type[StateDescriptor], type[KeyedState]], ...] = (
    (ValueStateDescriptor, ValueState),
    (ListStateDescriptor, ListState),
    (MapStateDescriptor, MapState),
    (ReducingStateDescriptor, ReducingState),
    (AggregatingStateDescriptor, AggregatingState),
)


def _kind(descriptor: StateDescriptor) -> type[KeyedState]:
    for descriptor_type, state_type in _KINDS:
        if isinstance(descriptor, descriptor_type):
            return state_type
    raise TypeError(f"unsupported state descriptor {descriptor!r}")


def _public_name(state: KeyedState) -> str:
    """``ValueState`` rather than ``TtlValueState`` in messages."""
    return next(kind.__name__ for _, kind in _KINDS if isinstance(state, kind))


def _copied(stored: Any) -> Any:
    kind = type(stored)
    if kind is list:
        return list(stored)
    if kind is dict:
        return dict(stored)
    return stored
