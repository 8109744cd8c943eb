#!/usr/bin/env bash
# Entrypoint of the dataflow-operator image: one image, three roles.
#
#   operator ARGS...  the DataflowJob controller:  dataflow operator ARGS...
#   driver ARGS...    a job's Spark driver (client mode):  dataflow run ARGS..., in the job's
#                     own environment when DATAFLOW_REQUIREMENTS names its requirements
#   executor          a Spark executor; Spark-on-Kubernetes starts executor containers with
#                     this one argument and describes the executor in environment variables
#   anything else     run as given (e.g. `dataflow compile job.yaml`, `bash`)
#
# DATAFLOW_ENTRYPOINT_DRY_RUN=1 prints the final command, one argument per line, on stdout (and
# the variables exported for it on stderr) instead of running it.
set -euo pipefail

python_bin=${DATAFLOW_PYTHON:-python3}

# The Python that PySpark's workers run: the driver sends its own PYSPARK_PYTHON to the
# executors with every task, so every role exports the image's interpreter.
PYSPARK_PYTHON=${PYSPARK_PYTHON:-$(command -v "$python_bin" || echo "$python_bin")}
export PYSPARK_PYTHON

exported=(PYSPARK_PYTHON)

die() {
  echo "entrypoint: $*" >&2
  exit 64
}

require() {
  local name
  for name in "$@"; do
    [[ -n ${!name:-} ]] || die "executor mode needs \$$name (Spark-on-Kubernetes sets it)"
  done
}

# The JVM options Spark passes as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ...: one argument each,
# in the order of their index.
java_opts() {
  local name
  while read -r name; do
    [[ -n $name ]] && printf '%s\0' "${!name}"
  done < <(compgen -e | grep -E '^SPARK_JAVA_OPT_[0-9]+$' | sort -t_ -k4,4n || true)
}

executor_command() {
  require SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES SPARK_APPLICATION_ID \
    SPARK_EXECUTOR_POD_IP SPARK_EXECUTOR_MEMORY
  local spark_home classpath java
  # pip's pyspark is a complete Spark distribution: its jars/ holds Spark and its dependencies.
  # (find_spec locates the package without importing it: a third of a second less.)
  if [[ -n ${SPARK_HOME:-} ]]; then
    spark_home=$SPARK_HOME
  else
    spark_home=$("$python_bin" -c 'import importlib.util as u, os
print(os.path.dirname(u.find_spec("pyspark").origin))' 2>/dev/null) ||
      die "pyspark is not installed for $python_bin (the image's spark extra)"
  fi
  export SPARK_HOME=$spark_home
  exported+=(SPARK_HOME)

  # The user's classpath, Spark's jars (slf4j's first, as Spark's launcher puts them), then the
  # configuration directories (log4j2 and the executor's conf: resources no jar of Spark's has,
  # so found as well after the jars as before, where Spark puts them), then extras. A classpath
  # that begins with Spark's jars so is the image's class archive's (docker/class-archive.sh),
  # whose JVMs start at half the CPU.
  classpath="${spark_home}/jars/*"
  local slf4j
  for slf4j in "$spark_home"/jars/slf4j-api-*.jar; do
    [[ -f $slf4j ]] && classpath="${slf4j}:${classpath}"
  done
  [[ -n ${SPARK_CLASSPATH:-} ]] && classpath="${SPARK_CLASSPATH}:${classpath}"
  [[ -n ${SPARK_CONF_DIR:-} ]] && classpath="${classpath}:${SPARK_CONF_DIR}"
  [[ -n ${HADOOP_CONF_DIR:-} ]] && classpath="${classpath}:${HADOOP_CONF_DIR}"
  [[ -n ${SPARK_EXTRA_CLASSPATH:-} ]] && classpath="${classpath}:${SPARK_EXTRA_CLASSPATH}"
  [[ -n ${SPARK_DIST_CLASSPATH:-} ]] && classpath="${classpath}:${SPARK_DIST_CLASSPATH}"
  # The archive is the JVM's to use or not: one whose classpath or build differs loads the
  # classes from the jars as usual, and says nothing of it.
  # (Drivers map it too: dataflow_engine.runtime.jobmaster.driver_launch.)
  local sharing=()
  if [[ -n ${DATAFLOW_CLASS_ARCHIVE:-} && -r $DATAFLOW_CLASS_ARCHIVE ]]; then
    sharing=("-XX:SharedArchiveFile=$DATAFLOW_CLASS_ARCHIVE" "-Xlog:cds=off,cds+dynamic=off")
  fi

  if [[ -n ${JAVA_HOME:-} ]]; then
    java="${JAVA_HOME}/bin/java"
  else
    java=$(command -v java) || die "no java: set JAVA_HOME or put java on PATH"
  fi

  local opts=()
  mapfile -d '' -t opts < <(java_opts)

  cmd=(
    "$java"
    "${sharing[@]}"
    "${opts[@]}"
    "-Xms${SPARK_EXECUTOR_MEMORY}"
    "-Xmx${SPARK_EXECUTOR_MEMORY}"
    -cp "$classpath"
    org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend
    --driver-url "$SPARK_DRIVER_URL"
    --executor-id "$SPARK_EXECUTOR_ID"
    --cores "$SPARK_EXECUTOR_CORES"
    --app-id "$SPARK_APPLICATION_ID"
    --hostname "$SPARK_EXECUTOR_POD_IP"
    --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}"
    --podName "${SPARK_EXECUTOR_POD_NAME:-${HOSTNAME:-}}"
  )
}

mode=${1:-}
[[ $# -gt 0 ]] && shift

# A job's requirements (spec.requirements, a file the operator mounts): its own environment over
# the image's packages, built or found in the cache before any of the job's Python runs. The
# driver and its executors arrive at the same path, as PySpark's workers need.
if [[ -n ${DATAFLOW_REQUIREMENTS:-} && ($mode == driver || $mode == executor) ]]; then
  python_bin=$("$python_bin" -m dataflow_engine.runtime.jobmaster.environment "$DATAFLOW_REQUIREMENTS" \
    --cache "${DATAFLOW_VENV_CACHE:-/tmp/dataflow-venvs}") ||
    die "cannot install the job's requirements ($DATAFLOW_REQUIREMENTS)"
  PYSPARK_PYTHON=$python_bin
fi

case "$mode" in
  operator)
    cmd=(dataflow operator "$@")
    ;;
  driver)
    cmd=("$python_bin" -m dataflow_engine.cli run "$@")
    ;;
  executor)
    executor_command
    ;;
  "")
    die "usage: entrypoint.sh operator|driver|executor [ARGS...], or a command to run"
    ;;
  *)
    cmd=("$mode" "$@")
    ;;
esac

if [[ ${DATAFLOW_ENTRYPOINT_DRY_RUN:-0} == 1 ]]; then
  printf '%s\n' "${cmd[@]}"
  for name in "${exported[@]}"; do
    printf '%s=%s\n' "$name" "${!name}" >&2
  done
  exit 0
fi
exec "${cmd[@]}"
