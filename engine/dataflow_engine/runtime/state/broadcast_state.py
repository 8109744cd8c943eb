"""Flink's broadcast state: a map per MapStateDescriptor, the same in every subtask.

Every subtask receives every broadcast element and updates its own copy; the non-broadcast
side may only read it (Flink's ReadOnlyBroadcastState), so the copies stay equal. A snapshot
needs only one subtask's copy, as in Flink, where each subtask writes its own and a restore
at any parallelism may read any of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any


class BroadcastState:
    """PyFlink's BroadcastState: MapState's methods over one subtask's copy."""

    __slots__ = ("_entries", "name")

    def __init__(self, name: str, entries: dict[Any, Any]) -> None:
        self.name = name
        self._entries = entries

    def get(self, key: Any) -> Any:
        return self._entries.get(key)

    def contains(self, key: Any) -> bool:
        return key in self._entries

    def items(self) -> list[tuple[Any, Any]]:
        return list(self._entries.items())

    def keys(self) -> list[Any]:
        return list(self._entries)

    def values(self) -> list[Any]:
        return list(self._entries.values())

    def is_empty(self) -> bool:
        return not self._entries

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._entries))

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __getitem__(self, key: Any) -> Any:
        return self._entries[key]

    def put(self, key: Any, value: Any) -> None:
        self._entries[key] = value

    def put_all(self, entries: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        self._entries.update(entries)

    def remove(self, key: Any) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()

    def __setitem__(self, key: Any, value: Any) -> None:
        self._entries[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._entries[key]


class ReadOnlyBroadcastState(BroadcastState):
    """What the non-broadcast side sees: reading only, so every subtask's copy stays equal."""

    __slots__ = ()

    def _read_only(self, *args: Any) -> None:
        raise TypeError(f"broadcast state {self.name!r} is read-only here: only "
                        "process_broadcast_element may change it (every subtask must keep the "
                        "same copy)")

    put = put_all = remove = clear = __setitem__ = __delitem__ = _read_only  # type: ignore[assignment]


class BroadcastStateStore:
    """The broadcast states of one subtask, by descriptor name (only the declared ones)."""

    def __init__(self, declared: Iterable[str]) -> None:
        self.states: dict[str, dict[Any, Any]] = {name: {} for name in declared}

    def _entries(self, descriptor: Any) -> tuple[str, dict[Any, Any]]:
        name = getattr(descriptor, "name", descriptor)
        entries = self.states.get(name)
        if entries is None:
            raise KeyError(f"broadcast state {name!r} was not declared: pass its "
                           "MapStateDescriptor to broadcast() (declared: "
                           f"{', '.join(sorted(self.states)) or 'none'})")
        return name, entries

    def writable(self, descriptor: Any) -> BroadcastState:
        return BroadcastState(*self._entries(descriptor))

    def read_only(self, descriptor: Any) -> ReadOnlyBroadcastState:
        return ReadOnlyBroadcastState(*self._entries(descriptor))

    def snapshot(self) -> dict[str, dict[Any, Any]]:
        return {name: dict(entries) for name, entries in self.states.items()}

    def restore(self, snapshot: Mapping[str, Mapping[Any, Any]]) -> None:
        for name, entries in snapshot.items():
            if name in self.states:
                self.states[name] = dict(entries)
