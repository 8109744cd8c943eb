"""Completed checkpoints on a filesystem path (Flink's FileSystemCheckpointStorage).

One directory per job: ``<storage>/chk-<id>/_metadata`` holds a whole checkpoint (source
positions, every subtask's snapshot, the committables it publishes). The metadata file is
written under a temporary name, flushed to disk and renamed, so a checkpoint is either
complete or absent: a directory without ``_metadata`` is a checkpoint that failed half-way,
never restored from and removed by the next one that completes. Only the newest ``retained``
checkpoints are kept. A savepoint is the same metadata in a directory of its own
(``savepoint-<id>-<hex>``), which nothing deletes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import pickle
import re
import shutil
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from dataflow_engine.runtime.checkpoint.committer import Committable

_log = logging.getLogger(__name__)
METADATA = "_metadata"
_CHECKPOINT_DIR = re.compile(r"^chk-(\d+)$")


class CheckpointStorageError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class VertexState:
    """The snapshots of one JobVertex's subtasks."""

    parallelism: int
    max_parallelism: int
    #: uids of the vertex's operators, head first.
    operator_uids: tuple[str, ...]
    #: Per subtask: its pickled SubtaskSnapshot.
    subtasks: tuple[bytes, ...]

    @property
    def size(self) -> int:
        return sum(len(data) for data in self.subtasks)


@dataclass(frozen=True, slots=True)
class CompletedCheckpoint:
    checkpoint_id: int
    #: Wall-clock time (seconds) when the checkpoint was triggered.
    timestamp: float
    #: Source uid -> its enumerator's position.
    sources: dict[str, Any]
    #: JobVertex id -> its subtasks' snapshots.
    vertices: dict[str, VertexState]
    #: What the sinks publish once this checkpoint is complete.
    committables: tuple[Committable, ...] = ()
    #: The deployment that took it (``dataflow run --deployment``): a driver restarted
    #: within that deployment resumes from it rather than from where the deployment began.
    deployment: str = ""
    #: Where it is stored (None: kept in the driver's memory only).
    path: str | None = field(default=None, compare=False)

    @property
    def state_size(self) -> int:
        return sum(vertex.size for vertex in self.vertices.values())


def storage_directory(uri: str) -> str:
    """The local directory of a ``storage`` setting (a path or a ``file:`` URI)."""
    if uri.startswith("file:"):
        uri = "/" + uri.removeprefix("file:").lstrip("/")
    return os.path.abspath(uri)


class CheckpointStorage:
    """Completed checkpoints of one job; without a directory only the latest, in memory."""

    def __init__(self, directory: str | None, retained: int = 1) -> None:
        self.directory = directory
        self.retained = retained
        #: Without a directory: the latest checkpoint, in memory.
        self._latest: CompletedCheckpoint | None = None

    def store(self, checkpoint: CompletedCheckpoint) -> CompletedCheckpoint:
        """Makes ``checkpoint`` durable (atomically); returns it with its path."""
        if self.directory is None:
            self._latest = checkpoint
            return checkpoint
        target = os.path.join(self.directory, f"chk-{checkpoint.checkpoint_id}")
        _write_metadata(checkpoint, target, "checkpoint", self.directory)
        self._prune(checkpoint.checkpoint_id)
        return dataclasses.replace(checkpoint, path=target)

    def highest_id(self) -> int:
        """The highest checkpoint id in the directory (0: none), complete or not: a job
        that does not restore from it numbers its own checkpoints above it, so its own are
        always the latest."""
        if self.directory is None:
            return self._latest.checkpoint_id if self._latest is not None else 0
        return max((checkpoint_id for checkpoint_id, _ in self._ids()), default=0)

    def _ids(self) -> list[tuple[int, str]]:
        assert self.directory is not None
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            match = _CHECKPOINT_DIR.match(name)
            if match:
                found.append((int(match.group(1)), os.path.join(self.directory, name)))
        return sorted(found)

    def _prune(self, newest: int) -> None:
        """Removes all but the newest ``retained`` complete checkpoints, and every incomplete
        one older than ``newest``."""
        complete = [(i, path) for i, path in self._ids()
                    if os.path.isfile(os.path.join(path, METADATA))]
        keep = {path for _, path in complete[-self.retained:]}
        for checkpoint_id, path in self._ids():
            if path not in keep and checkpoint_id <= newest:
                shutil.rmtree(path, ignore_errors=True)

    def latest(self) -> CompletedCheckpoint | None:
        """The newest complete checkpoint that can be read (an unreadable one is skipped
        for the one before it), or None."""
        if self.directory is None:
            return self._latest
        for _, path in reversed(self._ids()):
            if os.path.isfile(os.path.join(path, METADATA)):
                try:
                    return load_checkpoint(path)
                except CheckpointStorageError as error:
                    _log.warning("skipping checkpoint %s: %s", path, error)
        return None


def new_savepoint_directory(directory: str, checkpoint_id: int) -> str:
    """Where a new savepoint of ``checkpoint_id`` goes under ``directory``."""
    return os.path.join(directory, f"savepoint-{checkpoint_id}-{uuid.uuid4().hex[:6]}")


def store_savepoint(checkpoint: CompletedCheckpoint, target: str) -> CompletedCheckpoint:
    """Writes ``checkpoint`` as a savepoint into ``target``; returns it with its path."""
    _write_metadata(checkpoint, target, "savepoint", os.path.dirname(target))
    return dataclasses.replace(checkpoint, path=target)


def _write_metadata(checkpoint: CompletedCheckpoint, target: str, what: str,
                    directory: str) -> None:
    """Written under a temporary name, synced, renamed: complete or absent."""
    try:
        os.makedirs(target, exist_ok=True)
        temporary = os.path.join(target, f".{METADATA}.{os.getpid()}.{time.time_ns()}")
        with open(temporary, "wb") as f:
            pickle.dump(checkpoint, f, pickle.HIGHEST_PROTOCOL)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, os.path.join(target, METADATA))
        _fsync_directory(target)
    except OSError as error:
        raise CheckpointStorageError(
            f"{what} {checkpoint.checkpoint_id} could not be written to {directory}: "
            f"{error}") from error


def load_checkpoint(path: str) -> CompletedCheckpoint:
    """Reads a checkpoint (or savepoint) directory."""
    if not os.path.isdir(path):
        raise CheckpointStorageError(f"checkpoint or savepoint {path} does not exist")
    metadata = os.path.join(path, METADATA)
    try:
        with open(metadata, "rb") as f:
            checkpoint = pickle.load(f)
    except FileNotFoundError:
        raise CheckpointStorageError(
            f"{path} is not a completed checkpoint (no {METADATA})") from None
    except (OSError, pickle.UnpicklingError, EOFError) as error:
        raise CheckpointStorageError(f"checkpoint {path} cannot be read: {error}") from error
    if not isinstance(checkpoint, CompletedCheckpoint):
        raise CheckpointStorageError(f"{metadata} does not hold a checkpoint")
    return dataclasses.replace(checkpoint, path=path)


def _fsync_directory(path: str) -> None:
    with contextlib.suppress(OSError):
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
