"""Biomedical benchmark fine-tuning: one folder per task kind (``ner``, ``relation``, ``qa``, ``yesno``), the
table of kinds (``kinds``), the settings, and what runs on any kind (``trial``, ``tuning``, ``predict``).

This package knows nothing of pre-training internals: a model reaches it as a checkpoint directory
(``save_pretrained`` + tokenizer files) loaded with ``AutoModelFor...``.
"""
