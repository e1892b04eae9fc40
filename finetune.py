#!/usr/bin/env python
"""Fine-tune on a biomedical benchmark: ``python finetune.py --loader ner --dataset ncbi-disease --trials 3``.

Same command as ``bioelectra finetune``; see ``python finetune.py --help``.
"""

from bioelectra.cli import finetune_main

if __name__ == "__main__":
    finetune_main()
