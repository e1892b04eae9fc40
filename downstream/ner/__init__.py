"""Named-entity recognition: the reader of the benchmark files, the task kind, its metrics and analysis."""
