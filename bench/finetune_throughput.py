#!/usr/bin/env python
"""Fine-tuning throughput and memory: our NER pipeline beside the plain Trainer recipe, in one run.

Both fine-tune the same ELECTRA-small-shaped model (randomly initialised from the ``electra-small`` preset,
Bio-ELECTRA vocabulary) on NCBI-disease at batch 32, for the same number of epochs, each in its own
subprocess so that peak RSS is measured separately. Prints one JSON object:

- ``train_samples_per_second``: training sentences (ours: windows, ~1.0005 per sentence) per second, as
  the Trainer reports it;
- ``eval_samples_per_second``: development sentences per second of ``trainer.evaluate`` (prediction plus
  metrics);
- ``peak_rss_mb``: peak resident memory of the process (``ru_maxrss``), model, data and Trainer included;
- ``dev_f1``: entity-level F1 on the development set (ours: every word of the file; plain: the words that
  survive its truncation to ``max_seq_length``).

The plain recipe is the transformers token-classification example reduced to its essentials: a
``datasets`` map that tokenises with truncation and aligns labels to first sub-tokens, dynamic padding
(``DataCollatorForTokenClassification``), the Trainer's default random sampler, full logits returned to
``compute_metrics``.

Usage: ``python bench/finetune_throughput.py [--epochs 1] [--max-train-examples N] [--data-dir DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from machine import processor_name  # noqa: E402


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _common(args):
    from bioelectra.presets import build_preset_checkpoint
    from downstream.registry import find_split_files, locate_dataset

    files = find_split_files(Path(args.data_dir)) if args.data_dir else locate_dataset("ncbi-disease")
    checkpoint = build_preset_checkpoint("electra-small", Path(args.workdir) / "init-electra-small")
    return files, str(checkpoint)


def run_ours(args) -> dict:
    from downstream.checkpoints import load_tokenizer
    from downstream.ner.task import NerTask
    from downstream.settings import FinetuneSettings
    from downstream.trial.trainer import build_trainer

    files, checkpoint = _common(args)
    settings = FinetuneSettings(
        task="ner", checkpoint=checkpoint, output_dir=Path(args.workdir) / "ours", num_train_epochs=args.epochs,
        learning_rate=args.learning_rate, per_device_train_batch_size=32, per_device_eval_batch_size=64,
        max_seq_length=args.max_seq_length, max_train_examples=args.max_train_examples,
        micro_batch_tokens=args.micro_batch_tokens,
    )
    started = time.perf_counter()
    task = NerTask(files, max_train_examples=args.max_train_examples)
    tokenizer = load_tokenizer(checkpoint)
    task.encode(tokenizer, max_seq_length=args.max_seq_length)
    prepare_seconds = time.perf_counter() - started
    trainer, evaluator = build_trainer(settings, task, tokenizer, seed=42, output_dir=Path(args.workdir) / "ours")
    trainer.args.eval_strategy = "no"
    trainer.args.save_strategy = "no"
    trainer.args.load_best_model_at_end = False
    train = trainer.train().metrics
    started = time.perf_counter()
    metrics = trainer.evaluate()
    eval_seconds = time.perf_counter() - started
    return {
        "train_samples_per_second": train["train_samples_per_second"],
        "train_seconds": train["train_runtime"],
        "eval_samples_per_second": len(task.splits["dev"].sentences) / eval_seconds,
        "prepare_seconds": prepare_seconds,
        "dev_f1": metrics["eval_f1"],
        "dev_words_evaluated": metrics["eval_num_words"],
        "train_examples": len(task.dataset("train")),
        "micro_batch_tokens": trainer.micro_batch_tokens,
        "peak_rss_mb": _peak_rss_mb(),
    }


def run_plain(args) -> dict:
    import numpy as np
    from datasets import Dataset
    from seqeval.metrics import f1_score
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    from downstream.ner.data import build_label_list, read_ner_file

    files, checkpoint = _common(args)
    started = time.perf_counter()
    splits = {name: read_ner_file(path) for name, path in files.items()}
    if args.max_train_examples:
        splits["train"].sentences = splits["train"].sentences[: args.max_train_examples]
    labels = build_label_list(splits.values())
    label2id = {label: i for i, label in enumerate(labels)}
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)

    def to_dataset(split):
        return Dataset.from_dict({"tokens": [list(s.words) for s in split.sentences],
                                  "ner_tags": [[label2id[t] for t in s.tags] for s in split.sentences]})

    def tokenize_and_align(batch):
        enc = tokenizer(batch["tokens"], is_split_into_words=True, truncation=True, max_length=args.max_seq_length)
        enc["labels"] = []
        for i, tags in enumerate(batch["ner_tags"]):
            previous, row = None, []
            for word_id in enc.word_ids(i):
                row.append(-100 if word_id is None or word_id == previous else tags[word_id])
                previous = word_id
            enc["labels"].append(row)
        return enc

    train = to_dataset(splits["train"]).map(tokenize_and_align, batched=True, remove_columns=["tokens", "ner_tags"])
    dev = to_dataset(splits["dev"]).map(tokenize_and_align, batched=True, remove_columns=["tokens", "ner_tags"])
    prepare_seconds = time.perf_counter() - started

    def compute_metrics(prediction):
        predicted = np.argmax(prediction.predictions, axis=-1)
        gold_tags, pred_tags = [], []
        for p_row, l_row in zip(predicted, prediction.label_ids, strict=True):
            keep = l_row != -100
            gold_tags.append([labels[i] for i in l_row[keep]])
            pred_tags.append([labels[i] for i in p_row[keep]])
        return {"f1": f1_score(gold_tags, pred_tags), "words": sum(len(g) for g in gold_tags)}

    set_seed(42)
    model = AutoModelForTokenClassification.from_pretrained(checkpoint, num_labels=len(labels))
    model.accepts_loss_kwargs = False
    targs = TrainingArguments(
        output_dir=str(Path(args.workdir) / "plain"), num_train_epochs=args.epochs, learning_rate=args.learning_rate,
        per_device_train_batch_size=32, per_device_eval_batch_size=64, warmup_steps=0.1, weight_decay=0.01,
        eval_strategy="no", save_strategy="no", report_to="none", use_cpu=True, seed=42, logging_steps=50,
    )
    trainer = Trainer(model=model, args=targs, train_dataset=train, eval_dataset=dev,
                      data_collator=DataCollatorForTokenClassification(tokenizer), processing_class=tokenizer,
                      compute_metrics=compute_metrics)
    train_metrics = trainer.train().metrics
    started = time.perf_counter()
    metrics = trainer.evaluate()
    eval_seconds = time.perf_counter() - started
    return {
        "train_samples_per_second": train_metrics["train_samples_per_second"],
        "train_seconds": train_metrics["train_runtime"],
        "eval_samples_per_second": len(splits["dev"].sentences) / eval_seconds,
        "prepare_seconds": prepare_seconds,
        "dev_f1": metrics["eval_f1"],
        "dev_words_evaluated": metrics["eval_words"],
        "train_examples": len(train),
        "peak_rss_mb": _peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--max-train-examples", type=int, default=None)
    parser.add_argument("--data-dir", default=None, help="NCBI-disease folder (default: the shipped copy)")
    parser.add_argument(
        "--micro-batch-tokens", type=int, default=None,
        help="ours: token budget per forward pass (default: the CPU default; 0: never split)",
    )
    parser.add_argument("--skip-plain", action="store_true", help="run ours only")
    parser.add_argument("--variant", choices=["ours", "plain"], default=None, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.variant:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        result = run_ours(args) if args.variant == "ours" else run_plain(args)
        print("RESULT " + json.dumps(result))
        return

    import torch

    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        for variant in ("ours",) if args.skip_plain else ("ours", "plain"):
            cmd = [sys.executable, __file__, "--variant", variant, "--workdir", workdir, "--epochs", str(args.epochs),
                   "--learning-rate", str(args.learning_rate), "--max-seq-length", str(args.max_seq_length)]
            if args.micro_batch_tokens is not None:
                cmd += ["--micro-batch-tokens", str(args.micro_batch_tokens)]
            if args.max_train_examples:
                cmd += ["--max-train-examples", str(args.max_train_examples)]
            if args.data_dir:
                cmd += ["--data-dir", args.data_dir]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
            if proc.returncode != 0 or not lines:
                sys.stderr.write(proc.stderr[-4000:])
                raise SystemExit(f"{variant} failed with exit code {proc.returncode}")
            results[variant] = json.loads(lines[-1][len("RESULT "):])
    ours, plain = results["ours"], results.get("plain")
    report = {
        "benchmark": "finetune_throughput",
        "model": "electra-small preset (H=256, L=12, E=128; Bio-ELECTRA vocab 31,620), random init",
        "dataset": "ncbi-disease", "batch_size": 32, "epochs": args.epochs, "max_seq_length": args.max_seq_length,
        "ours": ours, "plain_trainer": plain,
        "train_speedup": ours["train_samples_per_second"] / plain["train_samples_per_second"] if plain else None,
        "eval_speedup": ours["eval_samples_per_second"] / plain["eval_samples_per_second"] if plain else None,
        "machine": {"platform": platform.platform(), "processor": processor_name(), "cpus": os.cpu_count(),
                    "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                    "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
