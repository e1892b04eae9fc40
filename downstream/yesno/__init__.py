"""Yes/no question answering (PubMedQA, BioASQ yes/no): reader, the task kind, its metrics and analysis."""
