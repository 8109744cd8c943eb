"""The broker's jars: resolved by Maven from pom.xml, cached per version of that file."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from localcluster.config import cache_root

POM = Path(__file__).resolve().parent / "pom.xml"
_COMPLETE = ".complete"


def kafka_version() -> str:
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    version = ElementTree.parse(POM).find("m:properties/m:kafka.version", namespace)
    assert version is not None and version.text, f"{POM} has no kafka.version"
    return version.text


def lib_dir() -> Path:
    """Where the jars of this pom.xml live: keyed by the file's hash, so any change refetches."""
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    return cache_root() / "kafka" / f"{kafka_version()}-{digest}" / "lib"


def fetched() -> bool:
    return (lib_dir() / _COMPLETE).is_file()


def fetch(force: bool = False) -> Path:
    """Copies the broker's runtime dependencies into :func:`lib_dir` (Maven's own repository,
    ``~/.m2``, keeps the downloads); a no-op when already complete."""
    target = lib_dir()
    if fetched() and not force:
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FileNotFoundError("hack/kafka fetch needs Maven (mvn) on PATH")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    result = subprocess.run(
        [mvn, "-B", "-q", "-f", str(POM), "dependency:copy-dependencies",
         f"-DoutputDirectory={target}", "-DincludeScope=runtime"],
        capture_output=True, text=True, check=False)
    if result.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        raise RuntimeError(f"mvn could not resolve the broker's jars (exit {result.returncode}):"
                           f"\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    (target / _COMPLETE).write_text(kafka_version() + "\n")
    return target
