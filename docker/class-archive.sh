#!/usr/bin/env bash
# Writes a class-data-sharing archive (AppCDS, JDK 17's dynamic archive) of the Spark classes a
# short Spark job loads, for JVMs started with Spark launcher's classpath:
#
#   docker/class-archive.sh ARCHIVE [PYTHON]
#
# The image makes one in its last stage for its drivers and executors, hack/setup one in .venv
# for the tests' drivers; DATAFLOW_CLASS_ARCHIVE names it. Such a JVM maps some 10,000 classes
# already parsed and verified instead of loading each from its jar: a Spark JVM's start costs
# about half the CPU (docs/image.md). The archive holds the jars' paths, sizes and times and
# the JVM's build, so it is made where it is used; a JVM whose classpath or build differs
# ignores it (-Xshare:auto), silently with -Xlog:cds=off,cds+dynamic=off.
set -euo pipefail

archive=${1:?usage: docker/class-archive.sh ARCHIVE [PYTHON]}
python=${2:-python3}
spark_home=$("$python" -c 'import importlib.util as u, os
print(os.path.dirname(u.find_spec("pyspark").origin))')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# What a driver's and an executor's JVMs do for a job: Python tasks, a shuffle, results to the
# driver (in local mode, one JVM does both).
cat >"$work/job.py" <<'PY'
from operator import add

from pyspark import SparkContext

sc = SparkContext(appName="class-archive")
pairs = sc.parallelize(range(10_000), 4).map(lambda n: (n % 97, n))
assert len(pairs.reduceByKey(add, 4).collect()) == 97
sc.stop()
PY

# Through spark-submit, as PySpark launches a driver: the archive holds the launcher's
# classpath (a configuration directory that does not exist, then Spark's jars, slf4j's first),
# which docker/entrypoint.sh's executors repeat. No SPARK_CONF_DIR: drivers get their settings
# as a file (dataflow run --properties-file). On loopback: an image build's host name resolves
# to nothing. spark-submit waits for its JVM, which writes the archive as it exits.
rm -f "$archive"
env -u SPARK_CONF_DIR -u PYSPARK_SUBMIT_ARGS SPARK_HOME="$spark_home" PYSPARK_PYTHON="$python" \
  SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_HOSTNAME=localhost \
  SPARK_SUBMIT_OPTS="-XX:ArchiveClassesAtExit=$archive -Xlog:cds=off,cds+dynamic=off" \
  "$spark_home/bin/spark-submit" --master 'local[2]' --conf spark.ui.enabled=false \
  "$work/job.py" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
[[ -s $archive ]] || { cat "$work/log" >&2; echo "class-archive: no archive written" >&2; exit 1; }
