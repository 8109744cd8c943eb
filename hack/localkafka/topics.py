"""Topics of a broker: the broker creates none by itself (``auto.create.topics.enable=false``),
so a user makes them here, with the confluent-kafka AdminClient of the project's virtual
environment (the fetched jars hold the broker, not Kafka's command-line tools)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

#: The project's Python, which has confluent-kafka once hack/setup installed the spark tier.
VENV_PYTHON = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python"
_SCRIPT = Path(__file__).resolve().parents[1] / "kafka"
_TIMEOUT = 30.0


def require_client(argv: list[str]) -> None:
    """Returns when this Python has confluent-kafka; else runs ``hack/kafka ARGV`` again with
    the virtual environment's Python, so that the command works without activating it."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        venv = VENV_PYTHON.parents[1].resolve()
        if not VENV_PYTHON.is_file() or Path(sys.prefix).resolve() == venv:
            raise RuntimeError("topics need the confluent-kafka package: run hack/setup (or "
                               "activate a virtual environment that has it)") from None
        os.execv(VENV_PYTHON, [str(VENV_PYTHON), str(_SCRIPT), *argv])


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    # librdkafka's own log would repeat the connection errors the commands report.
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})


def create(bootstrap: str, name: str, partitions: int, replication: int = 1) -> None:
    """Creates topic ``name``; the broker's refusal (it exists, a bad name) is a RuntimeError."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    admin = _admin(bootstrap)  # referenced until the futures are done: its end fails them
    futures = admin.create_topics([NewTopic(name, partitions, replication)],
                                  request_timeout=_TIMEOUT)
    try:
        for future in futures.values():
            future.result(timeout=_TIMEOUT)
    except KafkaException as error:
        raise RuntimeError(f"topic {name!r} on {bootstrap}: {error.args[0].str()}") from None


def partitions(bootstrap: str, internal: bool = False) -> dict[str, int]:
    """Each topic's partition count, by name (Kafka's own ``__`` topics only if asked)."""
    from confluent_kafka import KafkaException

    try:
        metadata = _admin(bootstrap).list_topics(timeout=_TIMEOUT)
    except KafkaException as error:
        raise RuntimeError(f"{bootstrap}: {error.args[0].str()}") from None
    return {name: len(topic.partitions) for name, topic in sorted(metadata.topics.items())
            if internal or not name.startswith("__")}
