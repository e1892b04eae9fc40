"""The model card of bioelectra-small, drafted from a brought-back campaign.

``campaign.py report`` writes it beside ``report.md`` as ``model-card.md``. Read it through, then copy it to
``bioelectra/assets/models/bioelectra-small/README.md`` (``ship`` keeps a card that is already there). Every
figure comes from the brought-back files (the sections of ``report.md``, ``eval.json``, the export's config
and weights) or from the package (the published figures of ``downstream/data/literature.json``); the
prose around them says only what those figures show.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from campaign_common import REPO, num, read_json

NAME = "bioelectra-small"
#: ELECTRA-Small's pre-training compute (ELECTRA paper, Table 1: 1.4e18 FLOPs), the yardstick of Limitations.
ELECTRA_SMALL_FLOPS = 1.4e18
#: Final pre-training metrics shown, in order (``pretrain eval``'s names; all fractions).
FINAL_METRICS = (
    ("masked_lm_accuracy", "masked_lm_accuracy (generator)"),
    ("disc_auc", "disc_auc (discriminator, replaced vs original)"),
    ("disc_accuracy", "disc_accuracy"),
    ("disc_precision", "disc_precision of \"replaced\""),
    ("disc_recall", "disc_recall of \"replaced\""),
)


def report_sections(text: str) -> dict[str, str]:
    """``report.md``'s ``## `` sections, title -> body (without the title line, stripped)."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return {title: "\n".join(body).strip() for title, body in sections.items()}


def parameter_counts(weights: Path) -> tuple[int | None, int | None]:
    """(all parameters, the word-embedding matrix's) of a safetensors file, from the tensors' shapes only;
    (None, None) without the file."""
    if not weights.is_file():
        return None, None
    from safetensors import safe_open

    total, embeddings = 0, None
    with safe_open(str(weights), framework="pt") as f:
        for key in f.keys():
            count = math.prod(f.get_slice(key).get_shape())
            total += count
            if key.endswith("word_embeddings.weight"):
                embeddings = count
    return total, embeddings


def _ncbi_test_f1(finetune: dict) -> float | None:
    """bioelectra-small's NCBI-disease test F1 (percent) with finetune's defaults, if measured."""
    run = finetune.get("ncbi-small") or {}
    mean = (((run.get("summary") or {}).get("test") or {}).get("f1") or {}).get("mean")
    return None if mean is None else 100 * mean


def _run_table_figures(run: dict[str, str]) -> tuple[str, str, str, float | None]:
    """``(steps, batch, minutes of training, training FLOPs)`` from the rows of the report's "Pre-training run"
    table; for a continued run (``report --continues``), those of all the runs together. ``-`` where missing."""
    flops = next((float(v) for k, v in run.items() if k.startswith("training FLOPs") and v != "-"), None)
    match = re.match(r"([\d,]+) of .* planned, batch ([\d,]+)", run.get("steps", ""))  # the report's "steps" row
    steps, batch = match.groups() if match else ("-", "-")
    match = re.search(r"\(([\d.,]+) min\)", run.get("wall time of training", ""))
    minutes = f"{match.group(1)} minutes of training" if match else "-"
    # a continued run (report --continues): the card speaks of all the runs together
    in_all = next(((k, v) for k, v in run.items() if k.startswith("in all, the ")), None)
    if in_all is not None:
        runs = in_all[0].removeprefix("in all, the ").removesuffix(" runs")
        match = re.match(r"([\d,]+) steps", in_all[1])
        steps = f"{match.group(1) if match else '-'}"
        match = re.search(r"\(([\d.,]+) min\) of training", in_all[1])
        minutes = f"{match.group(1) if match else '-'} minutes of training in {runs} runs, each continuing the one before"
        match = re.search(r"([\d.e+-]+) FLOPs", in_all[1])
        flops = float(match.group(1)) if match else None
    return steps, batch, minutes, flops


def _use_limits_and_corpus(
    finetune: dict, sections: dict[str, str], *, flops: float | None, case: str, lower: bool | None
) -> list[str]:
    """The card's last sections: intended use, limitations (against the literature's NCBI-disease F1), corpus."""
    import sys

    sys.path.insert(0, str(REPO))
    from downstream.literature import load_literature

    published = load_literature().lookup("ncbi-disease", "f1").get("bio-electra")
    ncbi = _ncbi_test_f1(finetune)
    return ["## Intended use", "",
            "A starting point for biomedical token and sequence classification on small machines, offline, and a "
            "measured example of what a short ELECTRA pre-training buys over a randomly initialised encoder of the "
            "same shape. For the accuracy of the published models, convert a Bio-ELECTRA checkpoint "
            "(`bioelectra convert`) or pre-train longer with the same recipe.", "",
            "## Limitations", "",
            f"- Short pre-training: {num(flops, '.3g')} FLOPs (the Trainer's estimate)"
            + (f", about 1/{ELECTRA_SMALL_FLOPS / flops:,.0f} of the original ELECTRA-Small's 1.4e18 (ELECTRA paper, Table 1)"
               if flops else "") + ".",
            f"- NCBI-disease test F1 {num(ncbi, '.2f')} with `finetune`'s defaults"
            + (f", against {published.value:.2f} for {published.model_name} (its source and protocol: "
               f"`downstream/data/literature.json`, `{published.source}`)" if published else "")
            + ".",
            f"- {case.capitalize()}" + (": capitalisation, which carries information in gene and chemical names, is lost."
                                        if lower else "."),
            "- English biomedical text only (the sources below): no clinical notes, no other languages.",
            "- Not for clinical decisions.", "",
            "## " + ("Corpus and attribution" if "Corpus and attribution" in sections else "Corpus"), "",
            sections.get("Corpus and attribution", "-"), "",
            "No benchmark development or test text was pre-trained on: `recipes/shared_corpus.py` drops the documents "
            "the shared corpus flags as overlapping evaluation sets, and leaves out PubMedQA, a benchmark here. The "
            "vocabulary was trained on the same text. The model inherits the terms of its sources (the table's last "
            "column): research use; the NLM terms and conditions for MEDLINE / PubMed text; each licence as stated.", ""]  # fmt: skip


def model_card(results: Path, finetune: dict, report: str, *, shipped: Path | None = None) -> str:
    """The card as Markdown: front matter, what the model is and how to use it, its shape, its pre-training
    (run, final metrics, evaluations during the run), fine-tuning results, intended use, limitations,
    corpus and attribution. ``results``: the unpacked results tar; ``finetune``: ``finetune.json``, merged;
    ``report``: ``results_report``'s text of the same; ``shipped``: the shipped folder, for the float16
    weights' size. A figure that is not there is ``-``."""
    sections = report_sections(report)
    config = read_json(results / "export" / "discriminator" / "config.json", {}) or {}
    hp = read_json(results / "run-hparams.json", {}) or {}
    build = read_json(results / "build_info.json", {}) or {}
    evaluation = read_json(results / "eval.json", {}) or {}
    metrics = evaluation.get("metrics") or read_json(results / "eval_results.json", {}) or {}
    entropy = ((evaluation.get("attention_entropy") or {}).get("discriminator") or {}).get("attention_entropy")
    history = [line for line in sections.get("Pre-training run", "").splitlines() if line.startswith("| ")]
    run = {cells[0]: cells[1] for cells in (line.strip("| ").split(" | ", 1) for line in history) if len(cells) == 2}
    total, embeddings = parameter_counts(results / "export" / "discriminator" / "model.safetensors")
    weights = shipped / "model.safetensors" if shipped is not None else None
    size = f"{weights.stat().st_size / 1e6:.1f} MB" if weights is not None and weights.is_file() else "-"
    steps, batch, minutes, flops = _run_table_figures(run)
    corpus_bytes = ((read_json(results / "manifest.json", {}) or {}).get("corpus") or {}).get("bytes")
    megabytes = f"{corpus_bytes / 1e6:,.0f} MB" if corpus_bytes else "-"
    lower = build.get("do_lower_case")
    case = "uncased" if lower else "cased" if lower is not None else "-"
    twin = f"{NAME}-untrained"

    millions = f"{total / 1e6:.1f} M" if total else "-"
    lines = ["---", "language: en", "license: other", "library_name: transformers", "pipeline_tag: token-classification",
             "tags: [electra, biomedical, replaced-token-detection, bioelectra]", "---", "",
             f"<!-- Drafted by `recipes/bioelectra-small/campaign.py report` from {results.name}/; read it through before shipping. -->", "",
             f"# {NAME}", "",
             f"A small biomedical ELECTRA **discriminator** ({millions} parameters) pre-trained by this project with replaced "
             f"token detection on {megabytes} of biomedical text (the project's shared corpus, below), for {steps} steps of "
             f"batch {batch} on {run.get('device', '-')} ({minutes}). It ships inside the "
             f"`bioelectra` package, beside its untrained twin `{twin}` (the same shape and tokenizer, random weights), "
             "so that what pre-training buys can be measured with the same command.", "",
             "```bash", f"bioelectra finetune --loader ner --dataset ncbi-disease --trials 3 --ckpt {NAME}",
             f"# --ckpt {twin}: its untrained twin, the same command otherwise", "```", "",
             "```python", "from bioelectra.presets import shipped_model_dir",
             "from transformers import AutoModelForTokenClassification, AutoTokenizer", "",
             f'path = shipped_model_dir("{NAME}")          # a save_pretrained directory',
             "tokenizer = AutoTokenizer.from_pretrained(path)",
             'model = AutoModelForTokenClassification.from_pretrained(path, num_labels=3, dtype="float32")', "```", "",
             "## Model", "", "| | |", "|---|---|",
             "| architecture | `ElectraForPreTraining`: the discriminator of an ELECTRA generator + discriminator pair |",
             f"| shape | hidden {config.get('hidden_size', '-')}, {config.get('num_hidden_layers', '-')} layers, "
             f"{config.get('num_attention_heads', '-')} attention heads, FFN {num(config.get('intermediate_size'))}, "
             f"embeddings {config.get('embedding_size', '-')}, {config.get('hidden_act', '-')}, dropout "
             f"{config.get('hidden_dropout_prob', '-')} |",
             f"| parameters | {num(total)}, of which {num(embeddings)} are the token embeddings |",
             f"| generator (not shipped) | {hp.get('generator_hidden_size', '-')} of the discriminator's width, "
             f"{hp.get('generator_layers', '-')} of its layers, untied encoder {hp.get('untied_generator', '-')}, "
             f"untied embeddings {hp.get('untied_generator_embeddings', '-')} |",
             f"| vocabulary | {case} WordPiece, {num(config.get('vocab_size'))} entries, trained on the pre-training corpus "
             "by `bioelectra pretrain build-vocab` |",
             f"| sequence length | {build.get('max_seq_length', '-')} in pre-training; position embeddings for "
             f"{config.get('max_position_embeddings', '-')} |",
             f"| weights | float16 safetensors, {size}; `finetune` loads them as float32 |", "",
             "## Training", "",
             "Reproduce with the recipe, `recipes/bioelectra-small/campaign.py` (docs/guides/pretraining-recipe.md); "
             "hyper-parameters: `recipes/bioelectra-small/hparams.json`"
             + (f", continued from `{hp['init_from']}`" if hp.get("init_from") else "") + ".", "",
             f"Objective: ELECTRA's, generator masked-LM loss x {hp.get('gen_weight', '-')} + discriminator replaced-token-"
             f"detection loss x {hp.get('disc_weight', '-')} (ELECTRA paper), mask_prob {hp.get('mask_prob', '-')}, "
             f"generator samples at temperature {hp.get('temperature', '-')}.", "",
             sections.get("Pre-training run", "-"), "",
             "`bioelectra pretrain eval` of the final checkpoint on the held-out examples:", "",
             "| metric | value |", "|---|---:|"]  # fmt: skip
    lines += [f"| {label} | {num(metrics.get(key), '.3f')} |" for key, label in FINAL_METRICS]
    lines += [f"| normalised attention entropy (1.0 = uniform) | {num(entropy, '.3f')} |", "",
              "During the run:", "", sections.get("Evaluations during the run", "-"), "",
              "## Fine-tuning results", ""]  # fmt: skip
    for title in ("The learning rate of finetune's defaults", "Linear probe", "Fine-tuning"):
        if title in sections:
            lines += [sections[title], ""]
    lines += _use_limits_and_corpus(finetune, sections, flops=flops, case=case, lower=lower)
    return "\n".join(lines)
