"""hack/architecture's logic: the package import graph, its layers, and docs/architecture.md."""
