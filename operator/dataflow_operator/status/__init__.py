"""A DataflowJob's status: its model, conditions, JobStatus moves, Events, and the recorder
that writes it to the API server within its byte budget."""
