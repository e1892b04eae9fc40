"""Biomedical benchmark fine-tuning: dataset registry, readers, metrics and repeated seeded trials.

This package knows nothing of pre-training internals: a model reaches it as a checkpoint directory
(``save_pretrained`` + tokenizer files) loaded with ``AutoModelFor...``.
"""
