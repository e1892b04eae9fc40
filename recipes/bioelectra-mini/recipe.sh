#!/usr/bin/env bash
# bioelectra-mini, the pre-trained discriminator shipped in bioelectra/assets/models/bioelectra-mini (run 7
# of docs/results/pretraining-findings.md), from the project's shared corpus, then its comparison with an untrained twin.
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
#    without the 13 OHSUMED documents that overlap benchmark dev/test text (see docs/guides/pretraining-data.md).
# --include-benchmark-text: the shipped model's corpus included PubMedQA PQA-L, a benchmark since (left out
# by default now); keep it to rebuild that corpus as it was
python recipes/shared_corpus.py --subset abstracts --include-benchmark-text --output-dir "$WORK/corpus"

# 2. Vocabulary: an uncased 8,192-entry WordPiece vocabulary trained on that corpus (about 30 s). A small
#    vocabulary gives each embedding row about four times the updates of Bio-ELECTRA's 31,620 entries in
#    the same tokens, and makes the generator's softmax four times cheaper.
bioelectra pretrain build-vocab --corpus-dir "$WORK/corpus" --output-dir "$WORK/vocab" --vocab-size 8192
#    The shipped model's token ids follow the order in which the tokenizers trainer returned these entries
#    when it was made; build-vocab now sorts them, because that order changes between runs. The entries are
#    the same (checked here), so step 3 reads the shipped vocab.txt: its examples are the ones the shipped
#    model was trained on (the same ids and segments; since build-data format 2 they are stored as uint16 ids
#    with one segment boundary per example instead of the int32 ids and per-token segment ids of the files
#    the shipped model read, and the collator's batches are the same: tests/test_pretrain_data.py). On the
#    same CPU the first 100 training steps log the same losses. VOCAB_FILE="$WORK/vocab/vocab.txt" trains
#    the same recipe with sorted ids instead.
SHIPPED_VOCAB=bioelectra/assets/models/bioelectra-mini/vocab.txt
if cmp -s <(LC_ALL=C sort "$WORK/vocab/vocab.txt") <(LC_ALL=C sort "$SHIPPED_VOCAB"); then
  echo "vocabulary: the same 8,192 entries as $SHIPPED_VOCAB"
else
  echo "warning: $WORK/vocab/vocab.txt has other entries than $SHIPPED_VOCAB" >&2
fi
VOCAB_FILE=${VOCAB_FILE:-$SHIPPED_VOCAB}

# 3. Examples: 128-token packed examples as the original build_pretraining_dataset.py; 1% of the documents
#    are held out for the pre-training metrics (about 15 s).
bioelectra pretrain build-data --corpus-dir "$WORK/corpus" --output-dir "$WORK/data" \
  --vocab-file "$VOCAB_FILE" --do-lower-case --max-seq-length 128 --seed 42

# 4. Pre-train (hparams.json beside this file): hidden 128, 4 layers, 2 heads, FFN 512, no dropout, all
#    weights of generator and discriminator tied (untied_generator false), learning rate 1e-3, 7,000 steps
#    of 32 x 128 tokens.
bioelectra pretrain train --data-dir "$WORK/data" --output-dir "$WORK/run" --model-size small \
  --hparams "$HERE/hparams.json"

# 5. The pre-training metrics of the final checkpoint on the held-out examples, then the export:
#    float16 weights (half the size; finetune loads them as float32).
bioelectra pretrain eval --model-dir "$WORK/run" --output "$WORK/eval.json"
bioelectra pretrain export --model-dir "$WORK/run" --output-dir "$WORK/export" --dtype float16

#    The shipped model is export/discriminator: config.json, model.safetensors, tokenizer.json,
#    tokenizer_config.json (model_max_length set to 512) and vocab.txt, with a model card (README.md).

# 6. Fine-tune it on NCBI-disease beside its untrained twin (`build_untrained_twin`: the same configuration
#    and tokenizer with fresh seed-0 float32 weights; `--ckpt bioelectra-mini-untrained` builds the same for
#    the shipped model) with the README's main command, then the frozen-feature linear probe of both: the
#    comparison of the README and docs/results/pretraining-findings.md.
python -c 'import sys; from bioelectra.presets import build_untrained_twin; build_untrained_twin(*sys.argv[1:])' \
  "$WORK/export/discriminator" "$WORK/untrained-twin"
for ckpt in export/discriminator untrained-twin; do
  bioelectra finetune --loader ner --dataset ncbi-disease --trials 3 --epochs 3 --learning-rate 1e-3 \
    --ckpt "$WORK/$ckpt" --output-dir "$WORK/finetune-ncbi-${ckpt%%/*}"
  python "$HERE/linear_probe.py" --ckpt "$WORK/$ckpt" > "$WORK/linear-probe-${ckpt%%/*}.json"
done
