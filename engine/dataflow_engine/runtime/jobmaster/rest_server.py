"""The driver's REST endpoint, the server side of the protocol (:mod:`dataflow_engine.rest`).

It publishes the status document: ``GET /status`` on a small HTTP server, and a file replaced
atomically (readers never see half a document). ``POST`` paths are the run's actions, each a
function of the JSON body returning the protocol's answer: ``POST /savepoints``
(:func:`savepoint_action`) reads a savepoint (or checkpoint) request and hands it to the run
(202: taken later), ``POST /savepoints/dispose`` (:func:`dispose_action`) deletes one of the
run's savepoints (200: done). A body that is not a request of this protocol version is
refused (400), a request the run cannot take now (409) too; :func:`savepoint_actions` gives
both.
"""

from __future__ import annotations

import functools
import hmac
import json
import os
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from dataflow_engine.rest.endpoints import (
    HEALTH_PATH,
    SAVEPOINTS_DISPOSE_PATH,
    SAVEPOINTS_PATH,
    STATUS_PATH,
    TOKEN_HEADER,
)
from dataflow_engine.rest.messages import ErrorResponse, Message
from dataflow_engine.rest.savepoints import (
    SavepointDisposeRequest,
    SavepointDisposeResponse,
    SavepointTriggerRequest,
    SavepointTriggerResponse,
)
from dataflow_engine.runtime.checkpoint.restore import VertexShape
from dataflow_engine.runtime.checkpoint.savepoints import SavepointRequest, SavepointRequests

#: A POST action: the request's JSON body -> the answer (ValueError: 400, RuntimeError: 409).
Action = Callable[[dict[str, Any]], Message]
M = TypeVar("M", bound=Message)
_MAX_BODY = 64 * 1024


class StatusServer:
    """Serves the latest document; ``port=0`` picks a free port (see :attr:`port`)."""

    def __init__(self, port: int, host: str = "127.0.0.1",
                 actions: dict[str, Action] | None = None, token: str | None = None) -> None:
        """``token``: a POST must carry it in :data:`TOKEN_HEADER` (403 otherwise); reading
        the status needs none."""
        self._body = b"{}"
        self._lock = threading.Lock()
        server, posts = self, dict(actions or {})

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0].rstrip("/")
                if path in ("", STATUS_PATH):
                    self._send(200, server.body)
                elif path == HEALTH_PATH:
                    self._send(200, b"ok\n", "text/plain")
                else:
                    self._error(404, "not found")

            def do_POST(self) -> None:
                action = posts.get(self.path.split("?", 1)[0].rstrip("/"))
                if action is None:
                    self._error(404, "not found")
                    return
                if token is not None and not hmac.compare_digest(
                        self.headers.get(TOKEN_HEADER, "").encode(), token.encode()):
                    self._error(403, f"missing or wrong {TOKEN_HEADER} header")
                    return
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                    if not 0 <= length <= _MAX_BODY:
                        raise ValueError(f"Content-Length {length}: at most {_MAX_BODY}")
                    body = json.loads(self.rfile.read(length) or b"{}")
                    if not isinstance(body, dict):
                        raise ValueError("expected a JSON object")
                    answer = action(body)
                except ValueError as error:
                    self._error(400, str(error))
                except RuntimeError as error:
                    self._error(409, str(error))
                else:
                    # A trigger is taken at a later epoch boundary (Accepted); the rest is done.
                    code = 202 if isinstance(answer, SavepointTriggerResponse) else 200
                    self._send(code, json.dumps(answer.to_json()).encode())

            def _error(self, code: int, error: str) -> None:
                self._send(code, json.dumps(ErrorResponse(error=error).to_json()).encode())

            def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the operator polls often."""

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        name="dataflow-status-server", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def body(self) -> bytes:
        with self._lock:
            return self._body

    def publish(self, document: dict[str, Any]) -> None:
        body = json.dumps(document).encode()
        with self._lock:
            self._body = body

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def write_status_file(path: Path, document: dict[str, Any]) -> None:
    """Write-then-rename in the same directory: atomic on POSIX."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=2)
            f.write("\n")
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _parsed(model: type[M], body: dict[str, Any], what: str) -> M:
    """``body`` as a ``model``; a ValueError (400) naming each field that does not fit."""
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise ValueError(f"not {what}: " + "; ".join(
            f"{'.'.join(str(part) for part in problem['loc']) or 'body'}: {problem['msg']}"
            for problem in error.errors())) from None


def savepoint_action(requests: SavepointRequests, body: dict[str, Any]
                     ) -> SavepointTriggerResponse:
    """``POST /savepoints``: a :class:`SavepointTriggerRequest`, queued for the next epoch
    boundary (:class:`~dataflow_engine.runtime.checkpoint.savepoints.SavepointRefused`, a
    RuntimeError, when the run takes none now)."""
    message = _parsed(SavepointTriggerRequest, body, "a savepoint request")
    upgrade = message.upgrade_to
    requests.request(SavepointRequest(
        message.nonce, message.stop,
        None if upgrade is None else tuple(
            VertexShape(vertex.id, vertex.parallelism, vertex.max_parallelism,
                        vertex.operator_uids) for vertex in upgrade.vertices),
        upgrade is not None and upgrade.allow_non_restored_state,
        drain=message.drain, kind=message.kind))
    return SavepointTriggerResponse(nonce=message.nonce, stop=message.stop,
                                    drain=message.drain, kind=message.kind)


def dispose_action(requests: SavepointRequests, body: dict[str, Any]
                   ) -> SavepointDisposeResponse:
    """``POST /savepoints/dispose``: deletes one of the run's savepoints at once. A path that
    is not one is refused (a ValueError: 400); a deletion the filesystem fails, or a driver
    without a run's savepoint storage yet, is a RuntimeError (409)."""
    message = _parsed(SavepointDisposeRequest, body, "a savepoint disposal request")
    return SavepointDisposeResponse(path=message.path,
                                    disposed=requests.dispose(message.path))


def savepoint_actions(requests: SavepointRequests) -> dict[str, Action]:
    """The POST actions of a driver's run: savepoint (and checkpoint) triggers, disposal."""
    return {SAVEPOINTS_PATH: functools.partial(savepoint_action, requests),
            SAVEPOINTS_DISPOSE_PATH: functools.partial(dispose_action, requests)}
