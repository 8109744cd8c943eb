"""Sources split across subtasks: the driver plans the splits, the executors read them.

Bounded splits are contiguous and decided up front, so subtask i always reads the same data:
element chunks of a collection, ranges of a sequence, and byte ranges of text files (a line
belongs to the split its first byte falls in, the rule of Hadoop's and Flink's text input
formats). A continuous job's driver asks each source's enumerator (Flink's SplitEnumerator)
for the split of every epoch instead.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

_CHUNK = 1 << 20
TextSegment = tuple[str, int, int]


def collection_splits(elements: Sequence[Any], parallelism: int) -> tuple[tuple[Any, ...], ...]:
    n = len(elements)
    return tuple(tuple(elements[i * n // parallelism:(i + 1) * n // parallelism])
                 for i in range(parallelism))


def sequence_splits(first: int, last: int, parallelism: int) -> tuple[tuple[int, int], ...]:
    """``[start, end)`` per subtask of the inclusive range ``first..last``."""
    n = last - first + 1
    return tuple((first + i * n // parallelism, first + (i + 1) * n // parallelism)
                 for i in range(parallelism))


def _visible(name: str) -> bool:
    return not name.startswith((".", "_"))


def resolve_text_paths(paths: str | Sequence[str], *, monitored: bool = False) -> list[str]:
    """Files named by paths, directories (recursively, skipping hidden ones) or globs, as
    absolute paths: executors need not share the driver's working directory. A glob that
    matches nothing is an error, except for a monitored source, whose files may come later."""
    files: list[str] = []
    for raw in [paths] if isinstance(paths, str) else paths:
        path = raw.removeprefix("file://")
        if any(ch in path for ch in "*?["):
            matches = sorted(glob.glob(path))
            if not matches and not monitored:
                raise FileNotFoundError(f"text source: no file matches {raw!r}")
            for match in matches:
                files.extend(resolve_text_paths(match) if os.path.isdir(match)
                             else [os.path.abspath(match)])
        elif os.path.isdir(path):
            for root, dirs, names in os.walk(os.path.abspath(path)):
                dirs[:] = sorted(d for d in dirs if _visible(d))
                files.extend(os.path.join(root, n) for n in sorted(names) if _visible(n))
        elif os.path.isfile(path):
            files.append(os.path.abspath(path))
        else:
            raise FileNotFoundError(f"text source: {raw!r} does not exist")
    return files


def text_splits(paths: str | Sequence[str],
                parallelism: int) -> tuple[tuple[TextSegment, ...], ...]:
    """Equal byte ranges of the files' concatenation, as ``(path, start, end)`` segments."""
    sized = [(f, os.path.getsize(f)) for f in resolve_text_paths(paths)]
    total = sum(size for _, size in sized)
    splits: list[tuple[TextSegment, ...]] = []
    for i in range(parallelism):
        lo, hi = i * total // parallelism, (i + 1) * total // parallelism
        segments: list[TextSegment] = []
        offset = 0
        for path, size in sized:
            start, end = max(lo - offset, 0), min(hi - offset, size)
            if start < end:
                segments.append((path, start, end))
            offset += size
        splits.append(tuple(segments))
    return tuple(splits)


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if "\r" in text:
        return [line[:-1] if line.endswith("\r") else line for line in lines]
    return lines


def _read_segment(path: str, start: int, end: int) -> Iterator[str]:
    with open(path, "rb") as f:
        position = 0
        if start > 0:
            f.seek(start - 1)
            position = start - 1 + len(f.readline())  # the rest of a line owned by the left
        if position >= end:
            return
        f.seek(end - 1)
        stop = end - 1 + len(f.readline())  # the line holding byte end-1 is ours to finish
        f.seek(position)
        remaining = stop - position
        carry = b""
        while remaining > 0:
            chunk = f.read(min(_CHUNK, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            data = carry + chunk if carry else chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                continue
            carry = data[cut + 1:]
            yield from _lines(data[:cut].decode("utf-8", "replace"))
        if carry:
            yield from _lines(carry.decode("utf-8", "replace"))


def read_text_segments(segments: Iterable[TextSegment]) -> Iterator[str]:
    for path, start, end in segments:
        yield from _read_segment(path, start, end)


_MASK64 = (1 << 64) - 1


def datagen_value(seed: int, index: int) -> int:
    """A pseudo-random value in ``[0, 2**31)`` that depends only on ``seed`` and ``index``
    (SplitMix64's finalizer), so that a replayed epoch generates the same records."""
    z = (seed + (index + 1) * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) >> 33


class SplitEnumerator(Protocol):
    """Decides, on the driver, what each subtask of a source reads in the next epoch."""

    def next_splits(self, now: float) -> tuple[Any, ...]:
        """Each subtask's split of the epoch that starts at ``now`` (seconds)."""

    @property
    def finished(self) -> bool:
        """Everything was assigned: the source has ended."""

    def position(self) -> Any:
        """What a checkpoint keeps to resume from."""

    def restore(self, position: Any) -> None: ...

    def close(self) -> None:
        """Releases connections (when the job ends)."""


class BoundedEnumerator:
    """A bounded source in a continuous job: the whole planned split in the first epoch."""

    def __init__(self, splits: tuple[Any, ...]) -> None:
        self.splits = splits
        self.assigned = False

    def next_splits(self, now: float) -> tuple[Any, ...]:
        if self.assigned:
            return (None,) * len(self.splits)
        self.assigned = True
        return self.splits

    @property
    def finished(self) -> bool:
        return self.assigned

    def position(self) -> Any:
        return self.assigned

    def restore(self, position: Any) -> None:
        self.assigned = bool(position)

    def close(self) -> None:
        """Holds nothing."""


class DatagenEnumerator:
    """``rows_per_second`` rows, counted from when the job (re)started; every subtask gets
    the same global index range and keeps its share of it (see ``DatagenSource``)."""

    def __init__(self, parallelism: int, rows_per_second: float,
                 number_of_rows: int | None) -> None:
        self.parallelism = parallelism
        self.rate = rows_per_second
        self.limit = number_of_rows
        self.emitted = 0
        self._base: tuple[float, int] | None = None

    def next_splits(self, now: float) -> tuple[Any, ...]:
        if self._base is None:
            self._base = (now, self.emitted)
        started, count = self._base
        target = count + int((now - started) * self.rate)
        if self.limit is not None:
            target = min(target, self.limit)
        start, self.emitted = self.emitted, max(self.emitted, target)
        return ((start, self.emitted),) * self.parallelism

    @property
    def finished(self) -> bool:
        return self.limit is not None and self.emitted >= self.limit

    def position(self) -> Any:
        return self.emitted

    def restore(self, position: Any) -> None:
        self.emitted = int(position)
        self._base = None

    def close(self) -> None:
        """Holds nothing."""


def _sizes(paths: list[str]) -> list[tuple[int, str]]:
    """Each file's size; a file removed since it was listed is left out (a later scan that
    finds it again reads it then)."""
    sizes = []
    for path in paths:
        try:
            sizes.append((os.path.getsize(path), path))
        except FileNotFoundError:
            continue
    return sizes


class FileStreamEnumerator:
    """A monitored text source (Flink's FileSource with ``monitorContinuously``): every
    ``interval`` it lists its paths and hands each file it has not read yet, whole, to one
    subtask (the least loaded by bytes). The files read so far are its position, as Flink's
    ContinuousFileSplitEnumerator keeps the processed paths."""

    def __init__(self, parallelism: int, paths: str | Sequence[str], interval: float) -> None:
        self.parallelism = parallelism
        self.paths = paths
        self.interval = interval
        self.processed: set[str] = set()
        self._next_scan: float | None = None

    def next_splits(self, now: float) -> tuple[Any, ...]:
        if self._next_scan is not None and now < self._next_scan:
            return ((),) * self.parallelism
        self._next_scan = now + self.interval
        new = [path for path in resolve_text_paths(self.paths, monitored=True)
               if path not in self.processed]
        splits: list[list[TextSegment]] = [[] for _ in range(self.parallelism)]
        loads = [0] * self.parallelism
        for size, path in sorted(_sizes(new), reverse=True):
            subtask = loads.index(min(loads))
            splits[subtask].append((path, 0, size))
            loads[subtask] += size
            self.processed.add(path)
        return tuple(tuple(sorted(split)) for split in splits)

    @property
    def finished(self) -> bool:
        return False

    def position(self) -> Any:
        return sorted(self.processed)

    def restore(self, position: Any) -> None:
        self.processed = set(position)
        self._next_scan = None

    def close(self) -> None:
        """Holds nothing."""
