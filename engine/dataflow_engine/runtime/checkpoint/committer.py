"""The commit half of the sinks' two-phase commit (Flink's ``Committer``).

A sink of a continuous job never publishes output itself: at the end of each epoch it hands
the driver *committables* (a part file under a hidden name, for the file sink). The driver
keeps them with the next checkpoint and publishes them only once that checkpoint completed, so
output that a restore from the checkpoint would compute again is never visible twice. A
commit is idempotent: a driver that dies half-way commits the same committables again when it
resumes from that checkpoint.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass


class CommitError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class FileCommittable:
    """A finished part file: renamed from ``pending`` to ``final`` on commit."""

    pending: str
    final: str

    def commit(self) -> None:
        if os.path.exists(self.pending):
            os.replace(self.pending, self.final)
        elif not os.path.exists(self.final):
            raise CommitError(f"part file {self.pending} is gone before its commit (was the "
                              "sink's directory changed while the job ran?)")


Committable = FileCommittable


def commit_all(committables: Iterable[Committable]) -> int:
    """Publishes every committable; returns how many."""
    count = 0
    for committable in committables:
        committable.commit()
        count += 1
    return count


_HIDDEN_PART = re.compile(r"^\.part-\d+-(\d+)-[0-9a-f]+\..*\.inprogress$")


def hidden_part_files(directory: str, up_to_epoch: int | None = None) -> list[str]:
    """Part files of a file sink's directory that were never committed (in progress or
    pending), of epochs up to ``up_to_epoch`` (None: of any)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        match = _HIDDEN_PART.match(name)
        if match and (up_to_epoch is None or int(match.group(1)) <= up_to_epoch):
            found.append(os.path.join(directory, name))
    return sorted(found)
