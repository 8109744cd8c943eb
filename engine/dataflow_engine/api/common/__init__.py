"""``pyflink.common`` for this engine: a PyFlink program imports these names from here."""

from dataflow_engine.api.common.time import Duration, Time
from dataflow_engine.api.common.typeinfo import TypeInformation, Types
from dataflow_engine.api.common.watermark_strategy import TimestampAssigner, WatermarkStrategy
from dataflow_engine.runtime.time.elements import Watermark

__all__ = ["Duration", "Time", "TimestampAssigner", "TypeInformation", "Types", "Watermark",
           "WatermarkStrategy"]
