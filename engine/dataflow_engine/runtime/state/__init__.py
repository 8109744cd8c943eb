"""Flink keyed state on the heap: descriptors, TTL, state objects, the keyed backend, key groups
and the timers kept per key group beside the state."""
