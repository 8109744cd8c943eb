"""Command lines of the plane's components (etcd, kube-*, KWOK) for one state directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .config import KWOK_STAGES
from .pki import FRONT_PROXY_CLIENT, KUBELET_API_CLIENT

SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.1/16"
ISSUER = "https://kubernetes.default.svc.cluster.local"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"

# Kubernetes' defaults already include NamespaceLifecycle, ServiceAccount and PodSecurity; naming
# them keeps the plane honest if a default ever changes. NodeRestriction pairs with the Node
# authorizer.
ADMISSION_PLUGINS = (
    "NamespaceLifecycle",
    "ServiceAccount",
    "PodSecurity",
    "NodeRestriction",
    "LimitRanger",
    "ResourceQuota",
    "Priority",
    "DefaultTolerationSeconds",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
)
# TaintNodesByCondition taints every new node not-ready until the node-lifecycle controller sees
# it Ready. That controller (and its evictions) is left out, so the taint would never go.
DISABLED_ADMISSION_PLUGINS = ("TaintNodesByCondition",)

# Controllers a test cluster needs; the node, volume, cloud and networking ones stay off.
CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
    "deployment-controller",
    "replicaset-controller",
    "job-controller",
    "pod-garbage-collector-controller",
)


#: With a real node, Services need endpoints (kube-proxy, DNS, the API server's service proxy
#: reads v1 Endpoints) and pods need PersistentVolumeClaims bound.
REAL_NODE_CONTROLLERS = (
    "endpoints-controller",
    "endpointslice-controller",
    "endpointslice-mirroring-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
)


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int

    @classmethod
    def from_list(cls, ports: list[int]) -> Ports:
        return cls(*ports)


@dataclass(frozen=True)
class Layout:
    """Files of one plane inside its state directory."""

    state: Path

    @property
    def pki(self) -> Path:
        return self.state / "pki"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    def component_kubeconfig(self, name: str) -> Path:
        return self.state / f"{name}.kubeconfig"


def etcd(binary: str, layout: Layout, ports: Ports) -> list[str]:
    client = f"http://127.0.0.1:{ports.etcd_client}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        binary,
        "--name=dataflow",
        f"--data-dir={layout.state / 'etcd'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=dataflow={peer}",
        "--initial-cluster-state=new",
        "--unsafe-no-fsync",  # throw-away data: do not pay for fsync
        "--quota-backend-bytes=2147483648",
        "--logger=zap",
        "--log-level=warn",
    ]


def apiserver(bindir: Path, layout: Layout, ports: Ports, node_ip: str | None = None) -> list[str]:
    """Without a real node, on loopback only; with one, on the node's IP, which the `kubernetes`
    Service's endpoint names so that pods reach the API server."""
    pki = layout.pki
    if node_ip is None:
        # A loopback address cannot be an Endpoints address: do not publish one.
        network = ["--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                   "--endpoint-reconciler-type=none"]
    else:
        network = [f"--bind-address={node_ip}", f"--advertise-address={node_ip}",
                   "--endpoint-reconciler-type=lease",
                   f"--kubelet-client-certificate={pki / (KUBELET_API_CLIENT + '.crt')}",
                   f"--kubelet-client-key={pki / (KUBELET_API_CLIENT + '.key')}",
                   f"--kubelet-certificate-authority={pki / 'ca.crt'}",
                   "--kubelet-preferred-address-types=InternalIP,Hostname"]
    return [
        str(bindir / "kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        *network,
        f"--secure-port={ports.apiserver}",
        f"--cert-dir={layout.state / 'apiserver'}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
        f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
        "--authorization-mode=Node,RBAC",
        "--anonymous-auth=false",
        f"--enable-admission-plugins={','.join(ADMISSION_PLUGINS)}",
        f"--disable-admission-plugins={','.join(DISABLED_ADMISSION_PLUGINS)}",
        # Privileged pods are allowed cluster-wide, so a rejection can only come from PodSecurity.
        "--allow-privileged=true",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--service-account-issuer={ISSUER}",
        f"--api-audiences={ISSUER}",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--profiling=false",
        "--v=1",
    ]


def _component_common(layout: Layout, name: str, port: int) -> list[str]:
    kubeconfig = layout.component_kubeconfig(name)
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={layout.state / name}",
        "--leader-elect=false",  # one instance per plane: skip the lease round-trips
        "--profiling=false",
    ]


def controller_manager(bindir: Path, layout: Layout, ports: Ports,
                       real_node: bool = False) -> list[str]:
    controllers = CONTROLLERS + (REAL_NODE_CONTROLLERS if real_node else ())
    return [
        str(bindir / "kube-controller-manager"),
        *_component_common(layout, "kube-controller-manager", ports.controller_manager),
        f"--controllers={','.join(controllers)}",
        # Each controller acts as its own service account, under RBAC like everyone else.
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={layout.pki / 'sa.key'}",
        f"--root-ca-file={layout.pki / 'ca.crt'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--cluster-name=dataflow-local",
    ]


def scheduler(bindir: Path, layout: Layout, ports: Ports) -> list[str]:
    return [
        str(bindir / "kube-scheduler"),
        *_component_common(layout, "kube-scheduler", ports.scheduler),
    ]


def kwok(bindir: Path, layout: Layout, ports: Ports) -> list[str]:
    return [
        str(bindir / "kwok"),
        f"--kubeconfig={layout.component_kubeconfig('kwok')}",
        f"--config={KWOK_STAGES}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
        f"--cidr={POD_CIDR}",
        "--node-ip=10.0.0.1",
        f"--server-address=127.0.0.1:{ports.kwok}",
    ]


#: Beside a real node, simulated nodes take only pods that tolerate this taint.
SIMULATED_TAINT = {"key": "dataflow.io/simulated", "value": "true", "effect": "NoSchedule"}


def kwok_node(name: str, cpu: str, memory: str, tainted: bool = False) -> dict[str, object]:
    """A Node object that KWOK will manage (it fakes the kubelet and the node's status)."""
    resources = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/agent": "",
                "type": "kwok",
            },
        },
        "spec": {"taints": [SIMULATED_TAINT]} if tainted else {},
        "status": {"allocatable": resources, "capacity": resources},
    }
