"""Kubernetes-style conditions: lastTransitionTime moves only when ``status`` changes."""

from __future__ import annotations

from datetime import UTC, datetime

from dataflow_operator.status.model import Condition

COMPILED = "Compiled"
PROVISIONED = "Provisioned"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
#: Set by stateful upgrades only: False while an upgrade is refused and the job runs on.
UPGRADED = "Upgraded"
#: Continuous jobs with checkpoints: False while checkpoints fail one after another.
CHECKPOINTING = "Checkpointing"
#: True while the job runs its last stable spec after an upgrade that was not healthy.
ROLLED_BACK = "RolledBack"
#: A DataflowSnapshot's: True once it completed, False once it failed or was abandoned.
COMPLETED = "Completed"
CONDITION_TYPES = (COMPILED, PROVISIONED, RUNNING, SUCCEEDED, FAILED, UPGRADED, ROLLED_BACK,
                   CHECKPOINTING, COMPLETED)
#: The longest message a condition (or ``status.error``) keeps: a driver's error can be a whole
#: traceback, and the status has a byte budget.
MAX_MESSAGE_CHARS = 4096


#: RFC 3339 in UTC, to the second, as the API server writes times.
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def now() -> str:
    return datetime.now(UTC).strftime(TIME_FORMAT)


def now_datetime() -> datetime:
    return datetime.now(UTC)


def from_millis(millis: float) -> str:
    """A driver's time (milliseconds since the epoch) as ``now()`` writes times."""
    return datetime.fromtimestamp(millis / 1000, UTC).strftime(TIME_FORMAT)


def parse_time(rfc3339: str) -> datetime:
    """A time as ``now()`` writes it (and the API server's, with or without fractions)."""
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00"))


def bounded(message: str) -> str:
    """``message``, cut to MAX_MESSAGE_CHARS with its end kept (a traceback's last line names
    the error)."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return "... " + message[-(MAX_MESSAGE_CHARS - 4):]


def set_condition(conditions: list[Condition], type_: str, status: bool, reason: str,
                  message: str, generation: int) -> list[Condition]:
    """A new list with ``type_`` set; unchanged conditions keep their transition time."""
    value = "True" if status else "False"
    message = bounded(message)
    result = []
    found = False
    for condition in conditions:
        if condition.type != type_:
            result.append(condition)
            continue
        found = True
        moved = condition.status != value
        result.append(Condition(
            type=type_, status=value, reason=reason, message=message,
            last_transition_time=now() if moved else condition.last_transition_time,
            observed_generation=generation))
    if not found:
        result.append(Condition(type=type_, status=value, reason=reason, message=message,
                                last_transition_time=now(), observed_generation=generation))
    order = {t: i for i, t in enumerate(CONDITION_TYPES)}
    return sorted(result, key=lambda c: order.get(c.type, len(order)))


def set_failed(conditions: list[Condition], reason: str, message: str,
               generation: int) -> list[Condition]:
    """Failed=True and Succeeded=False together, as a Kubernetes Job reports a failure."""
    conditions = set_condition(conditions, FAILED, True, reason, message, generation)
    return set_condition(conditions, SUCCEEDED, False, reason, message, generation)


def condition_is(conditions: list[Condition], type_: str, status: bool = True) -> bool:
    value = "True" if status else "False"
    return any(c.type == type_ and c.status == value for c in conditions)
