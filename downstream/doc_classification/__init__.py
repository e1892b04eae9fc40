"""The multi-label document-classification task kind (``--loader doc-classification``): abstracts to labels."""
