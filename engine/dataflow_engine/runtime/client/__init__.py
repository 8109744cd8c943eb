"""The driver's side of a run, as Flink's JobClient sees it: configuration, the run itself, the
status it publishes, the ``dataflow run`` command and the job's own Python environment.
"""
