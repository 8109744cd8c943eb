"""The job autoscaler: DS2's parallelism per JobVertex, and when a decision is made and applied."""
