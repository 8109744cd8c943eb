"""Flink's aligned checkpoints at one subtask (CheckpointBarrierHandler, exactly-once).

A barrier arrives on each input connection; the first one starts the alignment, and every
connection that delivered it is blocked until the others do, so no record after the barrier
reaches the operators before their snapshot. A finished connection (end of partition) no
longer takes part: checkpoints go on after some producers finished (Flink's FLIP-147).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class BarrierAligner:
    connections: int
    #: Connections whose producer finished.
    ended: set[int] = field(default_factory=set)
    #: The checkpoint being aligned, and the connections that delivered its barrier.
    pending: int | None = None
    arrived: set[int] = field(default_factory=set)

    def barrier(self, connection: int, checkpoint_id: int) -> bool:
        """True: every live connection delivered the barrier of ``checkpoint_id`` (take the
        snapshot, then unblock); False: block ``connection`` and wait for the others."""
        if self.pending is None:
            self.pending, self.arrived = checkpoint_id, set()
        elif checkpoint_id != self.pending:
            raise RuntimeError(f"barrier {checkpoint_id} arrived while checkpoint "
                               f"{self.pending} was aligning (one checkpoint at a time)")
        self.arrived.add(connection)
        return self._complete()

    def end_of_partition(self, connection: int) -> int | None:
        """Records that ``connection`` finished: the checkpoint whose alignment that
        completes, if one does."""
        self.ended.add(connection)
        pending = self.pending
        return pending if pending is not None and self._complete() else None

    @property
    def all_ended(self) -> bool:
        return len(self.ended) == self.connections

    def _complete(self) -> bool:
        if len(self.arrived | self.ended) < self.connections:
            return False
        self.pending = None
        self.arrived = set()
        return True
