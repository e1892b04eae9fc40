#!/usr/bin/env bash
# The CPU pre-training run 5 of docs/bioelectra-mini.md (bioelectra-mini; not shipped: see that page), from
# the project's shared corpus, then its comparison with an untrained twin.
#
# Run from the repository root with the package's environment active (`make venv`, then
# `. .venv/bin/activate`) and ../shared beside the checkout. About 80 minutes on a 2-core CPU, almost all
# of it in `pretrain train` (a GPU is used when present). Every step can be re-run; `train` resumes from
# its last checkpoint.
#
#   WORK=work/bioelectra-mini bash recipes/bioelectra-mini/recipe.sh
set -euo pipefail
export HF_HUB_OFFLINE=1
WORK=${WORK:-work/bioelectra-mini}
HERE=$(dirname "$0")

# 1. Corpus: the PubMed/MEDLINE abstract sources of ../shared/data/corpus (no full-text articles),
#    without the 13 OHSUMED documents that overlap benchmark dev/test text (see docs/pretraining-data.md).
python recipes/shared_corpus.py --subset abstracts --output-dir "$WORK/corpus"

# 2. Vocabulary: Bio-ELECTRA's 31,620-entry PubMed WordPiece vocabulary (shipped in the package), so no
#    build-vocab step; it is cased, hence --no-lower-case (as Bio-ELECTRA). Pack 128-token examples as the
#    original build_pretraining_dataset.py does; 1% of the documents are held out for the pre-training
#    metrics.
bioelectra pretrain build-data --corpus-dir "$WORK/corpus" --output-dir "$WORK/data" \
  --vocab-file bioelectra/assets/vocab/bio-electra-pmc2017/vocab.txt --no-lower-case --max-seq-length 128 --seed 42

# 3. Pre-train: ELECTRA-Small with 4 discriminator layers and no dropout (hparams.json beside this file).
bioelectra pretrain train --data-dir "$WORK/data" --output-dir "$WORK/run" --model-size small \
  --hparams "$HERE/hparams.json"

# 4. The pre-training metrics of the final checkpoint on the held-out examples, then the export:
#    float16 weights (half the size; finetune loads them as float32).
bioelectra pretrain eval --model-dir "$WORK/run" --output "$WORK/eval.json"
bioelectra pretrain export --model-dir "$WORK/run" --output-dir "$WORK/export" --dtype float16

# 5. Fine-tune it on NCBI-disease beside its untrained twin (the same configuration and tokenizer with
#    fresh seed-0 float32 weights) with the README's main command: the comparison of docs/bioelectra-mini.md.
python - "$WORK/export/discriminator" "$WORK/untrained-twin" <<'EOF'
import sys

import torch
from transformers import AutoTokenizer, ElectraConfig, ElectraForPreTraining

source, target = sys.argv[1], sys.argv[2]
config = ElectraConfig.from_pretrained(source)
config.dtype = "float32"
torch.manual_seed(0)
ElectraForPreTraining(config).float().save_pretrained(target)
AutoTokenizer.from_pretrained(source).save_pretrained(target)
EOF
for ckpt in export/discriminator untrained-twin; do
  bioelectra finetune --loader ner --dataset ncbi-disease --trials 3 --epochs 1 --learning-rate 3e-4 \
    --ckpt "$WORK/$ckpt" --output-dir "$WORK/finetune-ncbi-${ckpt%%/*}"
done
