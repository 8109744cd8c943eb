"""Bounded sources split across subtasks: the driver plans the splits, the executors read them.

Splits are contiguous and decided up front, so subtask i always reads the same data: element
chunks of a collection, ranges of a sequence, and byte ranges of text files (a line belongs to
the split its first byte falls in, the rule of Hadoop's and Flink's text input formats).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

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


def resolve_text_paths(paths: str | Sequence[str]) -> list[str]:
    """Files named by paths, directories (recursively, skipping hidden ones) or globs, as
    absolute paths: executors need not share the driver's working directory."""
    files: list[str] = []
    for raw in [paths] if isinstance(paths, str) else paths:
        path = raw.removeprefix("file://")
        if any(ch in path for ch in "*?["):
            matches = sorted(glob.glob(path))
            if not matches:
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
