#!/usr/bin/env bash
# Writes a class-data-sharing archive (AppCDS, JDK 17's dynamic archive) of the Spark classes a
# short Spark job loads, for JVMs started with the same classpath, `$SPARK_HOME/jars/*` (the
# executors of docker/entrypoint.sh):
#
#   docker/class-archive.sh ARCHIVE [PYTHON]
#
# Such a JVM maps some 10,000 classes already parsed and verified instead of loading each from
# its jar: a Spark JVM's start costs about half the CPU (docs/image.md). The archive holds the
# jars' paths, sizes and times and the JVM's build, so it is made where it is used (the image's
# last stage); a JVM whose classpath or build differs ignores it (-Xshare:auto), silently with
# -Xlog:cds=off,cds+dynamic=off.
set -euo pipefail

archive=${1:?usage: docker/class-archive.sh ARCHIVE [PYTHON]}
python=${2:-python3}
spark_home=$("$python" -c 'import importlib.util as u, os
print(os.path.dirname(u.find_spec("pyspark").origin))')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# What an executor's JVM does for a job: Python tasks, a shuffle, results to the driver.
cat >"$work/job.py" <<'PY'
from operator import add

from pyspark import SparkContext

sc = SparkContext(appName="class-archive")
pairs = sc.parallelize(range(10_000), 4).map(lambda n: (n % 97, n))
assert len(pairs.reduceByKey(add, 4).collect()) == 97
sc.stop()
PY

# The JVM gets the executors' classpath exactly (the archive holds it: spark-submit's would
# differ), and the module options Spark's launcher gives every JVM of Spark's.
mapfile -t modules < <(env -u SPARK_CONF_DIR SPARK_HOME="$spark_home" SPARK_PRINT_LAUNCH_COMMAND=1 \
  "$spark_home/bin/spark-class" org.apache.spark.deploy.SparkSubmit --version 2>&1 |
  grep -m1 '^Spark Command:' | tr ' ' '\n' | grep -E '^(--add-|-XX:\+IgnoreUnrecognizedVMOptions$)')
((${#modules[@]})) || { echo "class-archive: no module options from Spark's launcher" >&2; exit 1; }
# On loopback: an image build's host name resolves to nothing.
env SPARK_HOME="$spark_home" PYSPARK_PYTHON="$python" SPARK_LOCAL_IP=127.0.0.1 \
  SPARK_LOCAL_HOSTNAME=localhost "${JAVA_HOME:+$JAVA_HOME/bin/}java" \
  -XX:ArchiveClassesAtExit="$archive" -Xlog:cds=off,cds+dynamic=off "${modules[@]}" \
  -cp "$spark_home/jars/*" org.apache.spark.deploy.SparkSubmit \
  --master 'local[2]' --conf spark.ui.enabled=false "$work/job.py" >"$work/log" 2>&1 ||
  { cat "$work/log" >&2; exit 1; }
[[ -s $archive ]] || { cat "$work/log" >&2; echo "class-archive: no archive written" >&2; exit 1; }
