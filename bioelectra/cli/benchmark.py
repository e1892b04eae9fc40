"""``bioelectra benchmark``: a checkpoint through a suite of registered benchmarks, one table beside the
published figures."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from bioelectra.checkpoints import DEFAULT_CKPT, resolve_checkpoint
from bioelectra.cli.common import (
    MaxEvalExamplesOption,
    MaxStepsOption,
    MaxTrainExamplesOption,
    SeedOption,
    _fail,
    _setup_logging,
    app,
    console,
)
from bioelectra.cli.finetune import Precision


@app.command("benchmark")
def benchmark(
    ckpt: Annotated[str, typer.Option(help="Checkpoint, as finetune's --ckpt (a shipped name, a folder, a hub id, a TF checkpoint, a size preset).")] = DEFAULT_CKPT,
    suite: Annotated[str, typer.Option(help="ner, re, qa (extractive and yes/no), pico, all, blurb (BLURB's 13 datasets and the BLURB score), or dataset names separated by commas.")] = "ner",
    trials: Annotated[int, typer.Option(min=1, help="Seeded trials per dataset (GAD: per fold).")] = 3,
    protocol: Annotated[str, typer.Option(help="default (this project's finetune defaults), bio-electra, blurb or electra; stated in the report.")] = "default",
    data_root: Annotated[
        Path | None,
        typer.Option("--data-root", help="A folder laid out like ../shared/data (ner/<name>/, re/<name>/, qa/covid-qa/, qa/bioasq-blurb/, pico/ebm-pico/, corpus/pubmedqa-pqal/) for datasets neither shipped nor cached."),
    ] = None,
    output_dir: Annotated[Path | None, typer.Option("--output-dir", help="[default: runs/benchmark-<ckpt>-<suite>-<protocol>]")] = None,
    epochs: Annotated[float | None, typer.Option(min=0.0, show_default=False, help="Override the protocol's epochs (small runs).")] = None,
    learning_rate: Annotated[float | None, typer.Option("--learning-rate", min=0.0, show_default=False, help="Override the protocol's learning rate.")] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", min=1, show_default=False, help="Override the protocol's batch size.")] = None,
    max_seq_length: Annotated[int | None, typer.Option("--max-seq-length", min=8, show_default=False, help="Override the protocol's sequence length.")] = None,
    max_steps: MaxStepsOption = -1,
    max_train_examples: MaxTrainExamplesOption = None,
    max_eval_examples: MaxEvalExamplesOption = None,
    hp_search: Annotated[int | None, typer.Option("--hp-search", min=1, show_default=False, help="Per dataset, first search N settings on its development split (as finetune --hp-search).")] = None,
    report_to: Annotated[str, typer.Option("--report-to", help="none, tensorboard, all, ... (as finetune's).")] = "none",
    seed: SeedOption = 42,
    precision: Annotated[Precision, typer.Option(help="auto: bf16 on GPUs that support it, fp32 otherwise.")] = Precision.auto,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Fine-tune a checkpoint on every present dataset of a suite and write benchmark.md / .json / plots/
    with the published figures (BioBERT, PubMedBERT, Bio-ELECTRA ...) beside ours."""
    _setup_logging(verbose)
    from transformers.utils import logging as hf_logging

    from bioelectra.checkpoints import default_learning_rate
    from downstream.benchmark import check_benchmark_options, format_benchmark_markdown, run_benchmark
    from downstream.errors import DownstreamError
    from downstream.settings import FinetuneSettings

    hf_logging.disable_progress_bar()
    out = output_dir or Path("runs") / f"benchmark-{Path(ckpt).name}-{suite.replace(',', '+')}-{protocol}"
    try:
        check_benchmark_options(suite, None if protocol == "default" else protocol, data_root)
        given = {
            k: v
            for k, v in {
                "num_train_epochs": epochs, "learning_rate": learning_rate, "per_device_train_batch_size": batch_size,
                "max_seq_length": max_seq_length,
            }.items()
            if v is not None
        }  # fmt: skip
        base = FinetuneSettings(
            task="ner", checkpoint=ckpt, checkpoint_name=ckpt, output_dir=out, num_trials=trials,
            seed=seed, precision=precision.value, max_train_examples=max_train_examples, report_to=report_to,
            learning_rate=default_learning_rate(ckpt), max_steps=max_steps, max_eval_examples=max_eval_examples,
        )  # fmt: skip  (every value checked before a preset checkpoint is built in the output folder)
        base = dataclasses.replace(base, checkpoint=resolve_checkpoint(ckpt, out))
        report = run_benchmark(
            base, suite=suite, data_root=data_root, protocol=None if protocol == "default" else protocol, given=given,
            output_dir=out, hp_search=hp_search,
        )  # fmt: skip
    except (DownstreamError, FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(format_benchmark_markdown(report))
    console.print(f"[green]benchmark:[/] {out / 'benchmark.md'}  {out / 'benchmark.json'}  {out / 'plots' / 'benchmark.png'}")
    if report["failed"]:
        _fail(DownstreamError("failed: " + "; ".join(f"{n}: {why}" for n, why in report["failed"].items())))
