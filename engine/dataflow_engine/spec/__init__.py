"""The DataflowJob spec: its model (the CRD is generated from it), the operator catalog, and
the value grammars a spec uses (quantities, Secret references, Spark settings)."""
