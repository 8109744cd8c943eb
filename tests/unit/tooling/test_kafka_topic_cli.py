"""``hack/kafka topic``: which broker it means, what it asks of it, and how it finds
confluent-kafka when run by a Python without it (the broker itself is the spark tier's)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack"))

from localkafka import broker, cli, topics  # noqa: E402

pytestmark = pytest.mark.unit


def _running(monkeypatch: pytest.MonkeyPatch, *bootstraps: str) -> None:
    monkeypatch.setattr(broker, "running", lambda: [
        broker.Broker(Path(f"/tmp/dataflow-kafka-{i}"), bootstrap)
        for i, bootstrap in enumerate(bootstraps)])


def test_create_goes_to_the_latest_broker_unless_one_is_named(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    created: list[tuple[Any, ...]] = []
    monkeypatch.setattr(topics, "create", lambda *args: created.append(args))
    _running(monkeypatch, "127.0.0.1:1111", "127.0.0.1:2222")
    assert cli.main(["topic", "create", "clicks", "--partitions", "3"]) == 0
    assert cli.main(["topic", "create", "views", "--partitions", "1",
                     "--bootstrap", "10.0.0.5:9092"]) == 0
    assert created == [("127.0.0.1:2222", "clicks", 3), ("10.0.0.5:9092", "views", 1)]
    assert "created topic clicks (3 partitions) on 127.0.0.1:2222" in capsys.readouterr().out


def test_list_prints_name_and_partitions_tab_separated(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(topics, "partitions",
                        lambda bootstrap, internal: {"a": 3, "b": 1} if not internal else {})
    assert cli.main(["topic", "list", "--bootstrap", "h:1"]) == 0
    assert capsys.readouterr().out == "a\t3\nb\t1\n"


def test_without_a_running_broker_or_with_no_partitions_it_says_what_to_do(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _running(monkeypatch)
    assert cli.main(["topic", "list"]) == 1
    assert "no broker is running: start one (hack/kafka up)" in capsys.readouterr().err
    for partitions in ("0", "many"):
        with pytest.raises(SystemExit) as exit_code:
            cli.main(["topic", "create", "t", "--partitions", partitions])
        assert exit_code.value.code == 2
    assert "argument --partitions: not a number: 'many'" in capsys.readouterr().err


def test_a_python_without_confluent_kafka_runs_the_command_again_with_the_venvs(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    venv_python = tmp_path / "venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text("")
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # its import fails
    monkeypatch.setattr(topics, "VENV_PYTHON", venv_python)
    executed: list[tuple[Any, list[str]]] = []

    def execv(path: Any, args: list[str]) -> None:
        executed.append((path, args))
        raise SystemExit(0)

    monkeypatch.setattr(topics.os, "execv", execv)
    with pytest.raises(SystemExit):
        topics.require_client(["topic", "list"])
    assert executed == [(venv_python, [str(venv_python), str(REPO / "hack" / "kafka"),
                                       "topic", "list"])]

    monkeypatch.setattr(topics.sys, "prefix", str(tmp_path / "venv"))  # it is the venv's
    with pytest.raises(RuntimeError, match="topics need the confluent-kafka package"):
        topics.require_client(["topic", "list"])
