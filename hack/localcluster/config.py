"""Where things live: pinned versions, the binary cache and the registry of running planes."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

HACK_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = HACK_DIR.parent
VERSIONS_FILE = HACK_DIR / "k8s-versions.env"
GO_K8S_MODULE = HACK_DIR / "go" / "k8s"
GO_KWOK_MODULE = HACK_DIR / "go" / "kwok"
GO_ETCD_MODULE = HACK_DIR / "go" / "etcd"
GO_CONTAINERD_MODULE = HACK_DIR / "go" / "containerd"
GO_COREDNS_MODULE = HACK_DIR / "go" / "coredns"
GO_PAUSE_MODULE = HACK_DIR / "go" / "pause"
KWOK_STAGES = HACK_DIR / "kwok" / "stages.yaml"

KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
#: What a real node runs besides the plane (hack/cluster up --real-node).
NODE_KUBE_COMMANDS = ("kubelet", "kube-proxy")
CONTAINERD_COMMANDS = ("containerd", "containerd-shim-runc-v2", "ctr")


def read_env_file(path: Path) -> dict[str, str]:
    """Parse a KEY=VALUE file (comments and blank lines ignored)."""
    values: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"{path}: not a KEY=VALUE line: {raw!r}")
        values[key.strip()] = value.strip().strip('"')
    return values


@dataclass(frozen=True)
class Versions:
    kubernetes: str
    kwok: str
    etcd: str
    containerd: str
    coredns: str

    @classmethod
    def load(cls, path: Path = VERSIONS_FILE) -> Versions:
        env = read_env_file(path)
        return cls(
            kubernetes=env["KUBERNETES_VERSION"],
            kwok=env["KWOK_VERSION"],
            etcd=env["ETCD_VERSION"],
            containerd=env["CONTAINERD_VERSION"],
            coredns=env["COREDNS_VERSION"],
        )


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/dataflow-operator` (default `~/.cache/dataflow-operator`)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dataflow-operator"


def bin_dir(versions: Versions) -> Path:
    """Directory holding the Go-built binaries of one pinned version set."""
    override = os.environ.get("DATAFLOW_K8S_BIN_DIR")
    if override:
        return Path(override)
    return cache_root() / "k8s" / versions.kubernetes


def node_bin_dir(versions: Versions) -> Path:
    """Directory holding what a real node runs (kubelet, kube-proxy, containerd, CoreDNS)."""
    pins = f"{versions.kubernetes}-containerd-{versions.containerd}-coredns-{versions.coredns}"
    return cache_root() / "node" / pins


#: The project's image, as `hack/image build` names it (the tag: version and a context hash).
IMAGE_NAME = "docker.io/library/dataflow-operator"


def image_archives_dir() -> Path:
    """Where `hack/image build` leaves the project's image as a docker archive named by its tag
    (one at a time), for a real node to import: a running one at once, one started later when
    it starts."""
    return cache_root() / "image" / "archives"


def image_archive(reference: str) -> Path:
    """The archive of the project's image `reference` (`IMAGE_NAME:<tag>`)."""
    return image_archives_dir() / f"{reference.rsplit(':', 1)[1]}.tar"


def cached_image() -> tuple[str, Path] | None:
    """The project's image `hack/image build` made last (reference, archive), if any."""
    archives = sorted(image_archives_dir().glob("*.tar"), key=lambda path: path.stat().st_mtime)
    if not archives:
        return None
    return f"{IMAGE_NAME}:{archives[-1].stem}", archives[-1]


def clusters_dir() -> Path:
    """Registry of running planes: one file per plane naming its state directory."""
    return cache_root() / "clusters"


def go_binary() -> str:
    """The `go` command: $GO, then PATH, then the usual /usr/local/go install."""
    candidates = [os.environ.get("GO"), shutil.which("go"), "/usr/local/go/bin/go"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError("no Go toolchain found: install Go >= 1.26 or set $GO")
