"""The driver's main, as Flink's JobMaster: a run of a compiled job on Spark (``run_job``,
:mod:`~dataflow_engine.runtime.jobmaster.runner`), its configuration and result, what its JVM
is launched with (``driver_launch``), a continuous job's epochs (``epochs``) or long-lived
tasks (``pipelined``), the progress display, the job's own Python environment
(``environment``), and the driver's REST endpoint (``rest_server``), which serves the
protocol's status document and takes its requests (:mod:`dataflow_engine.rest`). Checkpoints
and savepoints are the coordinator's (:mod:`dataflow_engine.runtime.checkpoint.coordinator`).
"""
