#!/usr/bin/env python
"""ELECTRA pre-training commands: ``python pretrain.py build-vocab|build-data|train|eval|export ...``.

Same commands as ``bioelectra pretrain ...``; see ``python pretrain.py --help``.
"""

from bioelectra.cli import pretrain_main

if __name__ == "__main__":
    pretrain_main()
