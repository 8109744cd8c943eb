"""Stream operators and bounded sources: what each StreamNode does to records."""
