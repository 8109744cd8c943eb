"""Keyed state with time-to-live: each value is stored as ``(value, last_access_ms)``.

Lists stamp each element and maps each entry, so they expire one by one. A value is expired once
``now >= stamp + ttl``. Writes always restamp; ``OnReadAndWrite`` restamps on reads too. An expired
value met on access is removed; ``ReturnExpiredIfNotCleanedUp`` still returns it that once.
Appending or reducing onto an expired value starts afresh, as Flink's TTL decorators do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from dataflow_engine.runtime.state.descriptors import AggregateFunction, StateTtlConfig
from dataflow_engine.runtime.state.keyed_state import (
    IN,
    MISSING,
    OUT,
    AggregatingState,
    K,
    KeyContext,
    ListState,
    MapState,
    ReducingState,
    T,
    V,
    ValueState,
    list_elements,
)


class TtlPolicy:
    """A TTL config resolved for the hot path, with the backend's clock."""

    __slots__ = ("clock", "return_expired", "ttl", "update_on_read")

    def __init__(self, config: StateTtlConfig, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.ttl = config.get_ttl()
        self.update_on_read = (
            config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite)
        self.return_expired = (config.get_state_visibility()
                               is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp)

    def read(self, store: dict[Any, Any], slot: Any, stamped: tuple[Any, int]) -> Any:
        """The value of ``store[slot]`` after the expiry check, or ``MISSING``; cleans/restamps."""
        value, stamp = stamped
        now = self.clock()
        if now >= stamp + self.ttl:
            del store[slot]
            return value if self.return_expired else MISSING
        if self.update_on_read:
            store[slot] = (value, now)
        return value

    def live(self, stamped: tuple[Any, int], now: int) -> bool:
        return now < stamped[1] + self.ttl


class TtlValueState(ValueState[T]):
    __slots__ = ("_policy",)

    def __init__(self, context: KeyContext, values: dict[Any, Any],
                 namespaced: dict[Any, Any], policy: TtlPolicy) -> None:
        super().__init__(context, values, namespaced)
        self._policy = policy

    def value(self) -> T | None:
        store, slot = self._slot()
        stamped = store.get(slot)
        if stamped is None:
            return None
        value = self._policy.read(store, slot, stamped)
        return None if value is MISSING else value

    def update(self, value: T | None) -> None:
        if value is None:
            self.clear()
            return
        store, slot = self._slot()
        store[slot] = (value, self._policy.clock())

    def purge(self, stored: Any, now: int) -> Any:
        """``stored`` without what has expired, ``None`` if nothing is left (snapshots)."""
        return stored if self._policy.live(stored, now) else None


class TtlReducingState(ReducingState[T]):
    __slots__ = ("_policy",)

    def __init__(self, context: KeyContext, values: dict[Any, Any],
                 namespaced: dict[Any, Any], reduce: Callable[[T, T], T],
                 policy: TtlPolicy) -> None:
        super().__init__(context, values, namespaced, reduce)
        self._policy = policy

    def get(self) -> T | None:
        store, slot = self._slot()
        stamped = store.get(slot)
        if stamped is None:
            return None
        value = self._policy.read(store, slot, stamped)
        return None if value is MISSING else value

    def add(self, value: T | None) -> None:
        if value is None:
            self.clear()
            return
        store, slot = self._slot()
        stamped = store.get(slot)
        now = self._policy.clock()
        if stamped is not None and self._policy.live(stamped, now):
            value = self._reduce(stamped[0], value)
        store[slot] = (value, now)

    def purge(self, stored: Any, now: int) -> Any:
        return stored if self._policy.live(stored, now) else None


class TtlAggregatingState(AggregatingState[IN, OUT]):
    __slots__ = ("_policy",)

    def __init__(self, context: KeyContext, values: dict[Any, Any],
                 namespaced: dict[Any, Any], function: AggregateFunction,
                 policy: TtlPolicy) -> None:
        super().__init__(context, values, namespaced, function)
        self._policy = policy

    def get(self) -> OUT | None:
        store, slot = self._slot()
        stamped = store.get(slot)
        if stamped is None:
            return None
        accumulator = self._policy.read(store, slot, stamped)
        if accumulator is MISSING:
            return None
        return self._function.get_result(accumulator)  # type: ignore[no-any-return]

    def add(self, value: IN | None) -> None:
        if value is None:
            self.clear()
            return
        store, slot = self._slot()
        stamped = store.get(slot)
        now = self._policy.clock()
        if stamped is not None and self._policy.live(stamped, now):
            accumulator = stamped[0]
        else:
            accumulator = self._function.create_accumulator()
        store[slot] = (self._function.add(value, accumulator), now)

    def purge(self, stored: Any, now: int) -> Any:
        return stored if self._policy.live(stored, now) else None

    def merge_namespaces(self, target: Any, sources: Iterable[Any]) -> None:
        raise TypeError("state with a time-to-live cannot merge namespaces")

class TtlListState(ListState[T]):
    __slots__ = ("_policy",)

    def __init__(self, context: KeyContext, values: dict[Any, Any],
                 namespaced: dict[Any, Any], policy: TtlPolicy) -> None:
        super().__init__(context, values, namespaced)
        self._policy = policy

    def get(self) -> list[T]:
        store, slot = self._slot()
        stored: list[tuple[Any, int]] | None = store.get(slot)
        if not stored:
            return []
        policy = self._policy
        now = policy.clock()
        live = [stamped for stamped in stored if policy.live(stamped, now)]
        shown = stored if policy.return_expired else live
        result = [value for value, _ in shown]
        if policy.update_on_read:
            live = [(value, now) for value, _ in live]
        elif len(live) == len(stored):
            return result
        if live:
            store[slot] = live
        else:
            del store[slot]
        return result

    def add(self, value: T) -> None:
        if value is None:
            raise ValueError("cannot add None to a ListState")
        self._append([(value, self._policy.clock())])

    def add_all(self, values: Iterable[T]) -> None:
        now = self._policy.clock()
        self._append([(value, now) for value in list_elements(values)])

    def update(self, values: Iterable[T] | None) -> None:
        now = self._policy.clock()
        stamped = [(value, now) for value in list_elements(values or ())]
        store, slot = self._slot()
        if stamped:
            store[slot] = stamped
        else:
            store.pop(slot, None)

    def _append(self, stamped: list[tuple[T, int]]) -> None:
        if stamped:
            store, slot = self._slot()
            stored = store.get(slot)
            if stored is None:
                store[slot] = stamped
            else:
                stored.extend(stamped)

    def purge(self, stored: Any, now: int) -> Any:
        live = [stamped for stamped in stored if self._policy.live(stamped, now)]
        return live or None


class TtlMapState(MapState[K, V]):
    __slots__ = ("_policy",)

    def __init__(self, context: KeyContext, values: dict[Any, Any],
                 namespaced: dict[Any, Any], policy: TtlPolicy) -> None:
        super().__init__(context, values, namespaced)
        self._policy = policy

    def _read(self, key: K) -> Any:
        store, slot = self._slot()
        entries = store.get(slot)
        if entries is None:
            return MISSING
        stamped = entries.get(key)
        if stamped is None:
            return MISSING
        value = self._policy.read(entries, key, stamped)
        if not entries:
            del store[slot]
        return value

    def get(self, key: K) -> V | None:
        value = self._read(key)
        return None if value is MISSING else value

    def contains(self, key: K) -> bool:
        return self._read(key) is not MISSING

    def put(self, key: K, value: V) -> None:
        super().put(key, (value, self._policy.clock()))  # type: ignore[arg-type]

    def put_all(self, mapping: Mapping[K, V]) -> None:
        now = self._policy.clock()
        super().put_all({key: (value, now) for key, value in mapping.items()})  # type: ignore[misc]

    def items(self) -> list[tuple[K, V]]:
        return self._visible(refresh=True)

    def is_empty(self) -> bool:
        return not self._visible(refresh=False)

    def _visible(self, refresh: bool) -> list[tuple[K, V]]:
        """The entries shown now; drops expired ones and restamps the rest if reads count."""
        store, slot = self._slot()
        entries: dict[K, tuple[V, int]] | None = store.get(slot)
        if not entries:
            return []
        policy = self._policy
        now = policy.clock()
        shown: list[tuple[K, V]] = []
        expired: list[K] = []
        for key, stamped in entries.items():
            if policy.live(stamped, now):
                shown.append((key, stamped[0]))
            else:
                expired.append(key)
                if policy.return_expired:
                    shown.append((key, stamped[0]))
        for key in expired:
            del entries[key]
        if refresh and policy.update_on_read:
            for key in entries:
                entries[key] = (entries[key][0], now)
        if not entries:
            del store[slot]
        return shown

    def purge(self, stored: Any, now: int) -> Any:
        live = {key: stamped for key, stamped in stored.items() if self._policy.live(stamped, now)}
        return live or None
