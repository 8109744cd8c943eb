"""PyFlink's ``pyflink.datastream.state``: state descriptors, state types and TTL."""

from dataflow_engine.runtime.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from dataflow_engine.runtime.state.keyed_state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)

__all__ = ["AggregatingState", "AggregatingStateDescriptor", "ListState", "ListStateDescriptor",
           "MapState", "MapStateDescriptor", "ReducingState", "ReducingStateDescriptor",
           "StateDescriptor", "StateTtlConfig", "ValueState", "ValueStateDescriptor"]
