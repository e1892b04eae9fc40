#!/usr/bin/env python
"""The original ELECTRA fine-tuning command line, as written in the original's and Bio-ELECTRA's docs:

    python run_finetuning.py --data-dir DATA_DIR --model-name electra-small \\
        --hparams '{"model_size": "small", "task_names": ["ncbi-disease"], "num_trials": 10, ...}'

Same command as ``bioelectra run-finetuning``; see ``python run_finetuning.py --help``.
"""

from bioelectra.cli import run_finetuning_main

if __name__ == "__main__":
    run_finetuning_main()
