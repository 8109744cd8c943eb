"""Epoch snapshots and checkpoints of continuous jobs: what operators snapshot, how state is
redistributed by key group, where completed checkpoints are stored."""
