"""PyFlink's ``InputDependencyConstraint``: when a task may be scheduled, given its inputs."""

from enum import Enum


class InputDependencyConstraint(Enum):
    """ANY: once any input can be consumed; ALL: once all of them can."""

    ANY = 0
    ALL = 1
