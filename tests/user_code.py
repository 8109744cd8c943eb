"""User code shipped without an image (spec.pyFiles, spec.requirements), for every tier: a
module given as source, and a wheel built here, byte for byte, with nothing to download."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

#: A module shipped as a .py file (spec.pyFiles).
HELPERS_MODULE = "dataflow_helpers"
HELPERS_SOURCE = "def twice(value):\n    return 2 * value\n"
#: A distribution installed by pip (spec.requirements): not importable anywhere else.
PROBE_MODULE = "dataflow_probe"
PROBE_SOURCE = "def shout(value):\n    return str(value).upper() + '!'\n"


def write_probe_wheel(directory: Path) -> Path:
    """A pure-Python wheel of PROBE_MODULE, version 1.0."""
    name, version = PROBE_MODULE, "1.0"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": PROBE_SOURCE,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: dataflow-tests\n"
                         "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(
        f"{path},sha256={_digest(content)},{len(content.encode())}\n"
        for path, content in files.items()) + f"{info}/RECORD,,\n"
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, content in {**files, f"{info}/RECORD": record}.items():
            archive.writestr(path, content)
    return wheel


def _digest(content: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(content.encode()).digest()).rstrip(
        b"=").decode()


def user_code_pipeline(source_parallelism: int = 1) -> list[dict[str, object]]:
    """1..4, doubled by the shipped module, shouted by the installed one, printed."""
    return [
        {"name": "numbers", "type": "sequence", "args": {"from": 1, "to": 4},
         "parallelism": source_parallelism},
        {"name": "doubled", "type": "map", "function": f"{HELPERS_MODULE}:twice",
         "inputs": ["numbers"]},
        {"name": "shouted", "type": "map", "function": f"{PROBE_MODULE}:shout",
         "inputs": ["doubled"]},
        {"name": "out", "type": "print", "inputs": ["shouted"]},
    ]


#: What the print sink shows of user_code_pipeline, in any order.
EXPECTED = ["2!", "4!", "6!", "8!"]
