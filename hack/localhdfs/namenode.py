"""Start and stop single-node HDFS instances; each keeps its blocks, logs and pid in a state
dir."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from localcluster import javaservers, procs

POM = Path(__file__).resolve().parent / "pom.xml"
_LAUNCHER = Path(__file__).resolve().parent / "MiniHdfs.java"
_SERVING = "HDFS serving at "
_PREFIX = "dataflow-hdfs-"
_REGISTRY = "hdfses"


@dataclass(frozen=True)
class Hdfs:
    state: Path
    uri: str


def fetch(force: bool = False) -> Path:
    return javaservers.fetch(POM, "hdfs", force)


def up(timeout: float = 120.0, state_root: Path | None = None) -> Hdfs:
    """Starts a NameNode on loopback and a DataNode; returns once both serve."""
    lib = fetch()
    state = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=state_root))
    (port,) = procs.free_ports(1)
    hdfs = Hdfs(state, f"hdfs://127.0.0.1:{port}")
    (state / "uri").write_text(hdfs.uri + "\n")
    javaservers.register(_REGISTRY, state)
    process = procs.start("hdfs", [
        javaservers.java(), *javaservers.JVM_OPTIONS, "-Xmx512m", "-Djava.awt.headless=true",
        "-cp", str(lib / "*"), str(_LAUNCHER), str(state / "data"), str(port)], state)
    log = state / "logs" / "hdfs.log"
    javaservers.wait_serving("HDFS", process, log,
                             lambda: _SERVING in log.read_text(errors="replace"),
                             timeout, lambda: down(state))
    return hdfs


def running() -> list[Hdfs]:
    """HDFS instances started by this user whose process is still alive, oldest first."""
    return [Hdfs(state, (state / "uri").read_text().strip())
            for state in javaservers.running(_REGISTRY, "hdfs")]


def down(state: Path) -> list[str]:
    """Stops the HDFS of ``state`` and removes its state; returns what had to be killed."""
    if not (state.name.startswith(_PREFIX) and (state / "uri").is_file()):
        raise RuntimeError(f"{state} is not the state dir of a hack/hdfs instance")
    return javaservers.remove(_REGISTRY, state)
