"""``bioelectra finetune`` and ``bioelectra run-finetuning`` (the original run_finetuning.py command line)."""

from __future__ import annotations

from enum import StrEnum
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
    _no_transformers_bars,
    _setup_logging,
    _UserError,
    app,
    console,
)
from bioelectra.presets import SHIPPED_MODEL_LEARNING_RATES, SHIPPED_MODELS, UNTRAINED_TWINS


class Loader(StrEnum):
    ner = "ner"
    re = "re"
    qa = "qa"
    yesno = "yesno"
    glue = "glue"
    similarity = "similarity"
    doc_classification = "doc-classification"
    linking = "linking"
    pico = "pico"


class Linker(StrEnum):
    sparse = "sparse"
    dense = "dense"
    biosyn = "biosyn"


#: ``--train-on`` (downstream.linking.task.TRAIN_ON).
TrainOn = StrEnum("TrainOn", {"train": "train", "train_dev": "train+dev"})


class Precision(StrEnum):
    auto = "auto"
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"


class ReHead(StrEnum):
    electra = "electra"
    hf = "hf"


class Optimizer(StrEnum):
    adamw = "adamw"
    electra = "electra"


class Iob1Policy(StrEnum):
    repair = "repair"
    reject = "reject"


#: The options of ``finetune`` (their declarations, so the command's signature stays one line each).
_FinetuneLoader = Annotated[
    Loader,
    typer.Option(help="Task kind: 'ner' (token classification), 're' (relation extraction), 'qa' (extractive question answering, SQuAD format), 'yesno' (yes/no/maybe question answering: PubMedQA, BioASQ yes/no), 'glue' (GLUE's sentence (pair) classification and STS-B regression), 'similarity' (sentence-pair similarity scores: BIOSSES), 'doc-classification' (multi-label classification of sentence-split abstracts: HoC), 'linking' (entity linking of gold mentions to MeSH / OMIM ids) or 'pico' (EBM PICO, BLURB's IO tags)."),
]
_FinetuneDataset = Annotated[
    str | None,
    typer.Option(help="Benchmark name from the registry (e.g. ncbi-disease, bc5cdr-chem, chemprot, gad, covid-qa, biosses, hoc); --loader glue: cola, sst-2, mrpc, sts-b, qqp, mnli, mnli-mm, qnli, rte, wnli (or the original's sst, sts); --loader linking: ncbi-disease, bc5cdr-disease, bc5cdr-chemical."),
]
_FinetuneDataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", "--data_dir", help="Local folder with train.tsv, devel.tsv (or dev.tsv) and test.tsv (QA: train.json, dev.json, test.json, or one SQuAD JSON file split by document; GLUE: a task folder in GLUE's layout, test.tsv optional; linking: the folder holding ncbi-disease/, bc5cdr/ and medic/); overrides the registry."),
]
_FinetuneCkpt = Annotated[
    str,
    typer.Option(
        help=f"Checkpoint: {' or '.join(SHIPPED_MODELS)} (pre-trained discriminators shipped with the package; "
        f"default {DEFAULT_CKPT}), a local save_pretrained directory, a hub id (needs a network), an original "
        "TensorFlow ELECTRA checkpoint directory, or an untrained encoder: a size preset "
        f"electra-small|electra-base|electra-large or {'|'.join(UNTRAINED_TWINS)} (a shipped model's shape and "
        "tokenizer, random weights).",
    ),
]
_FinetuneOutputDir = Annotated[
    Path | None,
    typer.Option("--output-dir", "--output_dir", help="Where results.json, results.md and per-trial outputs go (default runs/<loader>-<dataset>)."),
]
_FinetuneMetric = Annotated[
    str | None,
    typer.Option(show_default=False, help="Development-set metric that selects the best epoch (f1, precision, recall, accuracy, loss; GLUE also mcc, pearson, spearman). [default: f1; GLUE: the original's per task: mcc for CoLA, spearman for STS-B, accuracy for the others]"),
]
_FinetuneGreaterIsBetter = Annotated[
    bool,
    typer.Option("--greater-is-better/--lower-is-better", "--greater_is_better/--lower_is_better", help="Whether a larger --metric is better."),
]
_FinetuneTrials = Annotated[int | None, typer.Option(min=1, show_default=False, help="Number of fine-tuning runs, with seeds seed, seed+1, ... [default: 1]")]
_FinetuneEpochs = Annotated[float | None, typer.Option(min=0.0, show_default=False, help="Training epochs per trial. [default: 3]")]
_FinetuneLearningRate = Annotated[
    float | None,
    typer.Option(
        "--learning-rate",
        "--learning_rate",
        "--lr",
        min=0.0,
        show_default=False,
        help="Peak learning rate (linear warmup, then linear decay). Default: "
        + ", ".join(f"{rate:g} for {name} and its untrained twin" for name, rate in SHIPPED_MODEL_LEARNING_RATES.items())
        + " (the rate of their model card's comparison), 1e-4 (ELECTRA's fine-tuning default) otherwise.",
    ),
]
_FinetuneBatchSize = Annotated[int | None, typer.Option("--batch-size", "--batch_size", min=1, show_default=False, help="Training batch size per device. [default: 32]")]
_FinetuneEvalBatchSize = Annotated[int | None, typer.Option("--eval-batch-size", "--eval_batch_size", min=1, show_default=False, help="Evaluation batch size per device. [default: 64]")]
_FinetuneLayerwiseLrDecay = Annotated[
    float | None,
    typer.Option(
        "--layerwise-lr-decay",
        "--layerwise_lr_decay",
        max=1.0,
        help="Learning-rate factor in (0, 1] per encoder layer below the task head (original ELECTRA fine-tuning: 0.8 "
        "for Small and Base); the embeddings get decay**(layers + 2). 1.0: one rate for all. [default: 1.0]",
        show_default=False,
    ),
]
_FinetuneMicroBatchTokens = Annotated[
    int | None,
    typer.Option("--micro-batch-tokens", "--micro_batch_tokens", min=0, help="Run a training batch with more padded tokens than this as several forward/backward passes adding up to the same update (less memory). Default: 1024 on CPU, no splitting on a GPU; 0: never split."),
]
_FinetuneMaxSeqLength = Annotated[
    int | None,
    typer.Option("--max-seq-length", "--max_seq_length", min=8, show_default=False, help="Sub-tokens per model input, [CLS] and [SEP] included. NER: longer sentences are split into windows; RE: truncated, examples losing an entity marker counted. [default: 128]"),
]
_FinetuneWarmupRatio = Annotated[float | None, typer.Option("--warmup-ratio", "--warmup_ratio", min=0.0, max=1.0, show_default=False, help="Fraction of steps with linear warmup. [default: 0.1]")]
_FinetuneWeightDecay = Annotated[float | None, typer.Option("--weight-decay", "--weight_decay", min=0.0, show_default=False, help="AdamW weight decay (not on biases and LayerNorm). [default: 0.01]")]
_FinetuneOptimizer = Annotated[
    Optimizer | None,
    typer.Option(show_default=False, help="adamw (the Trainer's AdamW and schedule) or electra (the original ELECTRA fine-tuning optimizer: no Adam bias correction, epsilon 1e-6, warmup multiplied into a linear decay from step 0). [default: adamw]"),
]
_FinetuneDropout = Annotated[
    float | None,
    typer.Option(min=0.0, max=0.99, show_default=False, help="Hidden, attention and classifier dropout of the fine-tuned model. [default: the checkpoint's own values]"),
]
_FinetuneProtocol = Annotated[
    str | None,
    typer.Option(show_default=False, help="A named set of settings: 'bio-electra' (10 epochs at 3e-4, 10 trials, layer-wise decay 0.8, the electra optimizer, dropout 0.1), 'electra' (the original's fine-tuning defaults), 'blurb' (BLURB-style settings per dataset, third-party, see the report) or 'default'. Options given explicitly override it."),
]
_FinetunePrecision = Annotated[Precision, typer.Option(help="auto: bf16 on GPUs that support it, fp32 otherwise.")]
_FinetuneIob1 = Annotated[
    Iob1Policy,
    typer.Option(help="An I-x tag not preceded by B-x/I-x (IOB1 style): 'repair' it to B-x with a warning, or 'reject' the file."),
]
_FinetuneEntityType = Annotated[
    str | None,
    typer.Option(
        "--entity-type",
        "--entity_type",
        show_default=False,
        help="NER: the entity type of bare B / I tags (BioBERT's files), so the saved model's labels read "
        "B-<type> / I-<type> and pipelines group typed entities. Default: the registered dataset's type "
        "(ncbi-disease: Disease, bc5cdr-chem: Chemical, ...); bare tags for --data-dir files.",
    ),
]
_FinetuneFold = Annotated[
    int | None, typer.Option(min=1, help="RE: cross-validation fold to run (GAD: 1..10; the data folder holds 1/ 2/ ...).")
]
_FinetuneFolds = Annotated[
    str | None,
    typer.Option(help="RE: 'all' runs every fold folder and reports the mean over folds; or a list like '1,2,3'."),
]
_FinetuneLinker = Annotated[
    Linker | None,
    typer.Option(help="--loader linking: the linker, 'sparse' (TF-IDF over character n-grams of the dictionary's names; no model, no training) 'dense' (a bi-encoder trained from --ckpt by SapBERT's self-alignment, its score added to the sparse one as BioSyn does; --trials seeded trainings) or 'biosyn' (dense, then BioSyn's synonym marginalisation on the training mentions, the sparse weight learned). Default sparse."),
]
_FinetuneTrainOn = Annotated[
    TrainOn | None,
    typer.Option(help="--loader linking, --linker dense or biosyn: what the linker scored on the test set is trained on: 'train' (the training mentions), or 'train+dev' (BioSyn's protocol for its published figures: each trial is fitted on train, scored on dev, where the dense linker's sparse weight is chosen, then fitted again from --ckpt with the same seed on the training and development mentions; the test set is scored with that fit). Default train."),
]
_FinetuneReHead = Annotated[
    ReHead,
    typer.Option("--re-head", "--re_head", help="RE, yes/no and GLUE classifier head: 'electra' (dropout + linear over [CLS], ELECTRA's) or 'hf' (ElectraClassificationHead)."),
]
_FinetuneDevFraction = Annotated[
    float, typer.Option("--dev-fraction", min=0.01, max=0.5, help="RE, QA: fraction of train (QA: of its documents) cut off as the development split when there is none.")
]
_FinetuneDevSplitSeed = Annotated[int, typer.Option("--dev-split-seed", min=0, max=2**32 - 1, help="RE, QA: seed of the development cut and of QA's split of a single file by document (shared by all trials).")]
_FinetuneDocStride = Annotated[int | None, typer.Option("--doc-stride", min=1, show_default=False, help="QA: tokens between the starts of two context windows. [default: 128]")]
_FinetuneMaxQueryLength = Annotated[int | None, typer.Option("--max-query-length", min=1, show_default=False, help="QA: question tokens kept. [default: 64]")]
_FinetuneMaxAnswerLength = Annotated[int | None, typer.Option("--max-answer-length", min=1, show_default=False, help="QA: longest answer, in tokens. [default: 30]")]
_FinetuneNBestSize = Annotated[int | None, typer.Option("--n-best-size", min=1, show_default=False, help="QA: candidates per window and length of the n-best list. [default: 20]")]
_FinetuneNullScoreThreshold = Annotated[float | None, typer.Option("--null-score-threshold", show_default=False, help="QA on SQuAD 2.0 data: answer nothing when the no-answer score beats the best span's by more than this. [default: 0]")]
_FinetuneNullWindowFraction = Annotated[
    float | None,
    typer.Option("--null-window-fraction", min=0.0, max=1.0, show_default=False, help="QA: fraction of the training windows without the answer kept (seeded); long documents are mostly such windows. [default: 1, all]"),
]
_FinetuneDoubleUnordered = Annotated[
    bool | None,
    typer.Option(
        "--double-unordered/--no-double-unordered",
        show_default=False,
        help="GLUE MRPC and STS-B: train on each pair in both orders (the original ELECTRA code's double_unordered). "
        "[default: on, as in the original, whose published GLUE scores were made with it; it doubles the training steps]",
    ),
]
_FinetuneHpSearch = Annotated[
    int | None,
    typer.Option("--hp-search", min=1, show_default=False, help="First search N settings of learning rate, epochs, batch size, warmup, layer-wise decay and dropout on the development split (Optuna, seeded, resumable; options you give stay fixed), then run --trials with the best. Needs bioelectra\\[search]."),
]
_FinetuneReportTo = Annotated[
    str,
    typer.Option("--report-to", "--report_to", help="Log losses, learning rate and development metrics to: none, tensorboard (event files in each trial's tensorboard/ folder; needs bioelectra\\[logging]), all, or other Trainer integrations installed (wandb, mlflow, ...), comma-separated."),
]
_FinetuneFindLr = Annotated[
    bool,
    typer.Option("--find-lr", help="Instead of training: a learning-rate range test (Smith 2017), an exponential sweep with the loss recorded; writes lr_find.json and plots/lr_find.png and prints the suggested rate."),
]
_FinetuneFindLrStart = Annotated[float, typer.Option("--find-lr-start", min=0.0, help="--find-lr: first rate of the sweep.")]
_FinetuneFindLrEnd = Annotated[float, typer.Option("--find-lr-end", min=0.0, help="--find-lr: last rate of the sweep.")]
_FinetuneFindLrSteps = Annotated[int, typer.Option("--find-lr-steps", min=2, help="--find-lr: optimizer steps of the sweep.")]
_FinetuneVerbose = Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")]


def _output_folder(output_dir: Path | None, default_name: str) -> Path:
    """``--output-dir``, else ``runs/<default_name>``; exits with a clear error when that path is a file."""
    out = output_dir or Path("runs") / default_name
    if out.exists() and not out.is_dir():
        _fail(_UserError(f"--output-dir {out}: exists and is a file, not a folder"))
    return out


@app.command("finetune")
def finetune(
    loader: _FinetuneLoader = Loader.ner,
    dataset: _FinetuneDataset = None,
    data_dir: _FinetuneDataDir = None,
    ckpt: _FinetuneCkpt = DEFAULT_CKPT,
    output_dir: _FinetuneOutputDir = None,
    metric: _FinetuneMetric = None,
    greater_is_better: _FinetuneGreaterIsBetter = True,
    trials: _FinetuneTrials = None,
    epochs: _FinetuneEpochs = None,
    learning_rate: _FinetuneLearningRate = None,
    batch_size: _FinetuneBatchSize = None,
    eval_batch_size: _FinetuneEvalBatchSize = None,
    layerwise_lr_decay: _FinetuneLayerwiseLrDecay = None,
    micro_batch_tokens: _FinetuneMicroBatchTokens = None,
    max_seq_length: _FinetuneMaxSeqLength = None,
    seed: SeedOption = 42,
    max_steps: MaxStepsOption = -1,
    warmup_ratio: _FinetuneWarmupRatio = None,
    weight_decay: _FinetuneWeightDecay = None,
    optimizer: _FinetuneOptimizer = None,
    dropout: _FinetuneDropout = None,
    protocol: _FinetuneProtocol = None,
    precision: _FinetunePrecision = Precision.auto,
    iob1: _FinetuneIob1 = Iob1Policy.repair,
    entity_type: _FinetuneEntityType = None,
    max_train_examples: MaxTrainExamplesOption = None,
    max_eval_examples: MaxEvalExamplesOption = None,
    fold: _FinetuneFold = None,
    folds: _FinetuneFolds = None,
    re_head: _FinetuneReHead = ReHead.electra,
    dev_fraction: _FinetuneDevFraction = 0.1,
    dev_split_seed: _FinetuneDevSplitSeed = 42,
    doc_stride: _FinetuneDocStride = None,
    max_query_length: _FinetuneMaxQueryLength = None,
    max_answer_length: _FinetuneMaxAnswerLength = None,
    n_best_size: _FinetuneNBestSize = None,
    null_score_threshold: _FinetuneNullScoreThreshold = None,
    null_window_fraction: _FinetuneNullWindowFraction = None,
    double_unordered: _FinetuneDoubleUnordered = None,
    linker: _FinetuneLinker = None,
    train_on: _FinetuneTrainOn = None,
    hp_search: _FinetuneHpSearch = None,
    report_to: _FinetuneReportTo = "none",
    find_lr: _FinetuneFindLr = False,
    find_lr_start: _FinetuneFindLrStart = 1e-7,
    find_lr_end: _FinetuneFindLrEnd = 1.0,
    find_lr_steps: _FinetuneFindLrSteps = 100,
    verbose: _FinetuneVerbose = False,
) -> None:
    """Fine-tune a checkpoint on a biomedical benchmark (or a GLUE task), N seeded trials, and report dev/test metrics."""
    _setup_logging(verbose)
    _no_transformers_bars()  # the trial's own bar is enough
    from bioelectra.checkpoints import default_learning_rate
    from downstream.errors import DownstreamError
    from downstream.options import settings_from_options
    from downstream.trial.reports import format_folds_table, format_summary_table

    if dataset is None and data_dir is None:
        _fail(_UserError("give --dataset NAME (a registered benchmark) or --data-dir DIR (your own files)"))
    if fold is not None and folds is not None:
        _fail(_UserError("give --fold K or --folds all, not both"))
    out = _output_folder(output_dir, f"{loader.value}-{dataset or data_dir.name}")  # type: ignore[union-attr]
    given = {
        "num_trials": trials, "num_train_epochs": epochs, "learning_rate": learning_rate,
        "per_device_train_batch_size": batch_size, "per_device_eval_batch_size": eval_batch_size,
        "max_seq_length": max_seq_length, "warmup_ratio": warmup_ratio, "weight_decay": weight_decay,
        "layerwise_lr_decay": layerwise_lr_decay, "optimizer": optimizer.value if optimizer else None,
        "dropout": dropout, "doc_stride": doc_stride, "max_query_length": max_query_length, "linker": linker and linker.value,
        "train_on": train_on and train_on.value,
        "max_answer_length": max_answer_length, "n_best_size": n_best_size, "metric": metric,
        "null_score_threshold": null_score_threshold, "null_window_fraction": null_window_fraction, "double_unordered": double_unordered,
    }  # fmt: skip
    try:
        settings = settings_from_options(
            loader.value,
            given=given,
            fixed={
                "dataset": dataset, "data_dir": data_dir, "checkpoint_name": ckpt, "output_dir": out,
                "greater_is_better": greater_is_better, "seed": seed, "precision": precision.value, "iob1_policy": iob1.value,
                "max_steps": max_steps, "max_train_examples": max_train_examples, "max_eval_examples": max_eval_examples,
                "fold": fold, "re_head": re_head.value, "dev_fraction": dev_fraction, "dev_split_seed": dev_split_seed,
                "micro_batch_tokens": micro_batch_tokens, "entity_type": entity_type, "report_to": report_to,
            },  # fmt: skip
            protocol=protocol,
            checkpoint=lambda: resolve_checkpoint(ckpt, out),
            default_learning_rate=lambda: default_learning_rate(ckpt),
            on_default_learning_rate=lambda rate: console.print(f"learning rate {rate:g} (the default for --ckpt {ckpt}; "
                                                                "set --learning-rate to change it)"),
            checked={"folds": folds},
        )
        if find_lr:
            _find_lr(settings, out, folds=folds, start=find_lr_start, end=find_lr_end, num_steps=find_lr_steps)
            return
        report = _run(settings, folds=folds, hp_search=hp_search, fixed={k for k, v in given.items() if v is not None})
    except (DownstreamError, FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(format_folds_table(report) if folds is not None else format_summary_table(report))
    console.print(f"[green]results:[/] {out / 'results.json'}  {out / 'results.md'}")



def _find_lr(settings, out: Path, *, folds: str | None, start: float, end: float, num_steps: int) -> None:
    """``finetune --find-lr``: the learning-rate range test instead of training; prints the suggestion."""
    from downstream.tuning.lr_finder import lr_range_test

    if folds is not None:
        _fail(_UserError("--find-lr sweeps one data set: give --fold K (or none), not --folds"))
    found = lr_range_test(settings, start=start, end=end, num_steps=num_steps)
    stopped = f" (stopped: {found['stop_reason']})" if found["stopped_early"] else ""
    print(
        f"suggested learning rate {found['suggested_learning_rate']:.3g} (steepest descent of the smoothed loss; "
        f"minimum / 10: {found['min_loss_learning_rate_over_10']:.3g}), {found['steps_run']} of "
        f"{found['num_steps']} steps{stopped}"
    )
    console.print(f"[green]range test:[/] {out / 'lr_find.json'}  {out / 'plots' / 'lr_find.png'}")


def _run(settings, *, folds: str | None, hp_search: int | None, fixed: set[str]) -> dict:
    """``finetune``'s run: a search then trials (``--hp-search``), every fold (``--folds``), or the trials."""
    from downstream.trial.runner import parse_folds, run_folds, run_trials

    if hp_search is not None:
        if folds is not None:
            _fail(_UserError("--hp-search searches on one data set: give --fold K (or none), not --folds"))
        from downstream.tuning.hpsearch import run_search_then_trials

        return run_search_then_trials(settings, hp_search, fixed=fixed)
    if folds is not None:
        return run_folds(settings, parse_folds(folds, settings))
    return run_trials(settings)


@app.command("run-finetuning")
def run_finetuning(
    data_dir: Annotated[
        Path,
        typer.Option(
            "--data-dir",
            "--data_dir",
            help="The original DATA_DIR: models/<model-name>/ (TensorFlow or save_pretrained checkpoint) and "
            "optionally finetuning_data/<task>/.",
        ),
    ],
    model_name: Annotated[
        str,
        typer.Option(
            "--model-name",
            "--model_name",
            help="The checkpoint DATA_DIR/models/<model-name>; if that folder holds no checkpoint (results go "
            "there too), a --ckpt name (bioelectra-mini, electra-small, ...).",
        ),
    ],
    hparams: Annotated[
        list[str],
        typer.Option(
            help='The original configure_finetuning.py hparams, JSON or a .json file: "task_names" (required), '
            '"learning_rate", "num_train_epochs", "num_trials", "train_batch_size", "max_seq_length", ... '
            "Repeatable: merged in order, a later key wins."
        ),
    ],
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """The original run_finetuning.py command line: each task of task_names through finetune's trial runner,
    results also in DATA_DIR/models/<model-name>/results/<task>_results.txt (the original's format)."""
    _setup_logging(verbose)
    from bioelectra.pretraining import parse_hparams_arg
    from downstream.errors import DownstreamError
    from downstream.original import run_original_finetuning
    from downstream.settings import FinetuneSettings
    from downstream.trial.reports import format_summary_table
    from downstream.trial.runner import run_trials

    try:
        reports = run_original_finetuning(
            data_dir,
            model_name,
            parse_hparams_arg(hparams),
            resolve_checkpoint=resolve_checkpoint,
            run_trials=run_trials,
            settings_class=FinetuneSettings,
            log=console.print,
        )
    except (DownstreamError, FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    for item in reports:
        report = item["report"]
        if "trials" in report:
            print(format_summary_table(report))
        else:  # an evaluation (do_train false)
            from downstream.trial.evaluate import evaluation_line

            print(f"{item['task']}: dev {evaluation_line(report, 'dev')}; test {evaluation_line(report, 'test') or '-'}")
        console.print(f"[green]{item['task']}:[/] {item['results_txt']}")
