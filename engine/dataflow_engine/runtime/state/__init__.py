"""Flink keyed state on the heap: descriptors, TTL, state objects and the keyed backend."""
