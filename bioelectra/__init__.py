"""bioelectra: biomedical ELECTRA pre-training (replaced token detection) and fine-tuning.

The pre-training library lives here; benchmark fine-tuning lives in the sibling package
``downstream``. The two meet only through checkpoint directories written by ``save_pretrained``: the
library never imports ``downstream``. The commands (``bioelectra.cli``) are the top floor above both: the
one part of this folder that imports ``downstream``, imported by nothing but the entry scripts.
"""

__version__ = "0.1.0"
