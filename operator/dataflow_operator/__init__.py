"""The DataflowJob operator: compiles DataflowJobs, provisions Spark, reconciles status."""
