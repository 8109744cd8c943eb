"""OCI image archives of static binaries, written directly: no image builder, no registry.

The real node needs two images no registry here can serve: the pod sandbox's `pause` and
CoreDNS. Each is one static Go binary in an otherwise empty image, which is a tar of a few JSON
documents and one layer; `ctr images import` loads the archive into containerd.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar"


def _add(archive: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 0
    archive.addfile(info, io.BytesIO(data))


def _descriptor(media_type: str, data: bytes) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": f"sha256:{hashlib.sha256(data).hexdigest()}",
            "size": len(data)}


def binary_image(binary: Path, reference: str, out: Path, user: str = "65532:65532") -> Path:
    """Write an OCI archive of an image holding only `binary` (at /<name>, its entrypoint)."""
    layer_buffer = io.BytesIO()
    with tarfile.open(fileobj=layer_buffer, mode="w", format=tarfile.PAX_FORMAT) as layer:
        _add(layer, binary.name, binary.read_bytes(), 0o755)
    layer_bytes = layer_buffer.getvalue()
    layer_digest = f"sha256:{hashlib.sha256(layer_bytes).hexdigest()}"
    config = json.dumps({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": [f"/{binary.name}"], "User": user},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }, sort_keys=True).encode()  # fmt: skip
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": _descriptor(CONFIG_TYPE, config),
        "layers": [_descriptor(LAYER_TYPE, layer_bytes)],
    }, sort_keys=True).encode()  # fmt: skip
    tag = reference.rsplit(":", 1)[1]
    index = json.dumps({
        "schemaVersion": 2,
        "manifests": [{
            **_descriptor(MANIFEST_TYPE, manifest),
            "annotations": {"io.containerd.image.name": reference,
                            "org.opencontainers.image.ref.name": tag},
        }],
    }, sort_keys=True).encode()  # fmt: skip
    with tarfile.open(out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        _add(archive, "oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        _add(archive, "index.json", index)
        for blob in (layer_bytes, config, manifest):
            _add(archive, f"blobs/sha256/{hashlib.sha256(blob).hexdigest()}", blob)
    return out
