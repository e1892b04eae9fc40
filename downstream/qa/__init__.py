"""Extractive question answering: SQuAD-style readers, windowing and answer spans, the task kind, metrics and analysis."""
