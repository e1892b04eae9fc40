"""``bioelectra pretrain``: train, eval, export, demo, plot (also ``python pretrain.py``); build-vocab and
build-data are in :mod:`bioelectra.cli.pretrain_data`."""

from __future__ import annotations

import logging
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

import bioelectra.cli.pretrain_data  # noqa: F401 - registers build-vocab and build-data first
from bioelectra.checkpoints import DEFAULT_CKPT
from bioelectra.cli.common import _fail, _setup_logging, _UserError, console, pretrain_app

# ---- pre-training model commands (train, eval, export) ----


class ModelSize(StrEnum):
    """Original ELECTRA sizes (``bioelectra.presets.ELECTRA_SIZES``); used by pretrain and convert."""

    small = "small"
    base = "base"
    large = "large"


@pretrain_app.command("train")
def pretrain_train(
    data_dir: Annotated[
        Path, typer.Option("--data-dir", "--data_dir", help="Output of `pretrain build-data`.")
    ],
    model_name: Annotated[
        str,
        typer.Option("--model-name", "--model_name", help="Run name: output in <data-dir>/models/<name>."),
    ] = "bioelectra",
    output_dir: Annotated[
        Path | None,
        typer.Option(
            "--output-dir",
            "--output_dir",
            help="Checkpoints, hparams.json, eval_results.json (overrides the name rule).",
        ),
    ] = None,
    model_size: Annotated[
        ModelSize | None,
        typer.Option(
            "--model-size", "--model_size", help="Original ELECTRA size (default: the hparams' model_size, else small)."
        ),
    ] = None,
    hparams: Annotated[
        list[str] | None,
        typer.Option(
            help="JSON object or .json file of hparam overrides: bioelectra.pretraining.PretrainingHparams fields "
            "or the original configure_pretraining.py names (TensorFlow/TPU ones are ignored, unknown keys "
            "are an error). Repeatable: merged in order, a later key wins (--hparams recipe.json --hparams "
            "'{\"max_steps\": 100}')."
        ),
    ] = None,
    init_from: Annotated[
        Path | None,
        typer.Option(
            "--init-from",
            "--init_from",
            help="Continue pre-training from a joint-model dir or a discriminator/ + generator/ dir.",
        ),
    ] = None,
    report_to: Annotated[
        str | None,
        typer.Option(
            "--report-to",
            "--report_to",
            show_default=False,
            help="Run logs (hparam report_to): tensorboard (event files in <output-dir>/tensorboard: losses, learning "
            "rate, generator / discriminator metrics; needs bioelectra\\[logging]), all, none or other Trainer "
            "integrations installed, comma-separated. [default: none]",
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Pre-train ELECTRA (replaced token detection); a re-run resumes from the last checkpoint."""
    _setup_logging(verbose)
    logging.getLogger("transformers.trainer").setLevel(logging.INFO)
    import json

    from bioelectra.pretraining import parse_hparams_arg, run_pretraining
    from bioelectra.pretraining.callbacks import close_process_group

    out = output_dir or data_dir / "models" / model_name
    try:
        overrides = parse_hparams_arg(hparams)
        if report_to is not None:
            overrides["report_to"] = report_to
        size = model_size.value if model_size is not None else str(overrides.get("model_size", "small"))
        summary = run_pretraining(
            data_dir=data_dir, output_dir=out, model_size=size, hparams=overrides, init_from=init_from
        )
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(json.dumps(summary, indent=2))
    close_process_group()


@pretrain_app.command("eval")
def pretrain_eval(
    model_dir: Annotated[
        Path, typer.Option("--model-dir", "--model_dir", help="A `pretrain train` output directory.")
    ],
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", "--data_dir", help="Data (default: the one in <model-dir>/hparams.json)."),
    ] = None,
    checkpoint: Annotated[
        int | None, typer.Option(help="Step N of checkpoint-N (default: the newest).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option(help="Metrics JSON (default: <model-dir>/eval_checkpoint-N.json).")
    ] = None,
    hparams: Annotated[
        list[str] | None,
        typer.Option(help="JSON overrides, e.g. '{\"num_eval_steps\": 10}'; repeatable, a later key wins."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """The original pre-training metrics of a checkpoint on the held-out (validation) examples, and each
    network's normalised attention entropy (1.0 = uniform, as at initialisation), as JSON."""
    _setup_logging(verbose)
    import json

    from bioelectra.pretraining import evaluate_checkpoint, parse_hparams_arg

    try:
        result = evaluate_checkpoint(
            model_dir=model_dir,
            data_dir=data_dir,
            checkpoint=checkpoint,
            output_file=output,
            hparams=parse_hparams_arg(hparams),
        )
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(json.dumps(result, indent=2))


class ExportDtype(StrEnum):
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"


@pretrain_app.command("export")
def pretrain_export(
    model_dir: Annotated[
        Path, typer.Option("--model-dir", "--model_dir", help="A `pretrain train` output directory.")
    ],
    output_dir: Annotated[
        Path, typer.Option("--output-dir", "--output_dir", help="Writes discriminator/ and generator/ here.")
    ],
    checkpoint: Annotated[
        int | None, typer.Option(help="Step N of checkpoint-N (default: the newest).")
    ] = None,
    dtype: Annotated[
        ExportDtype, typer.Option(help="Storage dtype of the weights (float16/bfloat16 halve the files; finetune loads them as float32).")
    ] = ExportDtype.float32,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Export HF checkpoints: discriminator/ (ElectraForPreTraining) and generator/ (ElectraForMaskedLM)."""
    _setup_logging(verbose)
    import json

    from bioelectra.pretraining import export_checkpoint

    try:
        paths = export_checkpoint(
            model_dir=model_dir, output_dir=output_dir, checkpoint=checkpoint, dtype=dtype.value
        )
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    print(json.dumps(paths, indent=2))
    console.print(f"[green]fine-tune with:[/] --ckpt {paths['discriminator']}")


# ---- end pre-training model commands ----

# ---- replaced-token demo and pre-training plots (demo, plot) ----


class DemoReplacement(StrEnum):
    auto = "auto"
    generator = "generator"
    random = "random"


@pretrain_app.command("demo")
def pretrain_demo(
    texts: Annotated[list[str], typer.Argument(show_default=False, help="One or more sentences (quote each).")],
    model: Annotated[
        str,
        typer.Option(
            help="A discriminator folder (e.g. an export's discriminator/), a shipped model name, an export folder "
            "(discriminator/ + generator/), a `pretrain train` output folder (its last checkpoint) or a checkpoint-N.",
        ),
    ] = DEFAULT_CKPT,
    replace_prob: Annotated[
        float, typer.Option("--replace-prob", help="Fraction of the non-special tokens the demo replaces, in (0, 1].")
    ] = 0.15,
    seed: Annotated[int, typer.Option(help="Seed of the replaced positions and the sampled tokens.")] = 42,
    replacement: Annotated[
        DemoReplacement,
        typer.Option(help="auto: sample from the generator when the model has one, else random vocabulary tokens."),
    ] = DemoReplacement.auto,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print JSON (tokens, probabilities, replaced flags, summaries) instead.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Replaced token detection on your text: the discriminator's probability that each token was replaced,
    on the text as given and after the demo replaced some tokens (with the generator when there is one)."""
    _setup_logging(verbose)
    from rich.console import Console
    from transformers.utils import logging as hf_logging

    from bioelectra.pretraining.demo import replaced_token_demo

    hf_logging.disable_progress_bar()
    try:
        result = replaced_token_demo(
            model, texts, replace_prob=replace_prob, seed=seed, replacement=replacement.value
        )
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    if json_output:
        print(result.to_json())
        return
    _print_demo(result, Console(highlight=False, soft_wrap=True))


def _print_demo(result, out) -> None:
    """The demo as aligned token columns (seed 002's layout), wrapped to the terminal; tokens and
    probabilities above 0.5 in red and marked ``*`` (the mark stays in plain text)."""
    from rich.text import Text

    kind = "discriminator + generator" if result.has_generator else "discriminator only"
    out.print(f"model: {result.model} ({kind})")
    out.print("P = sigmoid(discriminator logit), the probability that a token was replaced; * = above 0.5")
    if result.replacement == "generator":
        how = "tokens sampled by the generator at [MASK] (temperature 1)"
    elif result.has_generator:
        how = "random vocabulary tokens (--replacement random)"
    else:
        how = "random vocabulary tokens: this model has no generator (an export folder or a pretrain train folder has one)"
    out.print(f"replacements: {how}; {result.replace_prob:g} of the non-special tokens, seed {result.seed}")

    def block(rows: list[tuple[str, list[str], list[str | None]]]) -> None:
        label_width = 2 + max(len(label) for label, _, _ in rows) + 2
        widths = [max(len(cells[i]) for _, cells, _ in rows) + 2 for i in range(len(rows[0][1]))]
        start = 0
        while start < len(widths):
            end, used = start, label_width
            while end < len(widths) and (end == start or used + widths[end] <= max(out.width, 40)):
                used += widths[end]
                end += 1
            for label, cells, styles in rows:
                line = Text(f"  {label}".ljust(label_width))
                for i in range(start, end):
                    line.append(cells[i].ljust(widths[i]), style=styles[i])
                line.rstrip()
                out.print(line)
            start = end

    for number, sentence in enumerate(result.sentences, 1):
        given, corrupted = sentence.as_given, sentence.corrupted
        out.print()
        out.print(Text(f"Sentence {number}: {sentence.text}", style="bold"))
        if given.truncated:
            out.print(f"  (cut to the model's {len(given.tokens)} positions)")
        hot = ["bold red" if p else None for p in given.predicted_replaced]
        out.print("  as given:")
        block([
            ("token", given.tokens, hot),
            ("P", [f"{p:.2f}" + ("*" if f else "") for p, f in zip(given.probabilities, given.predicted_replaced, strict=True)], hot),
        ])  # fmt: skip
        s = given.summary()
        out.print(f"  {s.num_false_alarms} of {s.num_tokens} tokens above {s.threshold:g}")
        s = corrupted.summary()
        out.print(f"  with {s.num_replaced} of {s.num_tokens} tokens replaced:")
        flagged = corrupted.predicted_replaced
        originals = [
            orig if repl else ("=" if chosen else "")
            for orig, repl, chosen in zip(corrupted.original_tokens, corrupted.is_replaced, corrupted.chosen, strict=True)
        ]
        block([
            ("token", corrupted.tokens, ["bold red" if f else ("yellow" if r else None) for f, r in zip(flagged, corrupted.is_replaced, strict=True)]),
            ("original", originals, ["dim"] * len(originals)),
            ("P", [f"{p:.2f}" + ("*" if f else "") for p, f in zip(corrupted.probabilities, flagged, strict=True)], ["bold red" if f else None for f in flagged]),
        ])  # fmt: skip
        if any(c and not r for c, r in zip(corrupted.chosen, corrupted.is_replaced, strict=True)):
            out.print("  (= picked, but the sample is the original token: not a replacement, as ELECTRA labels it)")
        auc = "n/a" if s.auc is None else f"{s.auc:.2f}"
        out.print(
            f"  found {s.num_found} of {s.num_replaced} replaced tokens at {s.threshold:g}, {s.num_false_alarms} false "
            f"alarm(s); accuracy {s.accuracy:.2f}, AUC {auc} over the {s.num_tokens} non-special tokens"
        )


@pretrain_app.command("plot")
def pretrain_plot(
    run_dir: Annotated[Path, typer.Argument(help="A `pretrain train` output folder (or one of its checkpoint-N).")],
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """PNG plots of a pre-training run into RUN_DIR/plots/: the losses (total, generator MLM, discriminator),
    the held-out masked-LM accuracy and disc_auc over steps."""
    _setup_logging(verbose)
    from bioelectra.plotting import pyplot
    from bioelectra.pretraining.plots import plot_pretraining_run

    if pyplot() is None:
        _fail(_UserError('matplotlib is not installed: pip install "bioelectra[plots]"'))
        return
    try:
        written = plot_pretraining_run(run_dir)
    except (FileNotFoundError, ValueError, OSError) as exc:
        _fail(exc)
        return
    for path in written:
        print(path)


# ---- end replaced-token demo and pre-training plots ----
