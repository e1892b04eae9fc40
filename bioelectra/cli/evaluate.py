"""``bioelectra evaluate``: a saved fine-tuned model scored on a benchmark's dev and test sets, no training."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bioelectra.cli.common import (
    MaxEvalExamplesOption,
    _fail,
    _no_transformers_bars,
    _setup_logging,
    _UserError,
    app,
    console,
)
from bioelectra.cli.finetune import Loader, Precision


@app.command("evaluate")
def evaluate(
    model: Annotated[Path, typer.Option(help="A fine-tuned save_pretrained folder, e.g. a trial's model/ (labels in config.id2label).")],
    dataset: Annotated[str | None, typer.Option(help="Benchmark name from the registry.")] = None,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", "--data_dir", help="Local folder with the split files.")] = None,
    loader: Annotated[Loader | None, typer.Option(show_default=False, help="ner, re, qa, yesno, glue, similarity, doc-classification or pico [default: from the model's architecture; a yes/no, GLUE, similarity or document-classification model reads as re and a PICO model as ner, so pass --loader]")] = None,
    output_dir: Annotated[Path | None, typer.Option("--output-dir", "--output_dir", help="Where results.json, results.md and the test predictions go [default: runs/evaluate-<dataset>].")] = None,
    max_seq_length: Annotated[
        int | None,
        typer.Option("--max-seq-length", "--max_seq_length", min=8, show_default=False, help="Sub-tokens per model input (as in fine-tuning). [default: 128; qa 384, yesno 512]"),
    ] = None,
    eval_batch_size: Annotated[int, typer.Option("--eval-batch-size", "--eval_batch_size", min=1, help="Evaluation batch size per device.")] = 64,
    fold: Annotated[int | None, typer.Option(min=1, help="RE: cross-validation fold.")] = None,
    doc_stride: Annotated[int | None, typer.Option("--doc-stride", min=1, show_default=False, help="QA: as in fine-tuning (the model card's command has it). [default: 128]")] = None,
    max_query_length: Annotated[int | None, typer.Option("--max-query-length", min=1, show_default=False, help="QA: as in fine-tuning. [default: 64]")] = None,
    max_answer_length: Annotated[int | None, typer.Option("--max-answer-length", min=1, show_default=False, help="QA: longest answer in tokens. [default: 30]")] = None,
    n_best_size: Annotated[int | None, typer.Option("--n-best-size", min=1, show_default=False, help="QA: candidates per window. [default: 20]")] = None,
    null_score_threshold: Annotated[float | None, typer.Option("--null-score-threshold", show_default=False, help="QA, SQuAD 2.0 data. [default: 0]")] = None,
    max_eval_examples: MaxEvalExamplesOption = None,
    entity_type: Annotated[
        str | None,
        typer.Option("--entity-type", "--entity_type", show_default=False, help="NER: the entity type of the files' bare B / I tags, when it is not known from a registered dataset's name; a typed model is scored on bare tags of another type only when this names the model's type."),
    ] = None,
    precision: Annotated[Precision, typer.Option(help="auto: bf16 on GPUs that support it, fp32 otherwise.")] = Precision.auto,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Score a saved fine-tuned model on dev and test with the metrics, files and report keys of a trial."""
    _setup_logging(verbose)
    _no_transformers_bars()  # the weight loading bar between the log lines
    from downstream.errors import DownstreamError
    from downstream.options import settings_from_options
    from downstream.trial.evaluate import evaluate_model, model_kind

    if dataset is None and data_dir is None:
        _fail(_UserError("give --dataset NAME or --data-dir DIR"))
    out = output_dir or Path("runs") / f"evaluate-{dataset or data_dir.name}"  # type: ignore[union-attr]
    try:
        kind = loader.value if loader is not None else model_kind(model)
        settings = settings_from_options(
            kind,
            given={
                "max_seq_length": max_seq_length, "doc_stride": doc_stride, "max_query_length": max_query_length,
                "max_answer_length": max_answer_length, "n_best_size": n_best_size,
                "null_score_threshold": null_score_threshold,
            },
            fixed={
                "checkpoint_name": str(model), "output_dir": out, "dataset": dataset, "data_dir": data_dir,
                "per_device_eval_batch_size": eval_batch_size, "fold": fold, "precision": precision.value,
                "max_eval_examples": max_eval_examples, "entity_type": entity_type,
            },
            checkpoint=lambda: str(model),
        )  # fmt: skip
        report = evaluate_model(settings)
    except (DownstreamError, FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    from downstream.trial.evaluate import evaluation_line

    for split in ("dev", "test"):
        print(f"{split}: {evaluation_line(report, split)}")
    console.print(f"[green]results:[/] {out / 'results.json'}  {out / 'results.md'}")
