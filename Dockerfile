# One image for the whole system: the operator, each job's Spark driver and Spark's executors.
#
#   docker build -t dataflow-operator:0.1.0 .
#
# The entrypoint (docker/entrypoint.sh) picks the role from the first argument: `operator`,
# `driver` or `executor` (the argument Spark-on-Kubernetes gives executor containers). Runs as
# the non-root user 185, the uid the operator's security contexts name. See docs/image.md.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# -- build: the dependencies in a virtual environment, the Spark extension, then the project --
# The project goes in last and apart (/opt/dataflow/app, on the environment's path by a .pth
# file): a change of code rebuilds only that small layer, not the dependencies' hundreds of MB.
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# A JDK compiles the Spark extension (docker/spark) against the Spark that pip installs; only
# the resulting jar reaches the runtime image.
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jdk-headless \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/dataflow/venv
WORKDIR /src
COPY pyproject.toml constraints.txt ./
# The dependencies of the extras the image runs, as pyproject.toml lists them.
RUN /opt/dataflow/venv/bin/python -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print(*p["dependencies"], *p["optional-dependencies"]["spark"], *p["optional-dependencies"]["operator"], sep="\n")' >requirements.txt \
    && /opt/dataflow/venv/bin/pip install -c constraints.txt -r requirements.txt \
    && find /opt/dataflow/venv -name '__pycache__' -type d -prune -exec rm -rf {} + \
    && /opt/dataflow/venv/bin/python -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "dataflow-app.pth").write_text("/opt/dataflow/app\n")'
# The executor pod feature step, on the driver's classpath (pyspark/jars).
COPY docker/spark ./spark
RUN jars=$(/opt/dataflow/venv/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')/jars \
    && javac --release 17 -cp "$jars/*" -d /tmp/classes spark/io/dataflow/spark/*.java \
    && jar cf "$jars/dataflow-spark-extensions.jar" -C /tmp/classes .
# README.md* : pyproject.toml names the README; the wildcard keeps the build going without it.
COPY README.md* ./
COPY engine ./engine
COPY operator ./operator
RUN /opt/dataflow/venv/bin/pip install --no-deps --target /opt/dataflow/app . \
    && find /opt/dataflow/app -name '__pycache__' -type d -prune -exec rm -rf {} +

# -- runtime -------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Java 17 for Spark's JVM, tini as PID 1 (forwards signals, reaps zombies). Debian's versions
# move with the point releases of bookworm, so they are not pinned here.
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless tini \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java \
    && groupadd --system --gid 185 dataflow \
    && useradd --system --uid 185 --gid 185 --home-dir /home/dataflow --create-home \
       --shell /usr/sbin/nologin dataflow

ENV JAVA_HOME=/opt/java \
    PATH=/opt/dataflow/app/bin:/opt/dataflow/venv/bin:$PATH \
    DATAFLOW_PYTHON=/opt/dataflow/venv/bin/python \
    PYSPARK_PYTHON=/opt/dataflow/venv/bin/python \
    DATAFLOW_CLASS_ARCHIVE=/opt/dataflow/spark-classes.jsa \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

COPY --from=build /opt/dataflow/venv /opt/dataflow/venv
# Spark's classes, parsed and verified once, for the executors' JVMs to map at start (about
# half the CPU of a start, docs/image.md): made here, by this stage's Java for these jars.
COPY docker/class-archive.sh /tmp/class-archive.sh
RUN bash /tmp/class-archive.sh "$DATAFLOW_CLASS_ARCHIVE" /opt/dataflow/venv/bin/python \
    && rm /tmp/class-archive.sh
COPY --from=build /opt/dataflow/app /opt/dataflow/app
COPY --chmod=0755 docker/entrypoint.sh /opt/dataflow/entrypoint.sh

USER 185:185
WORKDIR /home/dataflow
# The operator's health (/healthz) and metrics (/metrics) ports.
EXPOSE 8080 9090

ENTRYPOINT ["/usr/bin/tini", "--", "/opt/dataflow/entrypoint.sh"]
CMD ["operator"]
