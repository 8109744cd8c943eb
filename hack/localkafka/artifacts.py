"""The broker's jars: resolved by Maven from pom.xml, cached per version of that file."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

from localcluster import javaservers

POM = Path(__file__).resolve().parent / "pom.xml"


def kafka_version() -> str:
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    version = ElementTree.parse(POM).find("m:properties/m:kafka.version", namespace)
    assert version is not None and version.text, f"{POM} has no kafka.version"
    return version.text


def fetch(force: bool = False) -> Path:
    return javaservers.fetch(POM, "kafka", force)
