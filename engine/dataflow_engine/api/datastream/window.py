"""PyFlink's ``pyflink.datastream.window``: windows, assigners, triggers and evictors."""

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
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from dataflow_engine.runtime.windowing.windows import CountWindow, GlobalWindow, TimeWindow, Window

__all__ = ["ContinuousEventTimeTrigger", "CountEvictor", "CountTrigger", "CountWindow",
           "DynamicEventTimeSessionWindows", "DynamicProcessingTimeSessionWindows",
           "EventTimeSessionWindows", "EventTimeTrigger", "Evictor", "GlobalWindow",
           "GlobalWindows", "MergingWindowAssigner", "ProcessingTimeSessionWindows",
           "ProcessingTimeTrigger", "PurgingTrigger", "SlidingEventTimeWindows",
           "SlidingProcessingTimeWindows", "TimeEvictor", "TimeWindow", "Trigger",
           "TriggerResult", "TumblingEventTimeWindows", "TumblingProcessingTimeWindows",
           "Window", "WindowAssigner"]
