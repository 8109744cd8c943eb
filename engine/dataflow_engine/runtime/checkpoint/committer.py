"""The commit half of the sinks' two-phase commit (Flink's ``Committer``).

A sink of a continuous job never publishes output itself: at the end of each epoch it hands
the driver *committables* (a part file under a hidden name, for the file sink; the encoded
records, for an exactly-once Kafka sink). The driver
keeps them with the next checkpoint and publishes them only once that checkpoint completed, so
output that a restore from the checkpoint would compute again is never visible twice. A
commit is idempotent: a driver that dies half-way commits the same committables again when it
resumes from that checkpoint.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass

from dataflow_engine.runtime.checkpoint.kafka_commit import (
    KafkaCommittable,
    KafkaCommitter,
    committable_of,
)
from dataflow_engine.spec.catalog import KafkaSinkArgs


class CommitError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class FileCommittable:
    """A finished part file: renamed from ``pending`` to ``final`` on commit. A savepoint's
    own copy (``kept``) is published as a new file beside ``final`` and renamed there, so it
    stays in the savepoint (every restore from it publishes it) and may be on another volume."""

    pending: str
    final: str
    kept: bool = False

    def commit(self) -> None:
        if self.kept:
            if not os.path.exists(self.final):
                self._publish_copy()
        elif os.path.exists(self.pending):
            os.replace(self.pending, self.final)
        elif not os.path.exists(self.final):
            raise CommitError(f"part file {self.pending} is gone before its commit (was the "
                              "sink's directory changed while the job ran?)")

    def _publish_copy(self) -> None:
        if not os.path.exists(self.pending):
            raise CommitError(f"the savepoint's part file {self.pending} is gone")
        directory, name = os.path.split(self.final)
        staged = os.path.join(directory, f".{name}.restored")
        with contextlib.suppress(FileNotFoundError):
            os.remove(staged)  # left by a driver that died here
        _link_or_copy(self.pending, staged)
        os.replace(staged, self.final)


Committable = FileCommittable | KafkaCommittable


class Committer:
    """Publishes the committables of completed checkpoints; keeps each exactly-once Kafka
    sink's transactional producer for the whole run (starting one fences the last run's)."""

    def __init__(self) -> None:
        self._kafka: dict[str, KafkaCommitter] = {}

    def start(self, kafka_sinks: Iterable[tuple[str, KafkaSinkArgs]]) -> int:
        """Starts the producers of the plan's exactly-once Kafka sinks with the plan's settings
        (fencing the last run's) and returns the highest checkpoint id they published: this
        run numbers its checkpoints above it, or, with a storage emptied or changed while the
        transactional id stayed, its commits would be taken for ones already published."""
        for name, args in kafka_sinks:
            transactional_id = str(args.transactional_id_prefix)
            if transactional_id not in self._kafka:
                self._kafka[transactional_id] = KafkaCommitter(committable_of(name, args))
        return max((committer.published for committer in self._kafka.values()), default=0)

    def commit(self, checkpoint_id: int, committables: Iterable[Committable]) -> None:
        transactions: dict[str, list[KafkaCommittable]] = {}
        for committable in committables:
            if isinstance(committable, FileCommittable):
                committable.commit()
            else:
                transactions.setdefault(committable.transactional_id, []).append(committable)
        for transactional_id, batch in transactions.items():
            if transactional_id not in self._kafka:
                self._kafka[transactional_id] = KafkaCommitter(batch[0])
            self._kafka[transactional_id].commit(checkpoint_id, batch)

    def close(self) -> None:
        for committer in self._kafka.values():
            committer.close()
        self._kafka.clear()


def kept_with(committables: Iterable[Committable], directory: str) -> tuple[Committable, ...]:
    """The committables, with every pending part file linked (or copied) into ``directory``:
    an intermediate savepoint publishes nothing, and a later restart removes the part files
    it did not publish, so a savepoint keeps its own. Publishing the original and the kept
    copy gives the same file."""
    kept: list[Committable] = []
    for committable in committables:
        if isinstance(committable, FileCommittable):
            os.makedirs(directory, exist_ok=True)
            copy = os.path.join(directory, os.path.basename(committable.pending))
            _link_or_copy(committable.pending, copy)
            committable = FileCommittable(copy, committable.final, kept=True)
        kept.append(committable)
    return tuple(kept)


def _link_or_copy(source: str, target: str) -> None:
    """A hard link where one can be made, a copy across file systems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


#: ``.<prefix>-<subtask>-<epoch>-<id><suffix>.<attempt>.<token>.inprogress``
_HIDDEN_PART = re.compile(r"^\..+?-\d+-(\d+)-[0-9a-f]+.*\.inprogress$")


def hidden_part_files(directory: str, up_to_epoch: int | None = None) -> list[str]:
    """Part files of a file sink's directory (and its buckets) that were never committed (in
    progress or pending), of epochs up to ``up_to_epoch`` (None: of any)."""
    found = []
    for folder, _, names in os.walk(directory):
        for name in names:
            match = _HIDDEN_PART.match(name)
            if match and (up_to_epoch is None or int(match.group(1)) <= up_to_epoch):
                found.append(os.path.join(folder, name))
    return sorted(found)
