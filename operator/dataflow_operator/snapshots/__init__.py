"""DataflowSnapshots: savepoints and checkpoints as objects of their own."""
