"""Flink's MergingWindowSet: one key's in-flight merging windows and where their state lives.

When session windows merge, moving their contents to the new window's state would cost a copy
per merge. Instead each window maps to a *state window*, the namespace its contents are kept
under; a merge result inherits the state window of one of the windows it swallowed, and only
the other state windows are merged into it (by the window operator, in ``merge_function``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Generic, TypeVar

from dataflow_engine.runtime.windowing.assigners import MergingWindowAssigner
from dataflow_engine.runtime.windowing.windows import Window

W = TypeVar("W", bound=Window)

#: ``(merge_result, merged_windows, state_window_result, merged_state_windows)``.
MergeFunction = Callable[[W, list[W], W, list[W]], None]


class _Collector(Generic[W]):
    """Records the assigner's merges so they are applied after it has looked at every window."""

    def __init__(self) -> None:
        self.merges: list[tuple[W, list[W]]] = []

    def merge(self, to_be_merged: Collection[W], merge_result: W) -> None:
        self.merges.append((merge_result, list(to_be_merged)))


class MergingWindowSet(Generic[W]):
    """Maps each in-flight window of one key to the state window holding its contents."""

    def __init__(self, assigner: MergingWindowAssigner[W],
                 mapping: Mapping[W, W] | None = None) -> None:
        self._assigner = assigner
        self._mapping: dict[W, W] = dict(mapping or {})

    def get_state_window(self, window: W) -> W | None:
        """The namespace of ``window``'s contents; None when it is not in flight."""
        return self._mapping.get(window)

    def retire_window(self, window: W) -> None:
        """Forgets a window that fired and was purged (or expired)."""
        if self._mapping.pop(window, None) is None:
            raise ValueError(f"Window {window} is not in in-flight window set.")

    def persist(self) -> dict[W, W]:
        """A copy of the mapping, for a snapshot; pass it back to the constructor to restore."""
        return dict(self._mapping)

    def add_window(self, new_window: W, merge_function: MergeFunction[W]) -> W:
        """Adds ``new_window``, merging it as the assigner says; returns the window it ends in.

        ``merge_function`` runs once per merge that swallowed a pre-existing window, except
        when a pre-existing window merely contains ``new_window`` (nothing changes then). Its
        ``merged_windows`` leaves out ``new_window`` (it never had state), and its
        ``merged_state_windows`` leaves out ``state_window_result`` (the state kept in place).

        Unlike Flink, adding a window that is already in flight keeps its state window.
        """
        is_new = new_window not in self._mapping
        windows = list(self._mapping)
        if is_new:
            windows.append(new_window)
        collector: _Collector[W] = _Collector()
        self._assigner.merge_windows(windows, collector)

        result_window = new_window
        merged_new_window = False
        for merge_result, merged_windows in collector.merges:
            if new_window in merged_windows:
                merged_new_window = True
                result_window = merge_result
                if is_new:
                    merged_windows.remove(new_window)
            state_window = self._mapping[merged_windows[0]]
            merged_state_windows = [self._mapping.pop(window) for window in merged_windows]
            self._mapping[merge_result] = state_window
            merged_state_windows.remove(state_window)
            if not (len(merged_windows) == 1 and merged_windows[0] == merge_result):
                merge_function(merge_result, merged_windows, state_window, merged_state_windows)

        if not merged_new_window:
            # A self-contained new window: its contents live under itself.
            self._mapping.setdefault(new_window, new_window)
        return result_window

    def __len__(self) -> int:
        return len(self._mapping)

    def __repr__(self) -> str:
        return f"MergingWindowSet{{windows={self._mapping}}}"
