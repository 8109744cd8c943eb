"""A real node: containerd v2 + runc, a kubelet and kube-proxy joined to the plane, and CoreDNS.

Pods on this node really run. Everything a node writes lives under the plane's state directory
(containerd's root and state, the kubelet's root and pod logs, CNI's IP allocations), and the
host changes it needs are recorded by `hostnet`, so `stop` and `restore_host` leave the machine
as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import hostnet, kubeconfig, oci, pki, procs
from .config import Versions

NODE_NAME = "dataflow-node"
CLUSTER_DOMAIN = "cluster.local"
CLUSTER_DNS = "10.96.0.10"
KUBELET_PORT = 10250
RUNC = "/usr/sbin/runc"
CNI_BIN_DIR = "/usr/lib/cni"
CNI_NETWORK = "dataflow"
#: libcni caches each attachment here whatever the runtime's settings; teardown removes ours.
CNI_CACHE = Path("/var/lib/cni/results")
#: Where the kubelet links container logs; a fixed path in the kubelet.
CONTAINER_LOG_LINKS = Path("/var/log/containers")
#: The kubelet's QoS cgroup tree (cgroupfs driver, cgroup root "/").
KUBEPODS = "kubepods"
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Components of the node, stopped before the plane's (names of their pid files).
NODE_PROCESSES = ("kubelet", "kube-proxy", "containerd")


def pause_image(versions: Versions) -> str:
    return f"dataflow.local/pause:{versions.kubernetes}"


def coredns_image(versions: Versions) -> str:
    return f"dataflow.local/coredns:{versions.coredns}"


@dataclass(frozen=True)
class NodeLayout:
    state: Path

    @property
    def root(self) -> Path:
        return self.state / "node"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd" / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"


def ctr(bindir: Path, layout: NodeLayout, *args: str,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """`ctr` against this node's containerd, in the CRI's namespace."""
    return hostnet.run(str(bindir / "ctr"), "--address", str(layout.containerd_socket),
                       "--namespace", "k8s.io", *args, check=check)


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def containerd_config(layout: NodeLayout, versions: Versions) -> str:
    root = layout.root / "containerd"
    cri_runtime = "plugins.'io.containerd.cri.v1.runtime'"
    return f"""version = 3
root = {_toml_string(str(root / "root"))}
state = {_toml_string(str(root / "state"))}
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp",
                    "io.containerd.internal.v1.tracing"]

[grpc]
  address = {_toml_string(str(layout.containerd_socket))}

[ttrpc]
  address = {_toml_string(str(layout.containerd_socket) + ".ttrpc")}

[plugins.'io.containerd.internal.v1.opt']
  path = {_toml_string(str(root / "opt"))}

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = {_toml_string(pause_image(versions))}

[{cri_runtime}]
  # root here lacks CAP_SYS_RESOURCE: a negative oom_score_adj would fail.
  restrict_oom_score_adj = true
  disable_hugetlb_controller = true
  netns_mounts_under_state_dir = true
  [{cri_runtime}.containerd]
    default_runtime_name = "runc"
    [{cri_runtime}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri_runtime}.containerd.runtimes.runc.options]
        BinaryName = {_toml_string(RUNC)}
        Root = {_toml_string(str(root / "runc"))}
        SystemdCgroup = false
  [{cri_runtime}.cni]
    bin_dirs = [{_toml_string(CNI_BIN_DIR)}]
    conf_dir = {_toml_string(str(layout.root / "cni"))}
    max_conf_num = 1
"""


def cni_config(layout: NodeLayout) -> dict[str, Any]:
    return {
        "cniVersion": "1.0.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": hostnet.BRIDGE,
                "isGateway": True,
                "ipMasq": False,  # nothing leaves the machine: no masquerade
                "hairpinMode": True,  # a pod reaches itself through its own Service
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": hostnet.POD_SUBNET, "gateway": hostnet.NODE_IP}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(layout.root / "cni-ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(layout: NodeLayout, pki_dir: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # This machine has cgroup v1 (hybrid); 1.35+ refuses it unless told otherwise.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "failSwapOn": False,
        "protectKernelDefaults": False,
        "address": hostnet.NODE_IP,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki_dir / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(pki_dir / "kubelet-serving.crt"),
        "tlsPrivateKeyFile": str(pki_dir / "kubelet-serving.key"),
        "clusterDNS": [CLUSTER_DNS],
        "clusterDomain": CLUSTER_DOMAIN,
        # No upstream resolvers: pods resolve cluster names only.
        "resolvConf": str(layout.root / "resolv.conf"),
        "podLogsDir": str(layout.root / "pod-logs"),
        "volumePluginDir": str(layout.root / "volume-plugins"),
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        # A developer's disk is shared with everything else: evict only when it is nearly full.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                         "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "maxPods": 110,
        "registerNode": True,
    }


def kube_proxy_config(layout: NodeLayout) -> dict[str, Any]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(layout.state / "kube-proxy.kubeconfig")},
        "mode": "iptables",
        "clusterCIDR": hostnet.POD_SUBNET,
        "hostnameOverride": NODE_NAME,
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        "nodePortAddresses": [f"{hostnet.NODE_IP}/32"],
        # Leave the host's conntrack tunables and route_localnet alone.
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s",
                      "tcpCloseWaitTimeout": "0s"},
        "iptables": {"localhostNodePorts": False},
    }


def write_configs(layout: NodeLayout, versions: Versions, server: str, context: str) -> None:
    # PyYAML only here: `hack/cluster build` (hack/setup runs it while the Python packages are
    # being installed, with the machine's python3) needs nothing but the standard library.
    import yaml

    root = layout.root
    for directory in ("containerd", "cni", "cni-ipam", "pod-logs", "volume-plugins", "kubelet"):
        (root / directory).mkdir(parents=True, exist_ok=True)
    (root / "resolv.conf").write_text("")
    (root / "containerd" / "config.toml").write_text(containerd_config(layout, versions))
    (root / "cni" / f"10-{CNI_NETWORK}.conflist").write_text(json.dumps(cni_config(layout),
                                                                        indent=2))
    (root / "kubelet.yaml").write_text(yaml.safe_dump(kubelet_config(layout, layout.state / "pki")))
    (root / "kube-proxy.yaml").write_text(yaml.safe_dump(kube_proxy_config(layout)))
    for name in ("kubelet", "kube-proxy"):
        kubeconfig.write(layout.state / f"{name}.kubeconfig", server=server,
                         pki=layout.state / "pki", client=name, context=context)  # fmt: skip


def start_containerd(bindir: Path, layout: NodeLayout) -> subprocess.Popen[bytes]:
    # containerd finds its shim (and ctr's tools) on PATH; runc is named by its full path.
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    config = layout.root / "containerd" / "config.toml"
    return procs.start("containerd", [str(bindir / "containerd"), "--config", str(config),
                                      "--log-level", "warn"], layout.state, env)  # fmt: skip


def import_image(bindir: Path, layout: NodeLayout, archive: Path) -> None:
    ctr(bindir, layout, "images", "import", "--platform", "linux/amd64", str(archive))


def import_node_images(bindir: Path, layout: NodeLayout, versions: Versions) -> None:
    images = layout.root / "images"
    images.mkdir(exist_ok=True)
    pause = oci.binary_image(bindir / "pause", pause_image(versions), images / "pause.tar")
    coredns = oci.binary_image(bindir / "coredns", coredns_image(versions),
                               images / "coredns.tar")
    for archive in (pause, coredns):
        import_image(bindir, layout, archive)


def start_kubelet(bindir: Path, layout: NodeLayout) -> subprocess.Popen[bytes]:
    return procs.start("kubelet", [
        str(bindir / "kubelet"),
        f"--config={layout.root / 'kubelet.yaml'}",
        f"--kubeconfig={layout.state / 'kubelet.kubeconfig'}",
        f"--root-dir={layout.kubelet_root}",
        f"--hostname-override={NODE_NAME}",
        f"--node-ip={hostnet.NODE_IP}",
        "--node-labels=type=real",
        "--v=1",
    ], layout.state)  # fmt: skip


def start_kube_proxy(bindir: Path, layout: NodeLayout) -> subprocess.Popen[bytes]:
    return procs.start("kube-proxy", [str(bindir / "kube-proxy"),
                                      f"--config={layout.root / 'kube-proxy.yaml'}", "--v=1"],
                       layout.state)  # fmt: skip


def bootstrap_objects(versions: Versions) -> list[dict[str, Any]]:
    """RBAC for the API server's kubelet client, and CoreDNS as an in-cluster Deployment."""
    labels = {"k8s-app": "kube-dns"}
    corefile = f""".:53 {{
    errors
    health :8080
    ready :8181
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 30
    reload
}}
"""
    restricted_container = {
        "allowPrivilegeEscalation": False, "runAsNonRoot": True, "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"},
    }
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "dataflow:kube-apiserver-kubelet-client"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "system:kubelet-api-admin"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                       "name": pki.KUBELET_API_CLIENT}]},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "coredns", "namespace": "kube-system"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "dataflow:coredns"},
         "rules": [{"apiGroups": [""], "resources": ["services", "pods", "namespaces"],
                    "verbs": ["list", "watch"]},
                   {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                    "verbs": ["list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "dataflow:coredns"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "dataflow:coredns"},
         "subjects": [{"kind": "ServiceAccount", "name": "coredns",
                       "namespace": "kube-system"}]},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "coredns", "namespace": "kube-system"},
         "data": {"Corefile": corefile}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "coredns", "namespace": "kube-system", "labels": labels},
         "spec": {
             "replicas": 1,
             "selector": {"matchLabels": labels},
             "template": {
                 "metadata": {"labels": labels},
                 "spec": {
                     "serviceAccountName": "coredns",
                     "dnsPolicy": "Default",
                     "securityContext": {"runAsNonRoot": True, "runAsUser": 65532,
                                         "runAsGroup": 65532,
                                         "seccompProfile": {"type": "RuntimeDefault"},
                                         # Port 53 without NET_BIND_SERVICE.
                                         "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start",
                                                      "value": "53"}]},
                     "containers": [{
                         "name": "coredns",
                         "image": coredns_image(versions),
                         "imagePullPolicy": "Never",
                         "args": ["-conf", "/etc/coredns/Corefile"],
                         "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                   {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"}],
                         "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181},
                                            "periodSeconds": 2},
                         "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}},
                         "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                                       "limits": {"memory": "128Mi"}},
                         "securityContext": restricted_container,
                         "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns",
                                           "readOnly": True}],
                     }],
                     "volumes": [{"name": "config", "configMap": {"name": "coredns"}}],
                 },
             },
         }},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": labels},
         "spec": {"selector": labels, "clusterIP": CLUSTER_DNS,
                  "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                            {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}},
    ]


def create_objects(api: kubeconfig.ApiClient, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        meta = obj["metadata"]
        group_version = obj["apiVersion"]
        prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        plural = {"ServiceAccount": "serviceaccounts", "ConfigMap": "configmaps",
                  "Service": "services", "Deployment": "deployments",
                  "ClusterRole": "clusterroles",
                  "ClusterRoleBinding": "clusterrolebindings"}[obj["kind"]]
        namespace = meta.get("namespace")
        path = f"{prefix}/namespaces/{namespace}/{plural}" if namespace else f"{prefix}/{plural}"
        status, body = api.request("POST", path, obj)
        if status not in (201, 409):
            raise RuntimeError(f"creating {obj['kind']} {meta['name']}: HTTP {status}: {body}")


def node_ready(api: kubeconfig.ApiClient) -> bool:
    node = api.get_json(f"/api/v1/nodes/{NODE_NAME}")
    conditions = (node or {}).get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def dns_ready(api: kubeconfig.ApiClient) -> bool:
    deployment = api.get_json("/apis/apps/v1/namespaces/kube-system/deployments/coredns")
    return bool(deployment and (deployment.get("status") or {}).get("readyReplicas"))


# -- teardown --------------------------------------------------------------------------------


def _kubepods_cgroups() -> list[Path]:
    """Every cgroup under the kubelet's tree, in every hierarchy, deepest first."""
    found: list[Path] = []
    if not CGROUP_ROOT.is_dir():
        return found
    for hierarchy in CGROUP_ROOT.iterdir():
        for top in (hierarchy / KUBEPODS, hierarchy / f"{KUBEPODS}.slice"):
            if top.is_dir():
                found += [Path(d) for d, _, _ in os.walk(top)]
    return sorted(found, key=lambda path: len(path.parts), reverse=True)


def _kill_pod_processes() -> None:
    for _ in range(50):
        pids = set()
        for cgroup in _kubepods_cgroups():
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in (cgroup / "cgroup.procs").read_text().split())
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def _kill_shims(layout: NodeLayout) -> None:
    """containerd's shims outlive containerd; ours name its socket on their command lines."""
    marker = str(layout.containerd_socket)
    for entry in Path("/proc").iterdir():
        command = procs.cmdline(int(entry.name)) if entry.name.isdigit() else None
        if command is not None and "containerd-shim" in command and marker in command:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


def _mounts_under(path: Path) -> list[str]:
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == str(path) or point.startswith(f"{path}/"):
            mounts.append(point)
    return mounts


def _unmount_all(path: Path) -> None:
    for _ in range(5):
        mounts = _mounts_under(path)
        if not mounts:
            return
        for point in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True)


def _remove_cgroups() -> None:
    for cgroup in _kubepods_cgroups():
        for _ in range(20):
            try:
                cgroup.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


def _remove_host_files(state: Path) -> None:
    if CNI_CACHE.is_dir():
        for entry in CNI_CACHE.glob(f"{CNI_NETWORK}-*"):
            entry.unlink(missing_ok=True)
    if CONTAINER_LOG_LINKS.is_dir():
        for link in CONTAINER_LOG_LINKS.iterdir():
            if link.is_symlink() and str(state) in os.readlink(link):
                link.unlink()


def _owned_changes(state: Path) -> hostnet.HostChanges | None:
    """The host changes of this plane if it created the bridge. A plane that lost the race for
    it must not touch the machine-wide state of the node that won."""
    changes = hostnet.HostChanges.load(state)
    if changes is not None and not changes.bridge:
        changes.path.unlink(missing_ok=True)
        return None
    return changes


def stop(state: Path, kube_proxy: Path | None) -> None:
    """Stop the node: its processes and pods, their mounts and cgroups, kube-proxy's and the
    kubelet's rules. Safe to run on a half-started node. The bridge and the rest of the host
    changes stay until `restore_host`, after the API server (bound to the node IP) has stopped."""
    layout = NodeLayout(state)
    owner = _owned_changes(state) is not None
    pids = procs.read_pids(state)
    for name in NODE_PROCESSES:  # kubelet first: it would restart what is killed below
        if name in pids:
            procs.stop({name: pids[name]}, state, timeout=10)
        if owner and name != "kube-proxy":
            _kill_pod_processes()
    _kill_shims(layout)
    _unmount_all(state)
    if not owner:
        return
    _remove_cgroups()
    _remove_host_files(state)
    if kube_proxy is not None and (layout.root / "kube-proxy.yaml").is_file():
        # kube-proxy's own clean-up of its iptables and nftables rules.
        config = layout.root / "kube-proxy.yaml"
        subprocess.run([str(kube_proxy), "--cleanup", f"--config={config}"], capture_output=True)


def restore_host(state: Path) -> None:
    """Undo the recorded host changes (bridge, firewall, sysctls, fixed paths)."""
    changes = _owned_changes(state)
    if changes is not None:
        hostnet.restore(changes)
