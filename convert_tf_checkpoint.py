#!/usr/bin/env python
"""Convert an original TensorFlow ELECTRA / Bio-ELECTRA checkpoint to Hugging Face checkpoints.

Same command as ``bioelectra convert``; see ``python convert_tf_checkpoint.py --help``.
"""

from bioelectra.cli import convert_main

if __name__ == "__main__":
    convert_main()
