"""A vertex of the simulated linear pipelines the autoscaler's unit tests run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Stage:
    """A vertex of a simulated linear pipeline: what a subtask processes per busy second, and
    the records it emits per record in."""

    vertex_id: str
    true_rate: float
    selectivity: float
    parallelism: int
