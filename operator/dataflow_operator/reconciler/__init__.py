"""Reconciliation: what to do about a job (deploy, upgrade, suspend, resume, restart, savepoint,
clean up) as pure functions of its spec, status and observation; the controller carries the
resulting actions out through a backend."""
