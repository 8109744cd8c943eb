"""Builders of the Kubernetes objects a DataflowJob owns; plain dicts, no API calls."""
