"""User code without an image: --py-files and a job's own environment of requirements, on the
driver and in Spark's Python workers."""

from __future__ import annotations

import functools
import http.server
import os
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from user_code import (
    EXPECTED,
    HELPERS_MODULE,
    HELPERS_SOURCE,
    PROBE_MODULE,
    user_code_pipeline,
    write_probe_wheel,
)

pytestmark = pytest.mark.spark


def test_py_files_and_requirements_reach_the_workers(tmp_path: Path) -> None:
    wheel = write_probe_wheel(tmp_path / "wheels")
    code = tmp_path / "code"
    code.mkdir()
    (code / f"{HELPERS_MODULE}.py").write_text(HELPERS_SOURCE)
    (tmp_path / "requirements.txt").write_text(f"{wheel}\n")
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({
        "apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowJob",
        "metadata": {"name": "user-code"},
        "spec": {"parallelism": 2, "pipeline": user_code_pipeline()}}))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    # Neither module is importable without what the job ships.
    for module in (HELPERS_MODULE, PROBE_MODULE):
        assert subprocess.run([sys.executable, "-c", f"import {module}"], cwd=elsewhere,
                              capture_output=True).returncode != 0

    # As the driver pod and the local backend start a driver with requirements.
    result = subprocess.run(
        [sys.executable, "-m", "dataflow_engine.runtime.jobmaster.environment",
         str(tmp_path / "requirements.txt"), "--cache", str(tmp_path / "venvs"), "--exec",
         "-m", "dataflow_engine.cli", "run", str(job), "--master", "local[2]",
         "--py-files", str(code), "--no-progress"],
        cwd=elsewhere, capture_output=True, text=True, timeout=300)

    assert result.returncode == 0, result.stderr[-3000:]
    printed = sorted(line.split("> ", 1)[1] for line in result.stdout.splitlines()
                     if "> " in line)
    assert printed == EXPECTED, result.stdout
    [environment] = [p for p in (tmp_path / "venvs").iterdir() if p.is_dir()]
    assert (environment / "bin" / "python").exists()


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """An https server on loopback with a certificate of its own, serving a directory, and the
    JVM settings that trust it (a truststore made with the JDK's keytool)."""
    served = tmp_path / "served"
    served.mkdir()
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    truststore = tmp_path / "trust.p12"
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "test", "-file", str(cert),
                    "-keystore", str(truststore), "-storetype", "PKCS12", "-storepass",
                    "changeit"], check=True, capture_output=True)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    java = {"JAVA_TOOL_OPTIONS": f"-Djavax.net.ssl.trustStore={truststore} "
                                 "-Djavax.net.ssl.trustStorePassword=changeit"}
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", served, java
    finally:
        server.shutdown()


def test_a_py_file_from_an_https_url(https_server: tuple[str, Path, dict[str, str]],
                                     tmp_path: Path) -> None:
    url, served, java = https_server
    (served / f"{HELPERS_MODULE}.py").write_text(HELPERS_SOURCE)
    pipeline = [op for op in user_code_pipeline() if op["name"] != "shouted"]
    pipeline[-1]["inputs"] = ["doubled"]
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({
        "apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowJob",
        "metadata": {"name": "from-url"}, "spec": {"parallelism": 2, "pipeline": pipeline}}))
    result = subprocess.run(
        [sys.executable, "-m", "dataflow_engine.cli", "run", str(job), "--master", "local[2]",
         "--py-files", f"{url}/{HELPERS_MODULE}.py", "--no-progress"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, **java})
    assert result.returncode == 0, result.stderr[-3000:]
    printed = sorted(int(line.split("> ", 1)[1]) for line in result.stdout.splitlines()
                     if "> " in line)
    assert printed == [2, 4, 6, 8]
