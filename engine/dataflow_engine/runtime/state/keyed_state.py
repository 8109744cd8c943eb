"""Keyed state objects (PyFlink's method names) bound to the backend's current key.

A state object is created once per operator and read on every record: each call looks up the
backend's ``current_key`` (and ``current_namespace``), so switching keys costs nothing. Values of
the default namespace (``None``) live in one dict keyed by key; values of window namespaces live
in a second dict keyed by ``(key, namespace)``. These classes store values unwrapped; the TTL
variants in :mod:`.ttl_state` subclass them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

from dataflow_engine.runtime.state.descriptors import AggregateFunction

K = TypeVar("K")
T = TypeVar("T")
V = TypeVar("V")
IN = TypeVar("IN")
OUT = TypeVar("OUT")

#: Distinguishes "no value stored" from a stored ``None``.
MISSING: Any = object()


class KeyContext(Protocol):
    """What a state object reads of its backend on every access."""

    current_key: Any
    current_namespace: Any


class KeyedState:
    """Base of every state: finds the slot of the current key and namespace."""

    __slots__ = ("_context", "_namespaced", "_values")

    def __init__(self, context: KeyContext, values: dict[Any, Any],
                 namespaced: dict[Any, Any]) -> None:
        self._context = context
        self._values = values
        self._namespaced = namespaced

    def _slot(self) -> tuple[dict[Any, Any], Any]:
        """The dict holding the current value, and its key there."""
        context = self._context
        namespace = context.current_namespace
        if namespace is None:
            return self._values, context.current_key
        return self._namespaced, (context.current_key, namespace)

    def clear(self) -> None:
        store, slot = self._slot()
        store.pop(slot, None)


class ValueState(KeyedState, Generic[T]):
    """One value per key; ``None`` when nothing is stored, and ``update(None)`` clears."""

    __slots__ = ()

    def value(self) -> T | None:
        context = self._context
        if context.current_namespace is None:
            return self._values.get(context.current_key)
        return self._namespaced.get((context.current_key, context.current_namespace))

    def update(self, value: T | None) -> None:
        if value is None:
            self.clear()
            return
        context = self._context
        if context.current_namespace is None:
            self._values[context.current_key] = value
        else:
            self._namespaced[(context.current_key, context.current_namespace)] = value


class ListState(KeyedState, Generic[T]):
    """A list per key; ``get()`` is an empty list when empty. ``None`` elements are refused."""

    __slots__ = ()

    def get(self) -> list[T]:
        store, slot = self._slot()
        stored = store.get(slot)
        return list(stored) if stored else []

    def add(self, value: T) -> None:
        if value is None:
            raise ValueError("cannot add None to a ListState")
        store, slot = self._slot()
        stored = store.get(slot)
        if stored is None:
            store[slot] = [value]
        else:
            stored.append(value)

    def add_all(self, values: Iterable[T]) -> None:
        items = list_elements(values)
        if items:
            store, slot = self._slot()
            stored = store.get(slot)
            if stored is None:
                store[slot] = items
            else:
                stored.extend(items)

    def update(self, values: Iterable[T] | None) -> None:
        """Replaces the list; ``None`` or an empty one clears the state."""
        items = list_elements(values or ())
        store, slot = self._slot()
        if items:
            store[slot] = items
        else:
            store.pop(slot, None)

    def __iter__(self) -> Iterator[T]:
        return iter(self.get())


class MapState(KeyedState, Generic[K, V]):
    """A dict per key. Views are copied lists, so the map may change while they are iterated."""

    __slots__ = ()

    def get(self, key: K) -> V | None:
        store, slot = self._slot()
        entries = store.get(slot)
        return None if entries is None else entries.get(key)

    def put(self, key: K, value: V) -> None:
        store, slot = self._slot()
        entries = store.get(slot)
        if entries is None:
            store[slot] = {key: value}
        else:
            entries[key] = value

    def put_all(self, mapping: Mapping[K, V]) -> None:
        if mapping:
            store, slot = self._slot()
            entries = store.get(slot)
            if entries is None:
                store[slot] = dict(mapping)
            else:
                entries.update(mapping)

    def remove(self, key: K) -> None:
        """Drops the entry, and the key's map with its last entry (so ``keys()`` skips it)."""
        store, slot = self._slot()
        entries = store.get(slot)
        if entries is not None:
            entries.pop(key, None)
            if not entries:
                del store[slot]

    def contains(self, key: K) -> bool:
        store, slot = self._slot()
        entries = store.get(slot)
        return entries is not None and key in entries

    def items(self) -> list[tuple[K, V]]:
        store, slot = self._slot()
        entries = store.get(slot)
        return list(entries.items()) if entries else []

    def keys(self) -> list[K]:
        return [key for key, _ in self.items()]

    def values(self) -> list[V]:
        return [value for _, value in self.items()]

    def is_empty(self) -> bool:
        store, slot = self._slot()
        return not store.get(slot)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())

    def __contains__(self, key: object) -> bool:
        return self.contains(key)  # type: ignore[arg-type]

    def __getitem__(self, key: K) -> V | None:
        return self.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)


class ReducingState(KeyedState, Generic[T]):
    """Folds added values with the reduce function; ``add(None)`` clears, as in Flink."""

    __slots__ = ("_reduce",)

    def __init__(self, context: KeyContext, values: dict[Any, Any],
                 namespaced: dict[Any, Any], reduce: Callable[[T, T], T]) -> None:
        super().__init__(context, values, namespaced)
        self._reduce = reduce

    def get(self) -> T | None:
        store, slot = self._slot()
        return store.get(slot)

    def add(self, value: T | None) -> None:
        if value is None:
            self.clear()
            return
        store, slot = self._slot()
        current = store.get(slot, MISSING)
        store[slot] = value if current is MISSING else self._reduce(current, value)


class AggregatingState(KeyedState, Generic[IN, OUT]):
    """Keeps an accumulator; ``get()`` is its result, ``None`` when empty; ``add(None)`` clears."""

    __slots__ = ("_function",)

    def __init__(self, context: KeyContext, values: dict[Any, Any],
                 namespaced: dict[Any, Any], function: AggregateFunction) -> None:
        super().__init__(context, values, namespaced)
        self._function = function

    def get(self) -> OUT | None:
        store, slot = self._slot()
        accumulator = store.get(slot, MISSING)
        if accumulator is MISSING:
            return None
        return self._function.get_result(accumulator)  # type: ignore[no-any-return]

    def add(self, value: IN | None) -> None:
        if value is None:
            self.clear()
            return
        store, slot = self._slot()
        accumulator = store.get(slot, MISSING)
        if accumulator is MISSING:
            accumulator = self._function.create_accumulator()
        store[slot] = self._function.add(value, accumulator)

    def merge_namespaces(self, target: Any, sources: Iterable[Any]) -> None:
        """Flink's ``mergeNamespaces``: the current key's accumulators of the ``sources``
        namespaces merged into ``target``'s (merging session windows need it)."""
        key, store = self._context.current_key, self._namespaced
        for source in sources:
            accumulator = store.pop((key, source), MISSING)
            if accumulator is MISSING:
                continue
            current = store.get((key, target), MISSING)
            store[(key, target)] = (accumulator if current is MISSING
                                    else self._function.merge(current, accumulator))


def list_elements(values: Iterable[T]) -> list[T]:
    items = list(values)
    if any(item is None for item in items):
        raise ValueError("cannot add None to a ListState")
    return items
