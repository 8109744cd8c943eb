"""Completed checkpoints in a directory (Flink's FileSystemCheckpointStorage): a local path
or a Hadoop filesystem's URI (see filesystems).

One directory per job: ``<storage>/chk-<id>/_metadata`` holds a whole checkpoint (source
positions, every subtask's snapshot, the committables it publishes). The metadata file is
written under a temporary name and renamed, so a checkpoint is either complete or absent: a
directory without ``_metadata`` is a checkpoint that failed half-way, never restored from and
removed by the next one that completes. Only the newest ``retained`` checkpoints are kept. A
savepoint is the same metadata in a directory of its own (``savepoint-<id>-<hex>``), which
retention never deletes: only its disposal (:func:`dispose_savepoint`) does.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import posixpath
import re
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from dataflow_engine.runtime.checkpoint.committer import Committable
from dataflow_engine.runtime.checkpoint.filesystems import (
    LOCAL,
    CheckpointFileSystem,
    LocalFileSystem,
    resolve,
)
from dataflow_engine.spec.model import is_local_storage

_log = logging.getLogger(__name__)
METADATA = "_metadata"
_CHECKPOINT_DIR = re.compile(r"^chk-(\d+)$")
#: The name :func:`new_savepoint_directory` gives a savepoint: all that disposal deletes.
_SAVEPOINT_DIR = re.compile(r"^savepoint-\d+-[0-9a-f]+$")


class CheckpointStorageError(RuntimeError):
    pass


class SavepointDisposalRefused(ValueError):
    """A path disposal does not delete: not one of the job's savepoints."""


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


def resolve_storage(uri: str, setting: str) -> tuple[CheckpointFileSystem, str]:
    """The filesystem and directory of a storage ``setting``; a URI no filesystem serves
    (an unknown scheme, a connector missing from the classpath) is refused naming it."""
    try:
        return resolve(uri)
    except OSError as error:
        raise CheckpointStorageError(f"{setting}: {error}") from None


class CheckpointStorage:
    """Completed checkpoints of one job; without a directory only the latest, in memory."""

    def __init__(self, directory: str | None, retained: int = 1,
                 filesystem: CheckpointFileSystem | None = None) -> None:
        self.directory = directory
        self.retained = retained
        self.filesystem = filesystem or LOCAL
        #: Without a directory: the latest checkpoint, in memory.
        self._latest: CompletedCheckpoint | None = None

    def store(self, checkpoint: CompletedCheckpoint) -> CompletedCheckpoint:
        """Makes ``checkpoint`` durable (atomically); returns it with its path."""
        if self.directory is None:
            self._latest = checkpoint
            return checkpoint
        target = posixpath.join(self.directory, f"chk-{checkpoint.checkpoint_id}")
        _write_metadata(checkpoint, target, "checkpoint", self.directory, self.filesystem)
        try:
            self._prune(checkpoint.checkpoint_id)
        except CheckpointStorageError as error:
            # Complete once its metadata is durable: a restart would restore it, so failing
            # it now would withhold its committables from a run that resumes past them.
            # Flink too only logs a subsumed checkpoint it could not discard.
            _log.warning("checkpoint %d is complete but older ones stay: %s",
                         checkpoint.checkpoint_id, error)
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
            names = self.filesystem.names(self.directory)
        except OSError as error:
            raise CheckpointStorageError(
                f"checkpoint storage {self.directory} cannot be read: {error}") from error
        found = []
        for name in names:
            match = _CHECKPOINT_DIR.match(name)
            if match:
                found.append((int(match.group(1)), posixpath.join(self.directory, name)))
        return sorted(found)

    def _prune(self, newest: int) -> None:
        """Removes all but the newest ``retained`` complete checkpoints, and every incomplete
        one older than ``newest``."""
        complete = [(i, path) for i, path in self._ids()
                    if self.filesystem.is_file(posixpath.join(path, METADATA))]
        keep = {path for _, path in complete[-self.retained:]}
        for checkpoint_id, path in self._ids():
            if path not in keep and checkpoint_id <= newest:
                self.filesystem.remove_tree(path)

    def latest(self) -> CompletedCheckpoint | None:
        """The newest complete checkpoint that can be read (an unreadable one is skipped
        for the one before it), or None."""
        if self.directory is None:
            return self._latest
        for _, path in reversed(self._ids()):
            if self.filesystem.is_file(posixpath.join(path, METADATA)):
                try:
                    return load_checkpoint(path, self.filesystem)
                except CheckpointStorageError as error:
                    _log.warning("skipping checkpoint %s: %s", path, error)
        return None


def new_savepoint_directory(directory: str, checkpoint_id: int) -> str:
    """Where a new savepoint of ``checkpoint_id`` goes under ``directory``."""
    return posixpath.join(directory, f"savepoint-{checkpoint_id}-{uuid.uuid4().hex[:6]}")


def dispose_savepoint(path: str, savepoint_directory: str | None,
                      filesystem: CheckpointFileSystem) -> bool:
    """Deletes the savepoint at ``path`` (Flink's ``flink savepoint --dispose``): True once
    deleted, False when nothing is there any more, so disposing twice is no error.

    Only a ``savepoint-<id>-<hex>`` directory directly under ``savepoint_directory`` (on its
    filesystem) is deleted: the caller names a path, and the driver must not delete the
    job's checkpoints or anything else it can reach. Anything else is refused
    (:class:`SavepointDisposalRefused`) before the filesystem is touched; a deletion the
    filesystem fails is a :class:`CheckpointStorageError`."""
    if savepoint_directory is None:
        raise SavepointDisposalRefused(
            "the job has no savepoint directory (spec.checkpointing.savepointStorage or "
            "storage): it has no savepoints to dispose of")
    scheme, authority, where = _location(path)
    name = posixpath.basename(where)
    if ((scheme, authority, posixpath.dirname(where)) != _location(savepoint_directory)
            or not _SAVEPOINT_DIR.match(name)):
        raise SavepointDisposalRefused(
            f"{path} is not a savepoint of this job: only a savepoint-<id>-<hex> directory "
            f"directly under {savepoint_directory} is disposed of")
    target = posixpath.join(savepoint_directory, name)
    if isinstance(filesystem, LocalFileSystem) and os.path.islink(target):
        raise SavepointDisposalRefused(f"{path} is a symbolic link, not a savepoint")
    try:
        if not filesystem.is_directory(target):
            if filesystem.is_file(target):
                raise SavepointDisposalRefused(f"{path} is a file, not a savepoint")
            return False
        filesystem.remove_tree(target)
        remains = filesystem.is_directory(target)
    except OSError as error:
        raise CheckpointStorageError(f"savepoint {path} could not be disposed of: "
                                     f"{error}") from error
    if remains:
        raise CheckpointStorageError(f"savepoint {path} could not be disposed of: it is "
                                     "still there")
    _log.warning("savepoint %s disposed of", target)
    return True


def _location(path: str) -> tuple[str, str, str]:
    """A storage path as (scheme, authority, normalised path): empty scheme and authority for
    a local one (a path or ``file:`` URI), so ``..`` and spellings cannot name another
    directory than they seem to."""
    if is_local_storage(path):
        if path.startswith("file:"):
            path = "/" + path.removeprefix("file:").lstrip("/")
        return "", "", posixpath.normpath(path)
    parts = urlsplit(path)
    if parts.query or parts.fragment:
        return "?", "", ""  # matches no directory
    return parts.scheme.lower(), parts.netloc, posixpath.normpath(parts.path or "/")


def store_savepoint(checkpoint: CompletedCheckpoint, target: str,
                    filesystem: CheckpointFileSystem) -> CompletedCheckpoint:
    """Writes ``checkpoint`` as a savepoint into ``target``; returns it with its path."""
    _write_metadata(checkpoint, target, "savepoint", posixpath.dirname(target), filesystem)
    return dataclasses.replace(checkpoint, path=target)


def _write_metadata(checkpoint: CompletedCheckpoint, target: str, what: str,
                    directory: str, filesystem: CheckpointFileSystem) -> None:
    try:
        filesystem.write_atomically(posixpath.join(target, METADATA),
                                    pickle.dumps(checkpoint, pickle.HIGHEST_PROTOCOL))
    except OSError as error:
        raise CheckpointStorageError(
            f"{what} {checkpoint.checkpoint_id} could not be written to {directory}: "
            f"{error}") from error


def load_checkpoint(path: str, filesystem: CheckpointFileSystem = LOCAL) -> CompletedCheckpoint:
    """Reads a checkpoint (or savepoint) directory."""
    metadata = posixpath.join(path, METADATA)
    try:
        if not filesystem.is_directory(path):
            raise CheckpointStorageError(f"checkpoint or savepoint {path} does not exist")
        checkpoint = pickle.loads(filesystem.read(metadata))
    except FileNotFoundError:
        raise CheckpointStorageError(
            f"{path} is not a completed checkpoint (no {METADATA})") from None
    except (OSError, pickle.UnpicklingError, EOFError) as error:
        raise CheckpointStorageError(f"checkpoint {path} cannot be read: {error}") from error
    if not isinstance(checkpoint, CompletedCheckpoint):
        raise CheckpointStorageError(f"{metadata} does not hold a checkpoint")
    return dataclasses.replace(checkpoint, path=path)
