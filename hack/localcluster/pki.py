"""Certificates and keys for one plane, made with the openssl CLI (no Python dependency)."""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

DAYS = "30"
SERVICE_IP = "10.96.0.1"
FRONT_PROXY_CLIENT = "front-proxy-client"  # first address of --service-cluster-ip-range
API_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@dataclass(frozen=True)
class ClientIdentity:
    """A client certificate: file stem, user name (CN) and groups (O)."""

    name: str
    user: str
    groups: tuple[str, ...] = ()


# Each component authenticates as itself; RBAC's bootstrap roles grant the Kubernetes ones.
# KWOK plays every kubelet at once, so it gets cluster-admin through system:masters.
CLIENTS = (
    ClientIdentity("admin", "dataflow-admin", ("system:masters",)),
    ClientIdentity("kube-controller-manager", "system:kube-controller-manager"),
    ClientIdentity("kube-scheduler", "system:kube-scheduler"),
    ClientIdentity("kwok", "dataflow-kwok", ("system:masters",)),
)


def _openssl(*args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed:\n{result.stderr}")


def _subject(common_name: str, organisations: tuple[str, ...] = ()) -> str:
    return "".join(f"/O={org}" for org in organisations) + f"/CN={common_name}"


def _new_ec_request(key: Path, csr: Path, subject: str) -> None:
    _openssl(
        "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", str(key), "-out", str(csr), "-subj", subject,
    )  # fmt: skip


def _new_ca(pki: Path, stem: str, common_name: str) -> None:
    _openssl(
        "req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", str(pki / f"{stem}.key"), "-out", str(pki / f"{stem}.crt"),
        "-subj", f"/CN={common_name}-{secrets.token_hex(4)}", "-days", DAYS,
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    )  # fmt: skip


def _sign(pki: Path, stem: str, subject: str, extensions: list[str], ca: str = "ca") -> None:
    key, csr, crt = pki / f"{stem}.key", pki / f"{stem}.csr", pki / f"{stem}.crt"
    ext = pki / f"{stem}.ext"
    _new_ec_request(key, csr, subject)
    ext.write_text("\n".join(extensions) + "\n")
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(pki / f"{ca}.crt"),
        "-CAkey", str(pki / f"{ca}.key"),
        "-set_serial", str(secrets.randbits(63)), "-days", DAYS, "-sha256",
        "-extfile", str(ext), "-out", str(crt),
    )  # fmt: skip
    csr.unlink()
    ext.unlink()


#: A real node's identities: the kubelet (the Node authorizer knows it by this name and group),
#: kube-proxy (bound to system:node-proxier by RBAC's bootstrap policy) and the API server's
#: client certificate for the kubelet's API (logs, exec), bound to system:kubelet-api-admin.
KUBELET_API_CLIENT = "kube-apiserver-kubelet-client"


def node_clients(node_name: str) -> tuple[ClientIdentity, ...]:
    return (
        ClientIdentity("kubelet", f"system:node:{node_name}", ("system:nodes",)),
        ClientIdentity("kube-proxy", "system:kube-proxy"),
        ClientIdentity(KUBELET_API_CLIENT, KUBELET_API_CLIENT),
    )


def _client_extensions() -> list[str]:
    return [
        "basicConstraints=critical,CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage=clientAuth",
    ]


def generate_node(pki: Path, node_name: str, node_ip: str) -> None:
    """The real node's client certificates and the kubelet's serving certificate."""
    for client in node_clients(node_name):
        _sign(pki, client.name, _subject(client.user, client.groups), _client_extensions())
    _sign(
        pki,
        "kubelet-serving",
        _subject(f"system:node:{node_name}", ("system:nodes",)),
        [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature,keyEncipherment",
            "extendedKeyUsage=serverAuth",
            f"subjectAltName=DNS:{node_name},IP:{node_ip}",
        ],
    )
    for key in pki.glob("*.key"):
        key.chmod(0o600)


def generate(pki: Path, extra_ips: tuple[str, ...] = ()) -> None:
    """Write the CAs, serving and client certificates and the service-account key into `pki`.

    `extra_ips` are more addresses the API server is reached at (a real node's IP)."""
    pki.mkdir(parents=True, exist_ok=True)
    _new_ca(pki, "ca", "dataflow-local-ca")
    # The aggregation layer's CA: the apiserver proxies to extension apiservers with this client
    # certificate, and they trust the X-Remote-* headers of requests signed by it.
    _new_ca(pki, "front-proxy-ca", "dataflow-front-proxy-ca")
    _sign(
        pki,
        "front-proxy-client",
        _subject(FRONT_PROXY_CLIENT),
        [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature,keyEncipherment",
            "extendedKeyUsage=clientAuth",
        ],
        ca="front-proxy-ca",
    )
    names = [f"DNS:{name}" for name in API_DNS_NAMES]
    names += ["IP:127.0.0.1", "IP:0:0:0:0:0:0:0:1", f"IP:{SERVICE_IP}"]
    names += [f"IP:{ip}" for ip in extra_ips]
    _sign(
        pki,
        "apiserver",
        _subject("kube-apiserver"),
        [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature,keyEncipherment",
            "extendedKeyUsage=serverAuth",
            f"subjectAltName={','.join(names)}",
        ],
    )
    for client in CLIENTS:
        _sign(
            pki,
            client.name,
            _subject(client.user, client.groups),
            _client_extensions(),
        )
    # Service-account tokens: the apiserver signs with the private key, verifies with the public.
    _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
             "-out", str(pki / "sa.key"))  # fmt: skip
    _openssl("pkey", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))
    for key in pki.glob("*.key"):
        key.chmod(0o600)
