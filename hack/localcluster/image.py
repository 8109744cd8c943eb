"""hack/image: the project's image without a registry.

A base image stands in for python:3.11-slim-bookworm (Debian's debootstrap with Python 3.11),
podman builds the project's own Dockerfile on it (build argument PYTHON_IMAGE), and the result
is saved as an archive (config.image_archives_dir) and loaded into the real node's containerd:
at once if a real node runs, else by the node when it starts (plane.up). Everything is cached
by a hash of what goes into it: the base by its recipe, the image by the build context. podman
keeps its storage and configuration under the project's cache, not in the machine's.

The machine reaches package registries through TLS interception that only the host's CA bundle
trusts: the RUN steps see that bundle (and a pip.conf naming it) as read-only mounts, which
never become part of a layer.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import node, plane
from .config import IMAGE_NAME, REPO_ROOT, cache_root, image_archive

#: Debian release and packages of the base image: its cache key.
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "python-is-python3", "ca-certificates")
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
BUILD_CA = "/run/dataflow-build/ca.crt"
#: The build context: what the Dockerfile copies, and the Dockerfile itself.
CONTEXT = ("Dockerfile", ".dockerignore", "docker", "pyproject.toml", "constraints.txt",
           "README.md", "engine", "operator")


def _log(message: str) -> None:
    print(f"[image] {message}", file=sys.stderr, flush=True)


def _root() -> Path:
    return cache_root() / "image"


@functools.cache
def podman_env() -> dict[str, str]:
    """podman with its own storage and settings (runc, cgroupfs, this machine's ulimits);
    written once per process."""
    root = _root() / "podman"
    root.mkdir(parents=True, exist_ok=True)
    storage = root / "storage.conf"
    storage.write_text(
        "[storage]\n"
        'driver = "overlay"\n'
        f'graphroot = "{root / "storage"}"\n'
        f'runroot = "{root / "run"}"\n'
    )
    containers = root / "containers.conf"
    containers.write_text(
        "[containers]\n"
        # The hard nofile limit here is 20000: asking for more fails.
        'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n'
        "[engine]\n"
        'runtime = "runc"\n'
        'cgroup_manager = "cgroupfs"\n'
        'events_logger = "file"\n'
    )
    return dict(os.environ, CONTAINERS_STORAGE_CONF=str(storage),
                CONTAINERS_CONF=str(containers))


def podman(*args: str, capture: bool = False) -> str:
    result = subprocess.run(["podman", *args], env=podman_env(), text=True,
                            stdout=subprocess.PIPE if capture else sys.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)} failed with status {result.returncode}")
    return result.stdout or ""


def _exists(reference: str) -> bool:
    exists = subprocess.run(["podman", "image", "exists", reference], env=podman_env())
    return exists.returncode == 0


def debian_mirror() -> str:
    """The Debian mirror apt is configured with (deb822 or one-line sources)."""
    for path in sorted(Path("/etc/apt").glob("sources.list.d/*.sources")):
        for line in path.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    sources = Path("/etc/apt/sources.list")
    if sources.is_file():
        for line in sources.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and "security" not in parts[1]:
                return parts[1]
    return "http://deb.debian.org/debian"


def base_image() -> str:
    """A stand-in for python:3.11-slim-bookworm, made with debootstrap (cached)."""
    recipe = json.dumps([BASE_SUITE, BASE_PACKAGES, debian_mirror()]).encode()
    reference = f"localhost/dataflow-base:{BASE_SUITE}-{hashlib.sha256(recipe).hexdigest()[:12]}"
    if _exists(reference):
        _log(f"base image cached: {reference}")
        return reference
    started = time.monotonic()
    rootfs = _root() / "rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    _log(f"debootstrap {BASE_SUITE} from {debian_mirror()} (about a minute)")
    subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
                    BASE_SUITE, str(rootfs), debian_mirror()],
                   check=True, stdout=subprocess.DEVNULL, stderr=sys.stderr)  # fmt: skip
    # apt's lists and caches are the image's to fetch; the base carries none.
    for leftover in ("var/lib/apt/lists", "var/cache/apt/archives"):
        for entry in (rootfs / leftover).glob("*"):
            if entry.is_file():
                entry.unlink()
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    result = subprocess.run(["podman", "import", "-", reference], stdin=tar.stdout,
                            env=podman_env(), stdout=subprocess.DEVNULL)
    tar.wait()
    shutil.rmtree(rootfs, ignore_errors=True)
    if result.returncode != 0 or tar.returncode != 0:
        raise RuntimeError("importing the debootstrap root file system into podman failed")
    _log(f"base image {reference} in {time.monotonic() - started:.0f} s")
    return reference


def context_hash(base: str) -> str:
    """A hash of the build context's files (and the base): the image's tag."""
    digest = hashlib.sha256(base.encode())
    for entry in CONTEXT:
        path = REPO_ROOT / entry
        files = [path] if path.is_file() else sorted(
            p for p in path.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc"))
        for file in files:
            digest.update(str(file.relative_to(REPO_ROOT)).encode() + b"\0")
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()[:12]


def _version() -> str:
    for line in (REPO_ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split('"')[1]
    raise RuntimeError("pyproject.toml names no version")


def _check_tools() -> None:
    """Fail early, naming what installs them, where podman, runc or debootstrap is missing."""
    missing = [tool for tool in ("podman", "debootstrap") if shutil.which(tool) is None]
    if not Path(node.RUNC).is_file():
        missing.append(node.RUNC)
    if missing:
        raise RuntimeError(f"building the image needs {', '.join(missing)}: run `hack/setup node` "
                           "(or hack/install-node-deps)")


def build() -> tuple[str, Path]:
    """Build (or reuse) the project's image; return its reference and its archive."""
    _check_tools()
    base = base_image()
    reference = f"{IMAGE_NAME}:{_version()}-{context_hash(base)}"
    archive = image_archive(reference)
    if archive.is_file() and _exists(reference):
        _log(f"cached: {reference}")
        return reference, archive
    started = time.monotonic()
    built_after = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    build_dir = _root() / "build"
    build_dir.mkdir(parents=True, exist_ok=True)
    pip_conf = build_dir / "pip.conf"
    pip_conf.write_text(f"[global]\ncert = {BUILD_CA}\n")
    # Docker's image format: the OCI one has no SHELL, which the Dockerfile uses.
    podman("build", "--pull=never", "--network=host", "--layers", "--format=docker",
           "--build-arg", f"PYTHON_IMAGE={base}",
           "--volume", f"{HOST_CA_BUNDLE}:{BUILD_CA}:ro",
           "--volume", f"{pip_conf}:/etc/pip.conf:ro",
           "--tag", reference, "--file", str(REPO_ROOT / "Dockerfile"),
           str(REPO_ROOT))  # fmt: skip
    _log(f"built {reference} in {time.monotonic() - started:.0f} s")
    forget_older_builds(reference, built_after)
    archive.parent.mkdir(parents=True, exist_ok=True)
    for old in archive.parent.glob("*.tar"):
        old.unlink()  # one archive at a time: each is over a gigabyte
    partial = archive.with_suffix(".partial")
    podman("save", "--format", "docker-archive", "--output", str(partial), reference)
    partial.rename(archive)
    return reference, archive


def forget_older_builds(reference: str, built_after: str) -> None:
    """Every build leaves an image of over a gigabyte, and its build stage's as much again:
    older builds' images go, and the untagged images made before this build (what only they
    used), so the cache holds one build. This build's own stages stay, the next build's
    layer cache."""
    tag = reference.rsplit(":", 1)[1]
    listed = podman("images", "--format", "{{.Repository}}:{{.Tag}}",
                    "--filter", f"reference={IMAGE_NAME}", capture=True)
    older = [image for image in listed.split() if image.rsplit(":", 1)[1] != tag]
    if older:
        podman("rmi", "--force", *older, capture=True)
    podman("image", "prune", "--force", "--filter", f"until={built_after}", capture=True)
    _log(f"removed {len(older)} older image(s) and the layers only they used")


def load_into_node(reference: str, archive: Path) -> bool:
    """Import the image into the running real node's containerd; False if no node runs."""
    for state in plane.registered():
        info = json.loads((state / plane.STATE_MARKER).read_text())
        if not info.get("real_node"):
            continue
        bindir, layout = Path(info["real_node"]), node.NodeLayout(state)
        listed = node.ctr(bindir, layout, "images", "ls", "-q", f"name=={reference}").stdout
        if reference in listed.split():
            _log(f"already in the node's containerd: {reference}")
            return True
        started = time.monotonic()
        node.import_image(bindir, layout, archive)
        _log(f"loaded into the node's containerd in {time.monotonic() - started:.0f} s")
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hack/image", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build (or reuse) the image and load it into the real "
                        "node if one runs (else a real node started later loads it); the last "
                        "line of output is the image reference")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            reference, archive = build()
            if not load_into_node(reference, archive):
                _log(f"no real node runs: the image waits in {archive}; a real node loads it "
                     "when it starts (hack/cluster up --real-node)")
            print(reference, flush=True)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
        print(f"hack/image: {error}", file=sys.stderr)
        return 1
    return 0
