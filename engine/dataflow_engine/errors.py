"""Errors a user can act on: every problem names the field it is about."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SpecProblem:
    """One problem in a DataflowJob spec, located by a path like ``spec.pipeline[2].inputs[0]``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SpecError(ValueError):
    """A spec that cannot be compiled; carries every problem found, not just the first."""

    def __init__(self, problems: Iterable[SpecProblem]) -> None:
        self.problems: tuple[SpecProblem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def single(cls, path: str, message: str) -> SpecError:
        return cls([SpecProblem(path, message)])
