"""Start and stop single-node KRaft brokers; each keeps its data, logs and pid in a state dir."""

from __future__ import annotations

import base64
import secrets
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from localcluster import javaservers, procs

from . import artifacts

#: Broker settings for one node: every internal topic has one replica, and a topic exists only
#: when something creates it (a consumer of a missing topic gets an error, as in production).
_SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map":
        "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}
_STARTED = "Kafka Server started"
#: The one user of the SASL listener; its password is random, in the state dir.
SASL_USER = "dataflow"
_PREFIX = "dataflow-kafka-"
_REGISTRY = "kafkas"


@dataclass(frozen=True)
class Broker:
    state: Path
    bootstrap: str


def sasl_listener(state: Path) -> dict[str, str]:
    """The SASL_PLAINTEXT listener of the broker of ``state`` (mechanism PLAIN): its bootstrap
    servers, user and password file."""
    return {"bootstrap": (state / "sasl-bootstrap").read_text().strip(),
            "username": SASL_USER, "passwordFile": str(state / "sasl-password")}


def random_cluster_id() -> str:
    """A random 22-character base64url cluster id, as Kafka's Uuid.randomUuid makes one: never
    starting with "-", which kafka-storage's argument parser would take for an option (one
    random id in 64 did, and the broker then failed to start)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def up(host: str = "127.0.0.1", timeout: float = 60.0, state_root: Path | None = None
       ) -> Broker:
    """Formats a fresh log directory and starts the broker, listening on ``host`` (advertised
    as such, so clients elsewhere can reach it when it is not loopback) in plain text, and
    with SASL (PLAIN, the user SASL_USER, a random password kept in the state dir) for
    clients that must authenticate; returns once it serves."""
    lib = artifacts.fetch()
    state = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=state_root))
    port, sasl_port, controller_port = procs.free_ports(3)
    password = secrets.token_urlsafe(18)
    password_file = state / "sasl-password"
    password_file.touch(mode=0o600)
    password_file.write_text(password)
    (state / "sasl-bootstrap").write_text(f"{host}:{sasl_port}\n")
    settings = {
        **_SETTINGS,
        "listeners": f"PLAINTEXT://{host}:{port},SASL_PLAINTEXT://{host}:{sasl_port},"
                     f"CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port},SASL_PLAINTEXT://{host}:{sasl_port}",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_{SASL_USER}="{password}";',
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "log.dirs": str(state / "data"),
    }
    properties = state / "server.properties"
    properties.touch(mode=0o600)  # it holds the SASL password
    properties.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    java, classpath = javaservers.java(), str(lib / "*")
    cluster_id = random_cluster_id()
    formatted = subprocess.run(
        [java, *javaservers.JVM_OPTIONS, "-cp", classpath, "kafka.tools.StorageTool", "format",
         "--standalone", "-t", cluster_id, "-c", str(properties)],
        capture_output=True, text=True, check=False)
    if formatted.returncode != 0:
        shutil.rmtree(state, ignore_errors=True)
        raise RuntimeError(f"formatting the broker's storage failed:\n{formatted.stdout}"
                           f"{formatted.stderr}")
    broker = Broker(state, f"{host}:{port}")
    (state / "bootstrap").write_text(broker.bootstrap + "\n")
    javaservers.register(_REGISTRY, state)
    process = procs.start("broker", [
        java, *javaservers.JVM_OPTIONS, "-Xms256m", "-Xmx512m", "-Djava.awt.headless=true",
        f"-Dkafka.logs.dir={state / 'logs'}", "-cp", classpath, "kafka.Kafka", str(properties),
    ], state)
    log = state / "logs" / "broker.log"
    javaservers.wait_serving(
        "the broker", process, log,
        lambda: _STARTED in log.read_text(errors="replace") and _accepts(host, port),
        timeout, lambda: down(state))
    return broker


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def running() -> list[Broker]:
    """Brokers started by this user whose process is still alive, oldest first."""
    return [Broker(state, (state / "bootstrap").read_text().strip())
            for state in javaservers.running(_REGISTRY, "broker")]


def down(state: Path) -> list[str]:
    """Stops the broker of ``state`` and removes its state; returns what had to be killed."""
    if not (state.name.startswith(_PREFIX) and (state / "server.properties").is_file()):
        raise RuntimeError(f"{state} is not the state dir of a hack/kafka broker")
    return javaservers.remove(_REGISTRY, state)
