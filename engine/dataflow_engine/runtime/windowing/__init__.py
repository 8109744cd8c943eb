"""Flink's window assigners, triggers and evictors, and the per-key merging window set."""
