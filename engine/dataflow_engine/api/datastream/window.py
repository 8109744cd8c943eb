"""PyFlink's ``pyflink.datastream.window``: windows, assigners, triggers and evictors."""

from abc import ABC, abstractmethod
from typing import Any

from dataflow_engine.api._unsupported import refused
from dataflow_engine.runtime.windowing.assigners import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from dataflow_engine.runtime.windowing.evictors import CountEvictor, Evictor, TimeEvictor
from dataflow_engine.runtime.windowing.triggers import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from dataflow_engine.runtime.windowing.windows import CountWindow, GlobalWindow, TimeWindow, Window


class SessionWindowTimeGapExtractor(ABC):
    """What ``with_dynamic_gap`` takes: the session gap each element allows after it."""

    @abstractmethod
    def extract(self, element: Any) -> int:
        """The gap after ``element``, in milliseconds."""


CountTumblingWindowAssigner = refused("pyflink.datastream.window.CountTumblingWindowAssigner")
CountSlidingWindowAssigner = refused("pyflink.datastream.window.CountSlidingWindowAssigner")
ContinuousProcessingTimeTrigger = refused(
    "pyflink.datastream.window.ContinuousProcessingTimeTrigger")
TimeWindowSerializer = refused("pyflink.datastream.window.TimeWindowSerializer")
CountWindowSerializer = refused("pyflink.datastream.window.CountWindowSerializer")
GlobalWindowSerializer = refused("pyflink.datastream.window.GlobalWindowSerializer")

__all__ = ["ContinuousEventTimeTrigger", "ContinuousProcessingTimeTrigger", "CountEvictor",
           "CountSlidingWindowAssigner", "CountTrigger", "CountTumblingWindowAssigner",
           "CountWindow", "CountWindowSerializer", "DynamicEventTimeSessionWindows",
           "DynamicProcessingTimeSessionWindows", "EventTimeSessionWindows", "EventTimeTrigger",
           "Evictor", "GlobalWindow", "GlobalWindowSerializer", "GlobalWindows",
           "MergingWindowAssigner", "NeverTrigger", "ProcessingTimeSessionWindows",
           "ProcessingTimeTrigger", "PurgingTrigger", "SessionWindowTimeGapExtractor",
           "SlidingEventTimeWindows", "SlidingProcessingTimeWindows", "TimeEvictor",
           "TimeWindow", "TimeWindowSerializer", "Trigger", "TriggerResult",
           "TumblingEventTimeWindows", "TumblingProcessingTimeWindows", "Window",
           "WindowAssigner"]
