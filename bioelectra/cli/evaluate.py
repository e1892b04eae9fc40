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
    predicting_progress,
)
from bioelectra.cli.finetune import Loader, Precision


@app.command("evaluate")
def evaluate(
    model: Annotated[Path, typer.Option(help="A fine-tuned save_pretrained folder, e.g. a trial's model/ (labels in config.id2label).")],
    dataset: Annotated[str | None, typer.Option(help="Benchmark name from the registry.")] = None,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", "--data_dir", help="Local folder with the split files.")] = None,
    loader: Annotated[Loader | None, typer.Option(show_default=False, help="ner, re, qa, yesno, glue, similarity, doc-classification, pico, or linking with --linker [default: from the model's architecture; a yes/no, GLUE, similarity or document-classification model reads as re and a PICO model as ner, so pass --loader]")] = None,
    output_dir: Annotated[Path | None, typer.Option("--output-dir", "--output_dir", help="Where results.json, results.md and the test predictions go [default: runs/evaluate-<dataset>].")] = None,
    max_seq_length: Annotated[
        int | None,
        typer.Option("--max-seq-length", "--max_seq_length", min=8, show_default=False, help="Sub-tokens per model input (as in fine-tuning). [default: 128; qa 384, yesno 512; linking end to end 512, as predict]"),
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
    linker: Annotated[Path | None, typer.Option(show_default=False, help="--loader linking: a saved entity linker (a linking trial's linker/ folder). The NER --model finds the entities of the test abstracts of --dataset (ncbi-disease, bc5cdr-disease, bc5cdr-chemical), the linker links those of its type, and each abstract's concept ids are scored against the gold ones (document-level precision, recall, F1, as BioCreative V CDR's DNER task) beside published figures; --output-dir defaults to runs/linking-end-to-end-<dataset>.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Score a saved fine-tuned model on dev and test with the metrics, files and report keys of a trial; with
    --loader linking --linker DIR, a NER model and a linker end to end on a linking benchmark's test abstracts."""
    _setup_logging(verbose)
    _no_transformers_bars()  # the weight loading bar between the log lines
    from downstream.errors import DownstreamError
    from downstream.options import settings_from_options
    from downstream.trial.evaluate import evaluate_model, model_kind

    if linker is not None or loader == Loader.linking:
        unread = {"fold": fold, "doc_stride": doc_stride, "max_query_length": max_query_length,
                  "max_answer_length": max_answer_length, "n_best_size": n_best_size,
                  "null_score_threshold": null_score_threshold, "entity_type": entity_type,
                  "precision": None if precision == Precision.auto else precision}  # fmt: skip
        _linking_end_to_end(model=model, linker=linker, loader=loader, dataset=dataset, data_dir=data_dir, output_dir=output_dir,
                            max_eval_examples=max_eval_examples, max_seq_length=max_seq_length, batch_size=eval_batch_size,
                            unread=unread)  # fmt: skip
        return
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


def _linking_end_to_end(*, model: Path, linker: Path | None, loader: Loader | None, dataset: str | None, data_dir: Path | None,
                        output_dir: Path | None, max_eval_examples: int | None, max_seq_length: int | None, batch_size: int,
                        unread: dict) -> None:  # fmt: skip
    """``evaluate --loader linking --linker DIR``: NER, linking and the document-level score
    (:func:`downstream.linking.end_to_end.evaluate_end_to_end`); ``unread``: the options it does not read, by
    name, ``None`` where not given."""

    from downstream.errors import DownstreamError
    from downstream.linking.end_to_end import default_output_dir, evaluate_end_to_end

    if loader not in (None, Loader.linking):
        _fail(_UserError(f"--linker is for --loader linking (a NER model and a linker scored end to end, per abstract); "
                         f"--loader {loader.value} takes no linker"))  # fmt: skip
    if linker is None:
        _fail(_UserError("--loader linking: evaluate scores a NER model and a linker end to end; give --model NER_MODEL_DIR "
                         "(finetune --loader ner) and --linker LINKER_DIR (a linking trial's linker/ folder, finetune "
                         "--loader linking) with --dataset ncbi-disease|bc5cdr-disease|bc5cdr-chemical; finetune --loader "
                         "linking itself scores a linker on gold mentions"))  # fmt: skip
    given = [name for name, value in unread.items() if value is not None]
    if given:
        names = ", ".join("--" + name.replace("_", "-") for name in given)
        _fail(_UserError(f"{names}: not read by the linking end-to-end evaluation (--linker); leave them out"))
    if dataset is None:
        _fail(_UserError("--linker: give --dataset ncbi-disease|bc5cdr-disease|bc5cdr-chemical (and --data-dir DIR with its files)"))
    out = output_dir or default_output_dir(dataset.lower())
    progress, task = predicting_progress("abstracts")
    try:
        with progress:
            results = evaluate_end_to_end(
                model, linker, dataset, data_dir=data_dir, output_dir=out, max_eval_examples=max_eval_examples,
                max_seq_length=max_seq_length or 512, batch_size=batch_size, progress=lambda n: progress.advance(task, n),
            )  # fmt: skip
    except (DownstreamError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(f"test: precision {100 * results['precision']:.2f}, recall {100 * results['recall']:.2f}, "
          f"F1 {100 * results['f1']:.2f} (document level, {results['entity_type']} concepts, {results['documents']} abstracts)")
    console.print(f"[green]results:[/] {out / 'results.json'}  {out / 'results.md'}  {out / 'test_predictions.pubtator'}")
