"""The host changes a real node needs, recorded so that `down` can undo every one of them.

A real node changes the machine itself: a bridge for the pods, sysctls (IP forwarding, bridged
traffic through iptables, and the kernel tunables the kubelet sets), and firewall rules that
keep the pod network closed. Each change is written to the plane's state directory *before* it
is made, with the value it replaced, so a teardown after a crash half-way still restores it.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

BRIDGE = "dataflow0"
#: The real node's pod subnet; the bridge's address is the node IP (and the pods' gateway).
POD_SUBNET = "10.245.0.0/24"
NODE_IP = "10.245.0.1"
#: Addresses that exist only on this machine (pods, services, KWOK's simulated pods and node).
PRIVATE_RANGES = (POD_SUBNET, "10.96.0.0/16", "10.244.0.0/16", "10.0.0.1/32")
FORWARD_CHAIN = "DATAFLOW-NODE-FORWARD"
OUTPUT_CHAIN = "DATAFLOW-NODE-OUTPUT"

#: Sysctls this node sets itself, and those the kubelet and kube-proxy may set: all restored.
SYSCTLS = (
    "net/ipv4/ip_forward",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    "net/ipv4/conf/all/route_localnet",
    "net/netfilter/nf_conntrack_max",
    "net/netfilter/nf_conntrack_tcp_timeout_established",
    "net/netfilter/nf_conntrack_tcp_timeout_close_wait",
    "net/netfilter/nf_conntrack_tcp_be_liberal",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)
#: What the node turns on: forwarding (pod -> service -> pod is routed back out the bridge)
#: and bridged traffic through iptables (so kube-proxy's DNAT is undone on the way back).
NODE_SYSCTLS = {
    "net/ipv4/ip_forward": "1",
    "net/bridge/bridge-nf-call-iptables": "1",
    "net/bridge/bridge-nf-call-ip6tables": "1",
}
RECORD = "host-changes.json"
#: Fixed paths the node's components write to whatever their settings (containerd's shim
#: sockets, libcni's cache, the kubelet's log links): removed at teardown if the node made them.
FIXED_PATHS = ("/run/containerd", "/var/lib/cni", "/var/log/containers")


class HostError(RuntimeError):
    pass


def run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise HostError(f"{' '.join(argv)}: {result.stderr.strip() or result.stdout.strip()}")
    return result


def _sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key


def read_sysctls() -> dict[str, str]:
    values = {}
    for key in SYSCTLS:
        with contextlib.suppress(OSError):
            values[key] = _sysctl_path(key).read_text().strip()
    return values


def bridge_exists() -> bool:
    return Path(f"/sys/class/net/{BRIDGE}").exists()


@dataclass
class HostChanges:
    """What `apply` changed, persisted as JSON beside the plane's other state."""

    path: Path
    sysctls: dict[str, str]
    created: list[str]
    #: "tool table chain" of the KUBE-* chains that existed before (none, normally).
    kube_chains: list[str]
    #: nftables tables present before (iptables-nft creates its tables on first use).
    nft_tables: list[str]
    iptables: bool = False
    ip6tables: bool = False
    bridge: bool = False

    def save(self) -> None:
        record = {"sysctls": self.sysctls, "created": self.created,
                  "kube_chains": self.kube_chains, "nft_tables": self.nft_tables,
                  "bridge": self.bridge,
                  "iptables": self.iptables, "ip6tables": self.ip6tables}
        self.path.write_text(json.dumps(record, indent=2) + "\n")

    @classmethod
    def load(cls, state: Path) -> HostChanges | None:
        path = state / RECORD
        if not path.is_file():
            return None
        record = json.loads(path.read_text())
        return cls(path, record["sysctls"], record["created"], record["kube_chains"],
                   record["nft_tables"], record["iptables"], record["ip6tables"],
                   record["bridge"])


def apply(state: Path) -> HostChanges:
    """Create the bridge, set the sysctls and close the pod network; record each step first."""
    changes = HostChanges(state / RECORD, read_sysctls(),
                          [path for path in FIXED_PATHS if not Path(path).exists()],
                          sorted(kube_chains()), sorted(nft_tables()))
    changes.save()
    # The bridge is the machine-wide lock: creating it is atomic, and only its creator records
    # it (a teardown must never delete another plane's bridge).
    if run("ip", "link", "add", BRIDGE, "type", "bridge", check=False).returncode != 0:
        raise HostError(f"a real node already runs on this machine (bridge {BRIDGE} exists): "
                        "one real node per machine; `hack/cluster list` shows the planes")
    changes.bridge = True
    changes.save()
    run("ip", "addr", "add", f"{NODE_IP}/{POD_SUBNET.split('/')[1]}", "dev", BRIDGE)
    run("ip", "link", "set", BRIDGE, "up")
    for key, value in NODE_SYSCTLS.items():
        _sysctl_path(key).write_text(value)
    changes.iptables = True
    changes.save()
    _install_ipv4_rules()
    changes.ip6tables = True
    changes.save()
    # The pods have no IPv6 addresses; nothing from the bridge is forwarded over IPv6 either.
    run("ip6tables", "-w", "-N", FORWARD_CHAIN)
    run("ip6tables", "-w", "-A", FORWARD_CHAIN, "-i", BRIDGE, "-j", "REJECT")
    run("ip6tables", "-w", "-I", "FORWARD", "1", "-j", FORWARD_CHAIN)
    return changes


def _install_ipv4_rules() -> None:
    """Pods reach the bridge and this machine only; nothing for a private range leaves it.

    FORWARD: anything from the bridge that would be routed elsewhere than the bridge is refused.
    OUTPUT: a packet to a pod, service or simulated address that would leave through another
    interface is refused, unless kube-proxy's DNAT rewrote it (the filter table still sees the
    route chosen before the DNAT).
    """
    run("iptables", "-w", "-N", FORWARD_CHAIN)
    run("iptables", "-w", "-A", FORWARD_CHAIN, "-i", BRIDGE, "!", "-o", BRIDGE, "-j", "REJECT")
    run("iptables", "-w", "-I", "FORWARD", "1", "-j", FORWARD_CHAIN)
    run("iptables", "-w", "-N", OUTPUT_CHAIN)
    run("iptables", "-w", "-A", OUTPUT_CHAIN, "-o", "lo", "-j", "RETURN")
    run("iptables", "-w", "-A", OUTPUT_CHAIN, "-o", BRIDGE, "-j", "RETURN")
    run("iptables", "-w", "-A", OUTPUT_CHAIN, "-d", ",".join(PRIVATE_RANGES), "-m", "conntrack",
        "!", "--ctstate", "DNAT", "-j", "REJECT")  # fmt: skip
    run("iptables", "-w", "-I", "OUTPUT", "1", "-j", OUTPUT_CHAIN)


def _saved_rules(tool: str) -> dict[str, list[str]]:
    """`iptables-save` lines by table."""
    tables: dict[str, list[str]] = {}
    current = ""
    for line in run(f"{tool}-save", check=False).stdout.splitlines():
        if line.startswith("*"):
            current = line[1:]
            tables[current] = []
        elif current and (line.startswith(":") or line.startswith("-A ")):
            tables[current].append(line)
    return tables


def kube_chains() -> set[str]:
    """The KUBE-* chains (the kubelet's and kube-proxy's) now present, as "tool table chain"."""
    found = set()
    for tool in ("iptables", "ip6tables"):
        for table, lines in _saved_rules(tool).items():
            for line in lines:
                if line.startswith(":KUBE-"):
                    found.add(f"{tool} {table} {line[1:].split()[0]}")
    return found


def remove_kube_chains(keep: set[str]) -> None:
    """Remove the KUBE-* chains not in `keep` and every rule jumping to them: kube-proxy's
    clean-up leaves the kubelet's own (KUBE-FIREWALL, KUBE-KUBELET-CANARY, ...)."""
    for tool in ("iptables", "ip6tables"):
        for table, lines in _saved_rules(tool).items():
            chains = [line[1:].split()[0] for line in lines if line.startswith(":KUBE-")]
            doomed = {c for c in chains if f"{tool} {table} {c}" not in keep}
            if not doomed:
                continue
            for line in lines:
                words = shlex.split(line)
                if (line.startswith("-A ") and words[1] not in doomed
                        and any(w in doomed for w in words[2:])):
                    run(tool, "-w", "-t", table, "-D", *words[1:], check=False)
            for chain in doomed:
                run(tool, "-w", "-t", table, "-F", chain, check=False)
            for chain in doomed:
                run(tool, "-w", "-t", table, "-X", chain, check=False)


def nft_tables() -> set[str]:
    """nftables tables as "family name" (empty when nft is not installed)."""
    if shutil.which("nft") is None:
        return set()
    listing = run("nft", "list", "tables", check=False).stdout
    return {line.removeprefix("table ").strip() for line in listing.splitlines() if line}


def _remove_empty_tables(keep: set[str]) -> None:
    """Delete the tables that iptables-nft created for the node, once nothing is left in them."""
    for table in nft_tables() - keep:
        family, name = table.split()
        tool = {"ip": "iptables", "ip6": "ip6tables"}.get(family)
        if tool is None:
            continue
        lines = _saved_rules(tool).get(name, [])
        builtin = {"INPUT", "OUTPUT", "FORWARD", "PREROUTING", "POSTROUTING"}
        if all(line.startswith(":") and line[1:].split()[0] in builtin for line in lines):
            run("nft", "delete", "table", family, name, check=False)


def _remove_chain(tool: str, parent: str, chain: str) -> None:
    while run(tool, "-w", "-D", parent, "-j", chain, check=False).returncode == 0:
        pass
    run(tool, "-w", "-F", chain, check=False)
    run(tool, "-w", "-X", chain, check=False)


def restore(changes: HostChanges) -> None:
    """Undo what `changes` records (each step tolerates having been undone already)."""
    remove_kube_chains(set(changes.kube_chains))
    if changes.ip6tables:
        _remove_chain("ip6tables", "FORWARD", FORWARD_CHAIN)
    if changes.iptables:
        _remove_chain("iptables", "FORWARD", FORWARD_CHAIN)
        _remove_chain("iptables", "OUTPUT", OUTPUT_CHAIN)
    _remove_empty_tables(set(changes.nft_tables))
    if changes.bridge and bridge_exists():
        run("ip", "link", "del", BRIDGE)
    for path in changes.created:
        shutil.rmtree(path, ignore_errors=True)
    for key, value in changes.sysctls.items():
        with contextlib.suppress(OSError):
            if _sysctl_path(key).read_text().strip() != value:
                _sysctl_path(key).write_text(value)
    changes.path.unlink(missing_ok=True)
