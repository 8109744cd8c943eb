"""Spec to plan: reading manifests (and the Python callables the CLI accepts as jobs),
validation, the job policy (what an author may ask for), and compilation through the four
graph layers."""
