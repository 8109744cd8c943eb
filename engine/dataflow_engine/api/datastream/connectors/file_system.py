"""PyFlink's ``pyflink.datastream.connectors.file_system``: the file source (the spec's
``text`` operator) and sink (its ``file`` operator); builders, formats and part-file policies
are refused until the operators have them."""

from __future__ import annotations

import os
from typing import Any

from dataflow_engine.api._unsupported import refused
from dataflow_engine.api.common.time import Duration
from dataflow_engine.api.datastream.connectors.base import Source
from dataflow_engine.api.sinks import FileSink


class FileSource(Source):
    """Flink's FileSource of text lines (``forRecordStreamFormat`` with a TextLineInputFormat)
    over files, directories or globs, with keyword arguments rather than a builder (the spec's
    ``text`` operator). ``monitor_interval`` is ``monitorContinuously``'s: the source looks for
    new files that often, reads each once and never ends; without it, it reads the files there
    when the job starts and ends."""

    def __init__(self, *paths: str | os.PathLike[str],
                 monitor_interval: Duration | None = None) -> None:
        if not paths:
            raise ValueError("FileSource needs at least one path")
        if monitor_interval is not None and monitor_interval.millis <= 0:
            raise ValueError(f"monitor_interval must be positive, not {monitor_interval}")
        self.paths = [os.fspath(path) for path in paths]
        self.monitor_interval = monitor_interval

    def spec_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"path": self.paths[0] if len(self.paths) == 1 else self.paths}
        if self.monitor_interval is not None:
            args["monitorInterval"] = f"{self.monitor_interval.millis}ms"
        return args


FileCompactor = refused("pyflink.datastream.connectors.file_system.FileCompactor")
FileCompactStrategy = refused("pyflink.datastream.connectors.file_system.FileCompactStrategy")
OutputFileConfig = refused("pyflink.datastream.connectors.file_system.OutputFileConfig")
FileSourceBuilder = refused("pyflink.datastream.connectors.file_system.FileSourceBuilder")
StreamingFileSink = refused("pyflink.datastream.connectors.file_system.StreamingFileSink")
StreamFormat = refused("pyflink.datastream.connectors.file_system.StreamFormat")
BulkFormat = refused("pyflink.datastream.connectors.file_system.BulkFormat")
FileEnumeratorProvider = refused(
    "pyflink.datastream.connectors.file_system.FileEnumeratorProvider")
FileSplitAssignerProvider = refused(
    "pyflink.datastream.connectors.file_system.FileSplitAssignerProvider")
RollingPolicy = refused("pyflink.datastream.connectors.file_system.RollingPolicy")
BucketAssigner = refused("pyflink.datastream.connectors.file_system.BucketAssigner")

__all__ = ["BucketAssigner", "BulkFormat", "FileCompactStrategy", "FileCompactor",
           "FileEnumeratorProvider", "FileSink", "FileSource", "FileSourceBuilder",
           "FileSplitAssignerProvider", "OutputFileConfig", "RollingPolicy", "StreamFormat",
           "StreamingFileSink"]
