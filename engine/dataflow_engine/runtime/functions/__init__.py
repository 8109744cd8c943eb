"""User functions as the runtime calls them, and what they see of their task: Flink's
RuntimeContext and keyed state, key selectors, built-in aggregations.
"""
