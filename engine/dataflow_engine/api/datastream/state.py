"""PyFlink's ``pyflink.datastream.state``: state descriptors, state types and TTL."""

from dataflow_engine.api._unsupported import refused
from dataflow_engine.runtime.state.broadcast_state import BroadcastState, ReadOnlyBroadcastState
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

OperatorStateStore = refused("pyflink.datastream.state.OperatorStateStore")

__all__ = ["AggregatingState", "AggregatingStateDescriptor", "BroadcastState", "ListState",
           "ListStateDescriptor", "MapState", "MapStateDescriptor", "OperatorStateStore",
           "ReadOnlyBroadcastState", "ReducingState", "ReducingStateDescriptor",
           "StateDescriptor", "StateTtlConfig", "ValueState", "ValueStateDescriptor"]
