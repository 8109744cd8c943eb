"""Publishes the status document: ``GET /status`` on a small HTTP server, and a file replaced
atomically (readers never see half a document). ``POST`` paths are the run's actions (``POST
/savepoints``), each a function of the JSON body returning a JSON answer."""

from __future__ import annotations

import hmac
import json
import os
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: The header a POST action's caller proves itself with, when the server has a token.
TOKEN_HEADER = "X-Dataflow-Token"
#: Where ``dataflow run`` and ``dataflow savepoint`` read that token (not an argument: those
#: show in the process list).
TOKEN_ENV = "DATAFLOW_STATUS_TOKEN"
#: A POST action: the request's JSON body -> the answer (ValueError: 400, RuntimeError: 409).
Action = Callable[[dict[str, Any]], dict[str, Any]]
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
                if path in ("", "/status"):
                    self._send(200, server.body)
                elif path == "/healthz":
                    self._send(200, b"ok\n", "text/plain")
                else:
                    self._send(404, b'{"error": "not found"}')

            def do_POST(self) -> None:
                action = posts.get(self.path.split("?", 1)[0].rstrip("/"))
                if action is None:
                    self._send(404, b'{"error": "not found"}')
                    return
                if token is not None and not hmac.compare_digest(
                        self.headers.get(TOKEN_HEADER, "").encode(), token.encode()):
                    self._send(403, json.dumps(
                        {"error": f"missing or wrong {TOKEN_HEADER} header"}).encode())
                    return
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                    if not 0 <= length <= _MAX_BODY:
                        raise ValueError(f"Content-Length {length}: at most {_MAX_BODY}")
                    body = json.loads(self.rfile.read(length) or b"{}")
                    if not isinstance(body, dict):
                        raise ValueError("expected a JSON object")
                    code, answer = 202, action(body)
                except ValueError as error:
                    code, answer = 400, {"error": str(error)}
                except RuntimeError as error:
                    code, answer = 409, {"error": str(error)}
                self._send(code, json.dumps(answer).encode())

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
