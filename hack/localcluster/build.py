"""Build the pinned binaries from Go modules into per-version caches: the control plane's, and
what a real node runs (kubelet, kube-proxy, containerd v2, CoreDNS, a pause binary).

`k8s.io/kubernetes` cannot be `go install`ed directly: its go.mod replaces the staging modules
(k8s.io/api, k8s.io/client-go, ...) with local paths. hack/go/k8s is a wrapper module that
requires k8s.io/kubernetes and replaces each staging module with its published v0.x release,
so `go build` resolves everything through the module proxy. KWOK, etcd, containerd and CoreDNS
have wrapper modules of their own (hack/go/*) so that their dependency versions are exactly the
ones they were released with.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .config import (
    CONTAINERD_COMMANDS,
    GO_CONTAINERD_MODULE,
    GO_COREDNS_MODULE,
    GO_ETCD_MODULE,
    GO_K8S_MODULE,
    GO_KWOK_MODULE,
    GO_PAUSE_MODULE,
    KUBE_COMMANDS,
    NODE_KUBE_COMMANDS,
    Versions,
    bin_dir,
    go_binary,
    node_bin_dir,
)

STAMP = ".complete.json"
ALL_BINARIES = (*KUBE_COMMANDS, "kwok", "etcd")
NODE_BINARIES = (*NODE_KUBE_COMMANDS, *CONTAINERD_COMMANDS, "coredns", "pause")


def _log(message: str) -> None:
    print(f"[build] {message}", file=sys.stderr, flush=True)


def _required_version(go_mod: Path, module: str) -> str:
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(), re.M)
    if not match:
        raise RuntimeError(f"{go_mod} does not require {module}")
    return match.group(1)


def check_pins(versions: Versions) -> None:
    """Fail when hack/k8s-versions.env and the wrapper go.mod files disagree."""
    k8s = _required_version(GO_K8S_MODULE / "go.mod", "k8s.io/kubernetes")
    kwok = _required_version(GO_KWOK_MODULE / "go.mod", "sigs.k8s.io/kwok")
    etcd = _required_version(GO_ETCD_MODULE / "go.mod", "go.etcd.io/etcd/server/v3")
    containerd = _required_version(GO_CONTAINERD_MODULE / "go.mod",
                                   "github.com/containerd/containerd/v2")
    coredns = _required_version(GO_COREDNS_MODULE / "go.mod", "github.com/coredns/coredns")
    pinned = (versions.kubernetes, versions.kwok, versions.etcd, versions.containerd,
              versions.coredns)
    found = (k8s, kwok, etcd, containerd, coredns)
    if found != pinned:
        raise RuntimeError(
            f"version pins disagree: k8s-versions.env says {'/'.join(pinned)}, "
            f"the go.mod files say {'/'.join(found)}"
        )
    staging = f"v0.{versions.kubernetes.removeprefix('v1.')}"
    for line in (GO_K8S_MODULE / "go.mod").read_text().splitlines():
        if "=>" in line and line.strip().startswith("k8s.io/"):
            target = line.split("=>", 1)[1].split()
            if len(target) != 2 or target[1] != staging:
                raise RuntimeError(f"hack/go/k8s/go.mod: staging replace not at {staging}: {line}")


def _plane_pins(versions: Versions) -> dict[str, str]:
    return {"kubernetes": versions.kubernetes, "kwok": versions.kwok, "etcd": versions.etcd}


def _node_pins(versions: Versions) -> dict[str, str]:
    return {"kubernetes": versions.kubernetes, "containerd": versions.containerd,
            "coredns": versions.coredns}


def _is_complete(directory: Path, pins: dict[str, str], binaries: tuple[str, ...]) -> bool:
    stamp = directory / STAMP
    if not stamp.is_file():
        return False
    try:
        recorded = json.loads(stamp.read_text())
    except ValueError:
        return False
    if {key: recorded.get(key) for key in pins} != pins:
        return False
    return all(os.access(directory / name, os.X_OK) for name in binaries)


def is_built(versions: Versions) -> bool:
    return _is_complete(bin_dir(versions), _plane_pins(versions), ALL_BINARIES)


def is_node_built(versions: Versions) -> bool:
    return _is_complete(node_bin_dir(versions), _node_pins(versions), NODE_BINARIES)


def _go_env(go: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "CGO_ENABLED": "0",
            "GOTOOLCHAIN": "local",
            "GOFLAGS": "-mod=readonly -buildvcs=false -trimpath",
        }
    )
    # Keep the toolchain's own directory on PATH: `go` may not be on it.
    env["PATH"] = f"{Path(go).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _version_ldflags(version: str) -> str:
    major, minor = version.removeprefix("v").split(".")[:2]
    values = {
        "gitVersion": version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "gitCommit": "module-proxy-build",
    }
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.{name}={value}" for name, value in values.items()]
    return " ".join(flags)


def _go_build(go: str, module_dir: Path, out: str, packages: list[str], ldflags: str,
              tags: str = "") -> None:
    parallelism = os.environ.get("DATAFLOW_GO_BUILD_PARALLELISM", "2")
    # The linker drops DWARF anyway (-s -w in every ldflags here): not generating it in the
    # first place saves about a tenth of a cold build's CPU time.
    cmd = [go, "build", "-p", parallelism, "-gcflags=all=-dwarf=false", f"-ldflags={ldflags}",
           "-o", out]
    if tags:
        cmd.append(f"-tags={tags}")
    cmd += packages
    _log(f"(cd {module_dir} && {' '.join(cmd)})")
    started = time.monotonic()
    subprocess.run(cmd, cwd=module_dir, env=_go_env(go), check=True)
    names = [p.rsplit("/", 1)[-1] for p in packages] if out.endswith("/") else [Path(out).name]
    _log(f"built {', '.join(names)} in {time.monotonic() - started:.0f} s")


def _cached_build(directory: Path, pins: dict[str, str], binaries: tuple[str, ...],
                  steps: Callable[[str, Path], None], force: bool) -> Path:
    """Run `steps` into a staging directory under a lock, stamp it, and swap it in."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    lock_path = directory.parent / f".{directory.name}.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per version at a time
        if not force and _is_complete(directory, pins, binaries):
            _log(f"cached: {directory}")
            return directory
        go = go_binary()
        started = time.monotonic()
        staging = directory.with_name(directory.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        steps(go, staging)
        go_version = subprocess.run(
            [go, "version"], capture_output=True, text=True, check=True
        ).stdout.strip()
        stamp = {**pins, "go": go_version, "seconds": round(time.monotonic() - started)}
        (staging / STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
        shutil.rmtree(directory, ignore_errors=True)
        staging.rename(directory)
        _log(f"done in {stamp['seconds']} s: {directory}")
        return directory


def build(versions: Versions, force: bool = False) -> Path:
    """Build (or reuse) the plane's binaries for `versions`; return their directory."""
    check_pins(versions)

    def steps(go: str, staging: Path) -> None:
        kube = [f"k8s.io/kubernetes/cmd/{name}" for name in KUBE_COMMANDS]
        _go_build(go, GO_K8S_MODULE, f"{staging}/", kube, _version_ldflags(versions.kubernetes))
        _go_build(go, GO_KWOK_MODULE, f"{staging}/", ["sigs.k8s.io/kwok/cmd/kwok"], "-s -w")
        etcd_ldflags = "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=module-proxy-build"
        _go_build(go, GO_ETCD_MODULE, str(staging / "etcd"), ["go.etcd.io/etcd/server/v3"],
                  etcd_ldflags)  # fmt: skip

    return _cached_build(bin_dir(versions), _plane_pins(versions), ALL_BINARIES, steps, force)


def build_node(versions: Versions, force: bool = False) -> Path:
    """Build (or reuse) what a real node runs: kubelet, kube-proxy, containerd v2 with its runc
    shim and ctr, CoreDNS, and the pod sandbox's pause binary."""
    check_pins(versions)

    def steps(go: str, staging: Path) -> None:
        kube = [f"k8s.io/kubernetes/cmd/{name}" for name in NODE_KUBE_COMMANDS]
        _go_build(go, GO_K8S_MODULE, f"{staging}/", kube, _version_ldflags(versions.kubernetes))
        containerd = [f"github.com/containerd/containerd/v2/cmd/{name}"
                      for name in CONTAINERD_COMMANDS]
        version = f"github.com/containerd/containerd/v2/version.Version={versions.containerd}"
        _go_build(go, GO_CONTAINERD_MODULE, f"{staging}/", containerd, f"-s -w -X {version}",
                  tags="no_btrfs no_devmapper no_zfs")
        _go_build(go, GO_COREDNS_MODULE, str(staging / "coredns"), ["github.com/coredns/coredns"],
                  "-s -w")
        _go_build(go, GO_PAUSE_MODULE, str(staging / "pause"), ["."], "-s -w")

    return _cached_build(node_bin_dir(versions), _node_pins(versions), NODE_BINARIES, steps,
                         force)
