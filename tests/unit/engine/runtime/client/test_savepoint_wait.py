"""``dataflow savepoint --wait`` against a fake driver: a tiny HTTP server of our own status
protocol, whose status document a test scripts poll by poll (when the savepoint's entry shows,
when the job ends, when the driver goes away)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from dataflow_engine.cli import main
from dataflow_engine.rest import PROTOCOL_VERSION, SAVEPOINTS_PATH, STATUS_PATH
from dataflow_engine.runtime.client.command import SavepointWaitError, wait_for_savepoint

pytestmark = pytest.mark.unit


class FakeDriver:
    """Serves ``GET /status`` and takes ``POST /savepoints`` (202). ``script`` is called on
    every GET after the first request came, with the number of such GETs so far; it may add
    entries, end the job, or :meth:`go_away`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.savepoints: list[dict[str, Any]] = []
        self.job_status = "RUNNING"
        self.error: str | None = None
        self.polls_after_request = 0
        self.script: Callable[[FakeDriver, int], None] = lambda _driver, _polls: None
        self.refuse: tuple[int, str] | None = None
        driver = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                assert self.path == STATUS_PATH, self.path
                if driver.requests:
                    driver.polls_after_request += 1
                    driver.script(driver, driver.polls_after_request)
                self._send(200, driver.document())

            def do_POST(self) -> None:
                assert self.path == SAVEPOINTS_PATH, self.path
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if driver.refuse is not None:
                    self._send(driver.refuse[0], {"error": driver.refuse[1]})
                    return
                driver.requests.append(body)
                self._send(202, {"schemaVersion": PROTOCOL_VERSION, "accepted": True,
                                 "nonce": body["nonce"], "stop": body["stop"]})

            def _send(self, code: int, document: dict[str, Any]) -> None:
                body = json.dumps(document).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._closed = False

    def document(self) -> dict[str, Any]:
        return {"schemaVersion": PROTOCOL_VERSION, "jobName": "j", "jobId": "0" * 32,
                "jobStatus": self.job_status, "runtimeMode": "STREAMING", "startTime": 0,
                "updateTime": 0, "error": self.error,
                "checkpoints": {"epochs": 3, "savepoints": list(self.savepoints)}}

    def entry(self, path: str | None = None, **fields: Any) -> None:
        """The entry of the latest request (its nonce), as the driver lists it."""
        self.savepoints.append({"nonce": self.requests[-1]["nonce"], "time": len(self.savepoints),
                                "id": 7, "path": path, **fields})

    def go_away(self) -> None:
        """The driver's process ends: from now on, connections are refused."""
        threading.Thread(target=self.close).start()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._server.shutdown()
            self._server.server_close()


@pytest.fixture
def driver() -> Iterator[FakeDriver]:
    fake = FakeDriver()
    yield fake
    fake.close()


def test_wait_prints_the_path_alone_once_the_entry_shows(
        driver: FakeDriver, capsys: pytest.CaptureFixture[str]) -> None:
    def script(d: FakeDriver, polls: int) -> None:
        if polls == 3:
            d.entry("/ckpt/savepoints/savepoint-7-abc")

    driver.script = script
    assert main(["savepoint", "--wait", "--nonce", "n1", driver.url]) == 0
    out, err = capsys.readouterr()
    assert out == "/ckpt/savepoints/savepoint-7-abc\n"
    assert "waiting for the next epoch boundary" in err
    assert driver.requests == [{"schemaVersion": PROTOCOL_VERSION, "nonce": "n1",
                                "stop": False, "upgradeTo": None, "drain": False,
                                "kind": "savepoint"}]
    assert driver.polls_after_request == 3


def test_a_failed_savepoint_says_its_error_and_reason(
        driver: FakeDriver, capsys: pytest.CaptureFixture[str]) -> None:
    driver.script = lambda d, polls: d.entry(error="no directory for savepoints",
                                             reason="NO_DIRECTORY") if polls == 2 else None
    assert main(["savepoint", "--wait", driver.url]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[-1] == ("dataflow savepoint: no directory for savepoints "
                                    "(NO_DIRECTORY)")


def test_stop_with_savepoint_succeeds_though_the_driver_goes_away_after_its_entry(
        driver: FakeDriver, capsys: pytest.CaptureFixture[str]) -> None:
    def script(d: FakeDriver, polls: int) -> None:
        if polls == 2:
            d.entry("/sp/savepoint-9-def", stop=True)
            d.job_status = "FINISHED"
            d.go_away()

    driver.script = script
    assert main(["savepoint", "--stop", "--drain", "--wait", driver.url]) == 0
    assert capsys.readouterr().out == "/sp/savepoint-9-def\n"
    assert (driver.requests[0]["stop"], driver.requests[0]["drain"]) == (True, True)


def test_a_driver_that_stops_answering_before_the_entry_is_reported(
        driver: FakeDriver, capsys: pytest.CaptureFixture[str]) -> None:
    driver.script = lambda d, polls: d.go_away() if polls == 1 else None
    assert main(["savepoint", "--stop", "--wait", driver.url]) == 1
    err = capsys.readouterr().err
    assert f"the driver at {driver.url} stopped answering" in err
    assert "before savepoint" in err


def test_a_job_that_ends_without_the_savepoint_is_reported_at_once(driver: FakeDriver) -> None:
    def script(d: FakeDriver, polls: int) -> None:
        d.job_status, d.error = "FAILED", "operator 'boom' failed"

    driver.script = script
    driver.requests.append({"nonce": "x"})  # as if asked: the script runs from the first poll
    with pytest.raises(SavepointWaitError,
                       match=r"the job ended FAILED: operator 'boom' failed before savepoint "
                             r"'x' was taken"):
        wait_for_savepoint(driver.url, "x", timeout=30, interval=0.01)
    assert driver.polls_after_request == 1


def test_the_wait_is_bounded_by_its_timeout(driver: FakeDriver,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    driver.requests.append({"nonce": "slow"})
    with pytest.raises(SavepointWaitError, match=r"'slow' was not taken within 0.3 s"):
        wait_for_savepoint(driver.url, "slow", timeout=0.3, interval=0.05)
    assert driver.polls_after_request >= 3
    assert main(["savepoint", "--wait", "--timeout", "0.5", driver.url]) == 1
    assert "was not taken within 0.5 s" in capsys.readouterr().err


def test_an_entry_listed_before_the_request_is_not_its_answer(
        driver: FakeDriver, capsys: pytest.CaptureFixture[str]) -> None:
    driver.savepoints.append({"nonce": "again", "time": 1, "id": 3, "path": "/old"})
    driver.script = lambda d, polls: d.entry("/new") if polls == 2 else None
    assert main(["savepoint", "--wait", "--nonce", "again", driver.url]) == 0
    assert capsys.readouterr().out == "/new\n"


def test_a_triggered_checkpoint_is_asked_for_and_waited_for_the_same_way(
        driver: FakeDriver, capsys: pytest.CaptureFixture[str]) -> None:
    driver.script = lambda d, polls: d.entry("/ckpt/chk-8") if polls == 1 else None
    assert main(["savepoint", "--checkpoint", "--wait", driver.url]) == 0
    assert capsys.readouterr().out == "/ckpt/chk-8\n"
    assert driver.requests[0]["kind"] == "checkpoint"


def test_a_refused_request_is_not_waited_for(driver: FakeDriver,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    driver.refuse = (409, "only a running continuous job takes savepoints")
    assert main(["savepoint", "--wait", driver.url]) == 1
    assert capsys.readouterr().err == ("dataflow savepoint: only a running continuous job "
                                       "takes savepoints (HTTP 409)\n")
    assert driver.polls_after_request == 0


@pytest.mark.parametrize(("options", "problem"), [
    (["--drain"], "--drain ends the job's event time: it needs --stop"),
    (["--checkpoint", "--stop"], "--checkpoint takes a checkpoint"),
    (["--timeout", "5"], "--timeout bounds --wait"),
    (["--wait", "--timeout", "0"], "--timeout must be positive"),
])
def test_options_that_do_not_go_together_are_usage_errors(
        options: list[str], problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_code:
        main(["savepoint", *options, "http://127.0.0.1:9"])
    assert exit_code.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: dataflow savepoint") and problem in err
