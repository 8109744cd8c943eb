"""Where drivers run: pods on Spark-on-Kubernetes, or local processes on embedded Spark."""
