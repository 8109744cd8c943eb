"""PyFlink's ``ExecutionConfig``: the job-wide settings the spec has beside the
environment's own."""

from __future__ import annotations

from dataflow_engine.spec.model import DataflowJobSpec, duration_millis

_DEFAULT_WATERMARK_INTERVAL: int = duration_millis(
    DataflowJobSpec.model_fields["auto_watermark_interval"].default)


class ExecutionConfig:
    """The part of Flink's ExecutionConfig the spec has: object reuse."""

    def __init__(self) -> None:
        self._object_reuse = False
        self._auto_watermark_interval: int | None = None

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        """Milliseconds between periodic watermarks in STREAMING mode (Flink's default: 200;
        0: only a bounded input's final watermark)."""
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 0:
            raise ValueError(f"the watermark interval must be milliseconds >= 0, not "
                             f"{interval!r}")
        self._auto_watermark_interval = interval
        return self

    def get_auto_watermark_interval(self) -> int:
        interval = self._auto_watermark_interval
        return _DEFAULT_WATERMARK_INTERVAL if interval is None else interval

    def enable_object_reuse(self) -> ExecutionConfig:
        """Chained operators pass records without copying: faster, if functions never mutate
        their inputs."""
        self._object_reuse = True
        return self

    def disable_object_reuse(self) -> ExecutionConfig:
        self._object_reuse = False
        return self

    def is_object_reuse_enabled(self) -> bool:
        return self._object_reuse
