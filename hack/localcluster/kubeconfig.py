"""Kubeconfig files (self-contained, certificates embedded) and a minimal HTTPS API client."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
from pathlib import Path
from typing import Any


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write(path: Path, *, server: str, pki: Path, client: str, context: str) -> Path:
    """Write a kubeconfig for `client` (a stem in `pki`) talking to `server`."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {"server": server, "certificate-authority-data": _b64(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": f"{context}-{client}",
                "user": {
                    "client-certificate-data": _b64(pki / f"{client}.crt"),
                    "client-key-data": _b64(pki / f"{client}.key"),
                },
            }
        ],
        "contexts": [
            {"name": context, "context": {"cluster": context, "user": f"{context}-{client}"}}
        ],
        "current-context": context,
        "preferences": {},
    }
    # JSON is YAML, and kubectl, client-go and the Python client all read it.
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
    return path


class ApiClient:
    """Just enough of the Kubernetes REST API for bootstrapping, authenticated as admin."""

    def __init__(self, port: int, pki: Path, timeout: float = 5.0, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

    def request(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> tuple[int, str]:
        connection = http.client.HTTPSConnection(
            self.host, self.port, context=self.context, timeout=self.timeout
        )
        try:
            headers = {"Accept": "application/json"}
            payload = None
            if body is not None:
                payload = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            return response.status, response.read().decode(errors="replace")
        finally:
            connection.close()

    def get_json(self, path: str) -> dict[str, Any] | None:
        """GET `path`; the decoded object on 200, None otherwise (or when unreachable)."""
        try:
            status, text = self.request("GET", path)
        except OSError:
            return None
        if status != 200:
            return None
        result: dict[str, Any] = json.loads(text)
        return result
