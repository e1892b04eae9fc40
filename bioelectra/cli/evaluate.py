"""``bioelectra evaluate``: a saved fine-tuned model scored on a benchmark's dev and test sets, no training."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bioelectra.cli.common import _fail, _setup_logging, _UserError, app, console
from bioelectra.cli.finetune import Loader, Precision


@app.command("evaluate")
def evaluate(
    model: Annotated[Path, typer.Option(help="A fine-tuned save_pretrained folder, e.g. a trial's model/ (labels in config.id2label).")],
    dataset: Annotated[str | None, typer.Option(help="Benchmark name from the registry.")] = None,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", "--data_dir", help="Local folder with the split files.")] = None,
    loader: Annotated[Loader | None, typer.Option(show_default=False, help="ner or re [default: from the model's architecture]")] = None,
    output_dir: Annotated[Path | None, typer.Option("--output-dir", "--output_dir", help="Where results.json, results.md and the test predictions go [default: runs/evaluate-<dataset>].")] = None,
    max_seq_length: Annotated[int, typer.Option("--max-seq-length", "--max_seq_length", min=8, help="Sub-tokens per model input (as in fine-tuning).")] = 128,
    eval_batch_size: Annotated[int, typer.Option("--eval-batch-size", "--eval_batch_size", min=1, help="Evaluation batch size per device.")] = 64,
    fold: Annotated[int | None, typer.Option(min=1, help="RE: cross-validation fold.")] = None,
    precision: Annotated[Precision, typer.Option(help="auto: bf16 on GPUs that support it, fp32 otherwise.")] = Precision.auto,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Score a saved fine-tuned model on dev and test with the metrics, files and report keys of a trial."""
    _setup_logging(verbose)
    from downstream.errors import DownstreamError
    from downstream.evaluate import evaluate_model, model_kind
    from downstream.settings import FinetuneSettings

    if dataset is None and data_dir is None:
        _fail(_UserError("give --dataset NAME or --data-dir DIR"))
    out = output_dir or Path("runs") / f"evaluate-{dataset or data_dir.name}"  # type: ignore[union-attr]
    try:
        kind = loader.value if loader is not None else model_kind(model)
        settings = FinetuneSettings(
            task=kind, checkpoint=str(model), checkpoint_name=str(model), output_dir=out, dataset=dataset,
            data_dir=data_dir, max_seq_length=max_seq_length, per_device_eval_batch_size=eval_batch_size,
            fold=fold, precision=precision.value,
        )  # fmt: skip
        report = evaluate_model(settings)
    except (DownstreamError, FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    for split in ("dev", "test"):
        m = report[split]
        print(f"{split}: precision {100 * m['precision']:.2f}  recall {100 * m['recall']:.2f}  F1 {100 * m['f1']:.2f}")
    console.print(f"[green]results:[/] {out / 'results.json'}  {out / 'results.md'}")
