"""`up` and `down`: one control plane per state directory, several side by side."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import build, components, hostnet, kubeconfig, node, pki, procs
from .config import Versions, bin_dir, cached_image, clusters_dir, node_bin_dir

STATE_MARKER = "state.json"
START_ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


class PlaneError(RuntimeError):
    pass


def _log(message: str) -> None:
    print(f"[cluster] {message}", file=sys.stderr, flush=True)


@dataclass
class UpOptions:
    nodes: int | None = None  # KWOK nodes; default 3, or 0 beside a real node
    node_cpu: str = "16"
    node_memory: str = "64Gi"
    timeout: float = 90.0
    build: bool = True
    state_root: Path | None = None
    real_node: bool = False
    load_image: bool = True  # the project's cached image into the real node

    @property
    def kwok_nodes(self) -> int:
        if self.nodes is not None:
            return self.nodes
        return 0 if self.real_node else 3


class _Waiter:
    """Polls conditions until a shared deadline; fails at once if a component died."""

    def __init__(self, children: dict[str, subprocess.Popen[bytes]], timeout: float) -> None:
        self.children = children
        self.deadline = time.monotonic() + timeout

    def check_alive(self) -> None:
        for name, child in self.children.items():
            code = child.poll()
            if code is not None:
                raise PlaneError(f"{name} exited with status {code} during start-up")

    def until(self, what: str, condition: Callable[[], bool]) -> None:
        while True:
            self.check_alive()
            if condition():
                return
            if time.monotonic() > self.deadline:
                raise PlaneError(f"timed out waiting for {what}")
            time.sleep(0.2)


def _healthz(url: str) -> bool:
    """True if a component's /healthz answers ok (its certificate is self-signed: not checked)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, context=context, timeout=2) as response:
            return bool(response.status == 200 and response.read().strip() == b"ok")
    except OSError:
        return False


def _etcd_healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return bool(json.loads(response.read()).get("health") == "true")
    except (OSError, ValueError):
        return False


def _nodes_ready(api: kubeconfig.ApiClient, names: list[str]) -> bool:
    if not names:
        return True
    listing = api.get_json("/api/v1/nodes?labelSelector=type%3Dkwok")
    if listing is None:
        return False
    ready = set()
    for item in listing.get("items", []):
        for condition in item.get("status", {}).get("conditions") or []:
            if condition.get("type") == "Ready" and condition.get("status") == "True":
                ready.add(item["metadata"]["name"])
    return ready >= set(names)


def _register(state: Path) -> None:
    registry = clusters_dir()
    registry.mkdir(parents=True, exist_ok=True)
    (registry / state.name).write_text(f"{state}\n")
    (registry / "current").write_text(f"{state}\n")


def _unregister(state: Path) -> None:
    registry = clusters_dir()
    (registry / state.name).unlink(missing_ok=True)
    current = registry / "current"
    if current.is_file() and current.read_text().strip() == str(state):
        current.unlink()


def up(options: UpOptions) -> Path:
    """Start a plane; return the admin kubeconfig path."""
    started = time.monotonic()
    versions = Versions.load()
    bindir = _binaries(build.is_built(versions), bin_dir(versions),
                       lambda: build.build(versions), options.build, "hack/cluster build")
    etcd = os.environ.get("DATAFLOW_ETCD") or str(bindir / "etcd")
    node_bindir = None
    if options.real_node:
        for state in prune():
            _log(f"took down {state}: none of its processes ran any more")
        _check_real_node_host()
        node_bindir = _binaries(build.is_node_built(versions), node_bin_dir(versions),
                                lambda: build.build_node(versions), options.build,
                                "hack/cluster build --node")

    root = options.state_root or Path(tempfile.gettempdir())
    state = Path(tempfile.mkdtemp(prefix="dataflow-cluster-", dir=root)).resolve()
    layout = components.Layout(state)
    ports = components.Ports.from_list(procs.free_ports(6))
    (state / STATE_MARKER).write_text(
        json.dumps(
            {
                "kubeconfig": str(layout.admin_kubeconfig),
                "ports": dataclasses.asdict(ports),
                "kubernetes": versions.kubernetes,
                "kwok": versions.kwok,
                "bin_dir": str(bindir),
                "etcd": etcd,
                "real_node": str(node_bindir) if node_bindir else None,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            },
            indent=2,
        )
        + "\n"
    )
    _register(state)
    _log(f"state directory {state}")
    children: dict[str, subprocess.Popen[bytes]] = {}
    try:
        _start(options, bindir, etcd, layout, ports, children, node_bindir)
    except BaseException as error:  # ^C included: never leave half a plane running
        if node_bindir is not None:
            _print_logs(state, node.NODE_PROCESSES)
            node.stop(state, node_bindir / "kube-proxy")
        procs.stop_children(children)
        node.restore_host(state)
        if not isinstance(error, Exception):
            raise
        _print_logs(state, START_ORDER)
        _log(f"logs kept in {state}; `hack/cluster down {state}` removes them")
        raise PlaneError(f"control plane did not start: {error}") from error
    host = hostnet.NODE_IP if node_bindir else "127.0.0.1"
    real = f"real node {node.NODE_NAME} and " if node_bindir else ""
    _log(
        f"ready in {time.monotonic() - started:.1f} s: kubernetes {versions.kubernetes}, "
        f"kwok {versions.kwok}, {real}{options.kwok_nodes} KWOK nodes, "
        f"API https://{host}:{ports.apiserver}"
    )
    return layout.admin_kubeconfig


def _binaries(built: bool, directory: Path, build_them: Callable[[], Path], may_build: bool,
              command: str) -> Path:
    """The cached binaries' directory, built first when missing (if `may_build`)."""
    if built:
        return directory
    if not may_build:
        raise PlaneError(f"binaries missing in {directory}: run `{command}`")
    _log(f"binaries not cached in {directory} yet: building them (a cold build takes minutes)")
    return build_them()


def _print_logs(state: Path, names: tuple[str, ...]) -> None:
    for name in names:
        log = state / "logs" / f"{name}.log"
        if log.is_file():
            print(f"--- {log} (tail) ---\n{procs.tail(log)}", file=sys.stderr)


def _check_real_node_host() -> None:
    """Fail early, and clearly, where a real node cannot run."""
    if os.geteuid() != 0:
        raise PlaneError("a real node needs root (it creates a bridge, cgroups and mounts)")
    if hostnet.bridge_exists():
        raise PlaneError(
            f"a real node already runs on this machine (bridge {hostnet.BRIDGE} exists): one "
            "real node per machine; `hack/cluster list` shows the planes"
        )
    missing = [tool for tool in ("ip", "iptables", "ip6tables", "conntrack", node.RUNC)
               if shutil.which(tool) is None]
    if not (Path(node.CNI_BIN_DIR) / "bridge").is_file():
        missing.append(f"{node.CNI_BIN_DIR}/bridge")
    if missing:
        raise PlaneError(f"a real node needs {', '.join(missing)}: run `hack/setup node` or "
                         "hack/install-node-deps (Debian: runc containernetworking-plugins "
                         "iptables conntrack iproute2)")


def _start(
    options: UpOptions,
    bindir: Path,
    etcd: str,
    layout: components.Layout,
    ports: components.Ports,
    children: dict[str, subprocess.Popen[bytes]],
    node_bindir: Path | None,
) -> None:
    state = layout.state
    node_ip = None
    if node_bindir is not None:
        hostnet.apply(state)
        node_ip = hostnet.NODE_IP
    pki.generate(layout.pki, extra_ips=(node_ip,) if node_ip else ())
    if node_ip:
        pki.generate_node(layout.pki, node.NODE_NAME, node_ip)
    host = node_ip or "127.0.0.1"
    server = f"https://{host}:{ports.apiserver}"
    context = f"dataflow-{state.name.removeprefix('dataflow-cluster-')}"
    kubeconfig.write(layout.admin_kubeconfig, server=server, pki=layout.pki, client="admin",
                     context=context)  # fmt: skip
    for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
        kubeconfig.write(layout.component_kubeconfig(name), server=server, pki=layout.pki,
                         client=name, context=context)  # fmt: skip

    waiter = _Waiter(children, options.timeout)
    children["etcd"] = procs.start("etcd", components.etcd(etcd, layout, ports), state)
    waiter.until("etcd /health", lambda: _etcd_healthy(ports.etcd_client))
    children["kube-apiserver"] = procs.start(
        "kube-apiserver", components.apiserver(bindir, layout, ports, node_ip), state
    )
    api = kubeconfig.ApiClient(ports.apiserver, layout.pki, host=host)

    def readyz() -> bool:
        try:
            status, body = api.request("GET", "/readyz")
        except OSError:
            return False
        return status == 200 and body.strip() == "ok"

    waiter.until("kube-apiserver /readyz", readyz)
    _log("kube-apiserver is ready")

    children["kube-controller-manager"] = procs.start(
        "kube-controller-manager",
        components.controller_manager(bindir, layout, ports, real_node=node_ip is not None),
        state,
    )
    children["kube-scheduler"] = procs.start(
        "kube-scheduler", components.scheduler(bindir, layout, ports), state
    )
    kwok_env = dict(os.environ, KWOK_WORKDIR=str(state / "kwok"))
    children["kwok"] = procs.start("kwok", components.kwok(bindir, layout, ports), state, kwok_env)

    names = [f"kwok-node-{index}" for index in range(options.kwok_nodes)]
    for name in names:
        kwok_node = components.kwok_node(name, options.node_cpu, options.node_memory,
                                         tainted=node_bindir is not None)
        status, body = api.request("POST", "/api/v1/nodes", kwok_node)
        if status not in (201, 409):
            raise PlaneError(f"creating node {name}: HTTP {status}: {body}")

    waiter.until("KWOK nodes Ready", lambda: _nodes_ready(api, names))
    waiter.until("the default service account",
                 lambda: api.get_json("/api/v1/namespaces/default/serviceaccounts/default")
                 is not None)  # fmt: skip
    for name, url in (
        ("kube-controller-manager", f"https://127.0.0.1:{ports.controller_manager}/healthz"),
        ("kube-scheduler", f"https://127.0.0.1:{ports.scheduler}/healthz"),
        ("kwok", f"http://127.0.0.1:{ports.kwok}/healthz"),
    ):
        waiter.until(f"{name} /healthz", functools.partial(_healthz, url))
    if node_bindir is not None:
        _start_node(node_bindir, layout, server, context, api, waiter, children)
        if options.load_image:
            _load_cached_image(node_bindir, node.NodeLayout(layout.state))


def _start_node(bindir: Path, layout: components.Layout, server: str, context: str,
                api: kubeconfig.ApiClient, waiter: _Waiter,
                children: dict[str, subprocess.Popen[bytes]]) -> None:
    """containerd, its images, the kubelet and kube-proxy; then CoreDNS, once the node is
    Ready."""
    versions = Versions.load()
    node_layout = node.NodeLayout(layout.state)
    node.write_configs(node_layout, versions, server, context)
    children["containerd"] = node.start_containerd(bindir, node_layout)
    waiter.until("containerd's socket", node_layout.containerd_socket.exists)
    node.import_node_images(bindir, node_layout, versions)
    node.create_objects(api, node.bootstrap_objects(versions))
    children["kubelet"] = node.start_kubelet(bindir, node_layout)
    children["kube-proxy"] = node.start_kube_proxy(bindir, node_layout)
    waiter.until(f"node {node.NODE_NAME} Ready", lambda: node.node_ready(api))
    _log(f"node {node.NODE_NAME} is Ready")
    waiter.until("CoreDNS ready", lambda: node.dns_ready(api))


def _load_cached_image(bindir: Path, layout: node.NodeLayout) -> None:
    """Import the project's image that `hack/image build` left in the cache, so that the image
    and the node can be made in either order (a build while the node runs loads it at once).
    The node is up either way: a failure here is reported, not fatal."""
    try:
        cached = cached_image()
        if cached is None:
            _log("no project image in the cache yet: `hack/image build` builds one and loads it "
                 "into this node")
            return
        reference, archive = cached
        _log(f"loading the project's image {reference} (left in {archive} by hack/image build)")
        started = time.monotonic()
        node.import_image(bindir, layout, archive)
    except (OSError, hostnet.HostError) as error:
        _log(f"the project's image is not in the node: loading it failed ({error}); "
             "`hack/image build` loads it")
        return
    _log(f"loaded into the node's containerd in {time.monotonic() - started:.0f} s")


def resolve(target: str | None) -> Path:
    """A state directory from a state dir, a kubeconfig inside one, or the current plane."""
    if target is None:
        current = clusters_dir() / "current"
        if current.is_file() and (Path(current.read_text().strip()) / STATE_MARKER).is_file():
            path = Path(current.read_text().strip())
        else:
            planes = registered()
            if not planes:
                raise PlaneError("no plane is running (none recorded in the registry)")
            path = planes[-1]
    else:
        path = Path(target).expanduser().resolve()
        if path.is_file():
            path = path.parent
    if not (path / STATE_MARKER).is_file():
        raise PlaneError(f"{path} is not a hack/cluster state directory (no {STATE_MARKER})")
    return path


def down(state: Path) -> None:
    """Stop the plane's processes (by pid, components before etcd) and remove its state; a real
    node is stopped first and every host change it made is undone."""
    real_node = json.loads((state / STATE_MARKER).read_text()).get("real_node")
    if real_node:
        node.stop(state, Path(real_node) / "kube-proxy")
    pids = procs.read_pids(state)
    etcd = {name: pid for name, pid in pids.items() if name == "etcd"}
    others = {name: pid for name, pid in pids.items() if name != "etcd"}
    killed = procs.stop(others, state) + procs.stop(etcd, state)
    if killed:
        _log(f"had to SIGKILL: {', '.join(killed)}")
    node.restore_host(state)
    shutil.rmtree(state, ignore_errors=True)
    _unregister(state)
    _log(f"stopped and removed {state}")


def abandoned(state: Path) -> bool:
    """True if the plane started processes and none of them runs any more: whoever ran `up`
    was killed, and a real node's bridge, mounts and rules are left holding the machine."""
    pids = procs.read_pids(state)
    return bool(pids) and not any(procs.is_ours(pid, state) for pid in pids.values())


def prune() -> list[Path]:
    """Take down every abandoned plane (undoing a real node's host changes); return them.

    A plane still starting has no processes recorded yet, so it is never taken for abandoned.
    """
    pruned = [state for state in registered() if abandoned(state)]
    for state in pruned:
        down(state)
    return pruned


def registered() -> list[Path]:
    """State directories of the planes this user started (most recent last)."""
    registry = clusters_dir()
    if not registry.is_dir():
        return []
    states = []
    for entry in registry.iterdir():
        if entry.name == "current":
            continue
        path = Path(entry.read_text().strip())
        if (path / STATE_MARKER).is_file():
            states.append(path)
        else:
            entry.unlink()  # stale: its directory is gone
    return sorted(states, key=lambda path: path.stat().st_mtime)


def describe(state: Path) -> str:
    info = json.loads((state / STATE_MARKER).read_text())
    pids = procs.read_pids(state)
    running = [name for name, pid in pids.items() if procs.is_ours(pid, state)]
    health = "running" if len(running) == len(pids) else f"{len(running)}/{len(pids)} running"
    kind = "real node" if info.get("real_node") else "KWOK"
    return f"{state}  {health}  {kind}  {info['kubernetes']}  {info['kubeconfig']}"
