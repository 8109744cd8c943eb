"""/healthz reflects what the operator needs: the API server, and a status loop that cycles."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from kube_helpers import Kube, free_port, wait_until
from operator_helpers import Operators, healthz, job_manifest, wait_condition

pytestmark = pytest.mark.k8s


class TcpProxy:
    """Forwards a loopback port to the API server; `stop` cuts every connection, as a network
    partition would, and `start` heals it on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None

    def start(self) -> None:
        """Listens beside the API server, on its own address: its certificate names it."""
        listener = socket.create_server((self.target[0], self.port), reuse_port=True)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        sockets = [self._listener, *self._sockets] if self._listener else self._sockets
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._sockets, self._listener = [], None

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
                upstream = socket.create_connection(self.target)
            except OSError:
                return
            self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def _proxied_kubeconfig(kube: Kube, path: Path) -> Iterator[TcpProxy]:
    config = yaml.safe_load(kube.kubeconfig.read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    assert server.hostname and server.port
    proxy = TcpProxy((server.hostname, server.port))
    try:
        proxy.start()
    except OSError as exc:  # a remote cluster (DATAFLOW_TEST_KUBECONFIG): no address to share
        pytest.skip(f"the API server's address {server.hostname} is not on this machine: {exc}")
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://{server.hostname}:{proxy.port}"
    path.write_text(yaml.safe_dump(config))
    try:
        yield proxy
    finally:
        proxy.stop()


def test_healthz_fails_while_the_api_server_is_unreachable_and_recovers(
        kube: Kube, namespace: str, operators: Operators, tmp_path: Path) -> None:
    health_port = free_port()
    with _proxied_kubeconfig(kube, tmp_path / "proxied.kubeconfig") as proxy:
        operators.start("kubernetes", "--health-port", str(health_port),
                        "--kubeconfig", str(tmp_path / "proxied.kubeconfig"))
        _, probes = wait_until("a healthy operator", lambda: (
            (answer := healthz(health_port))[0] == 200 and answer), timeout=60)
        assert probes["api"] == "ok" and "last cycle" in str(probes["monitor"]), probes
        kube.apply(job_manifest("wc"), namespace=namespace)
        wait_condition(kube, namespace, "wc", "Provisioned")

        proxy.stop()  # the operator loses the API server
        wait_until("/healthz to fail", lambda: healthz(health_port)[0] == 500, timeout=60)

        proxy.start()  # and gets it back: healthy again, without a restart
        wait_until("/healthz to recover", lambda: healthz(health_port)[0] == 200, timeout=60)
        assert operators.started[0].process.poll() is None
