"""Observation: what a driver reports (its phase, its runner's status document, checkpoints and
savepoints), folded into the job's status. Pure functions; nothing here acts on a driver."""
