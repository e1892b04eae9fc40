"""bioelectra: biomedical ELECTRA pre-training (replaced token detection) and fine-tuning.

The pre-training library lives here; benchmark fine-tuning lives in the sibling package
``downstream``. The two meet only through checkpoint directories written by ``save_pretrained``.
"""

__version__ = "0.1.0"
