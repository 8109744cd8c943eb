"""The real node's generated configuration and images, checked without starting anything."""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack"))

from localcluster import hostnet, node, oci  # noqa: E402
from localcluster.config import Versions  # noqa: E402

pytestmark = pytest.mark.unit


def test_containerd_config_is_valid_toml_with_the_settings_this_machine_needs(
        tmp_path: Path) -> None:
    layout = node.NodeLayout(tmp_path)
    config = tomllib.loads(node.containerd_config(layout, Versions.load()))
    assert config["version"] == 3
    # Everything containerd writes stays in the plane's state directory.
    for path in (config["root"], config["state"], config["grpc"]["address"],
                 config["plugins"]["io.containerd.internal.v1.opt"]["path"]):
        assert path.startswith(str(tmp_path))
    runtime = config["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["restrict_oom_score_adj"] is True
    assert runtime["disable_hugetlb_controller"] is True
    assert runtime["netns_mounts_under_state_dir"] is True
    runc = runtime["containerd"]["runtimes"]["runc"]["options"]
    assert runc["BinaryName"] == node.RUNC and runc["SystemdCgroup"] is False
    assert runc["Root"].startswith(str(tmp_path))
    sandbox = config["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"]
    assert sandbox == node.pause_image(Versions.load())
    assert "io.containerd.nri.v1.nri" in config["disabled_plugins"]


def test_kubelet_refuses_anonymous_requests_and_keeps_its_files_in_the_state_dir(
        tmp_path: Path) -> None:
    config = node.kubelet_config(node.NodeLayout(tmp_path), tmp_path / "pki")
    assert config["authentication"]["anonymous"] == {"enabled": False}
    assert config["authorization"] == {"mode": "Webhook"}
    assert config["readOnlyPort"] == 0
    assert config["failCgroupV1"] is False and config["cgroupDriver"] == "cgroupfs"
    for key in ("resolvConf", "podLogsDir", "volumePluginDir"):
        assert config[key].startswith(str(tmp_path)), key
    assert config["clusterDNS"] == [node.CLUSTER_DNS]


def test_cni_keeps_pods_on_the_bridge_without_masquerade(tmp_path: Path) -> None:
    bridge = node.cni_config(node.NodeLayout(tmp_path))["plugins"][0]
    assert (bridge["bridge"], bridge["ipMasq"]) == (hostnet.BRIDGE, False)
    ranges = bridge["ipam"]["ranges"][0][0]
    assert ranges == {"subnet": hostnet.POD_SUBNET, "gateway": hostnet.NODE_IP}
    assert bridge["ipam"]["dataDir"].startswith(str(tmp_path))


def test_kube_proxy_leaves_host_tunables_alone(tmp_path: Path) -> None:
    config = node.kube_proxy_config(node.NodeLayout(tmp_path))
    assert config["mode"] == "iptables"
    assert config["conntrack"]["maxPerCore"] == 0
    assert config["iptables"]["localhostNodePorts"] is False  # else route_localnet is set


def test_coredns_runs_restricted_behind_the_cluster_dns_address() -> None:
    objects = {o["kind"]: o for o in node.bootstrap_objects(Versions.load())}
    assert objects["Service"]["spec"]["clusterIP"] == node.CLUSTER_DNS
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    container = pod["containers"][0]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["imagePullPolicy"] == "Never"
    assert "forward" not in objects["ConfigMap"]["data"]["Corefile"]


def test_binary_image_is_an_oci_layout_whose_digests_match(tmp_path: Path) -> None:
    binary = tmp_path / "pause"
    binary.write_bytes(b"\x7fELF not really")
    archive = oci.binary_image(binary, "dataflow.local/pause:v1", tmp_path / "pause.tar")
    with tarfile.open(archive) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    for name, data in files.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    index = json.loads(files["index.json"])
    entry = index["manifests"][0]
    assert entry["annotations"]["io.containerd.image.name"] == "dataflow.local/pause:v1"
    manifest = json.loads(files[f"blobs/sha256/{entry['digest'].split(':')[1]}"])
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}"])
    assert config["config"]["Entrypoint"] == ["/pause"]
    layer = files[f"blobs/sha256/{manifest['layers'][0]['digest'].split(':')[1]}"]
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer).hexdigest()}"]
    with tarfile.open(fileobj=io.BytesIO(layer)) as inner:
        member = inner.getmember("pause")
        assert member.mode == 0o755
        assert inner.extractfile(member).read() == binary.read_bytes()  # type: ignore[union-attr]
