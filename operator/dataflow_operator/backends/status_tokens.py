"""Per-job tokens for the drivers' POST actions (savepoints, stop-with-savepoint).

A driver's status port is reachable by whatever can reach its pod; reading the status is
harmless, stopping the job is not. Each driver gets a token (``DATAFLOW_STATUS_TOKEN``) that
its POST actions require; the operator derives it from a key of its own and the job's uid
(HMAC-SHA256), so it keeps no per-job secret and a restarted operator knows every running
driver's token. The key comes from a file: the chart's Secret in a cluster, a file the
operator creates in its state directory otherwise.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import tempfile
from pathlib import Path

from dataflow_operator.resources.meta import JobRef

#: The file holding the key in the operator's state directory (when no --status-key-file).
KEY_FILE = "status-token.key"


class StatusTokens:
    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the status token key must have at least 16 bytes")
        self._key = key

    @classmethod
    def from_file(cls, path: Path) -> StatusTokens:
        return cls(path.read_bytes().strip())

    @classmethod
    def in_state_dir(cls, state_dir: Path) -> StatusTokens:
        """The state directory's key, created (readable by the operator's user only) once.

        Replicas started together share the directory: the key is written to a file of its
        own and linked into place, so none ever reads a half-written key and the first link
        wins for all of them.
        """
        path = state_dir / KEY_FILE
        if not path.exists():
            state_dir.mkdir(parents=True, exist_ok=True)
            descriptor, draft = tempfile.mkstemp(dir=state_dir, prefix=f".{KEY_FILE}.")
            try:
                with os.fdopen(descriptor, "w") as f:  # mkstemp's mode is 0o600
                    f.write(secrets.token_hex(32))
                with contextlib.suppress(FileExistsError):
                    os.link(draft, path)
            finally:
                os.unlink(draft)
        return cls.from_file(path)

    def for_job(self, job: JobRef) -> str:
        subject = f"{job.namespace}/{job.name}/{job.uid}".encode()
        return hmac.new(self._key, subject, hashlib.sha256).hexdigest()
