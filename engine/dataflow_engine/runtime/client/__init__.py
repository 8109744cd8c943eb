"""The client, as Flink's CLI frontend: ``dataflow run`` (which starts a job master in this
process) and ``dataflow savepoint`` (which asks a running driver for one over its REST
endpoint)."""
