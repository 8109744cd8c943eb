"""hack/kafka: a single-node Apache Kafka broker (KRaft, combined broker and controller) for the
tests and the demo, run from its Maven Central artifacts with the machine's Java."""
