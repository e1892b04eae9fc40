"""The sentence-similarity task kind (``--loader similarity``): sentence pairs to a similarity score."""
