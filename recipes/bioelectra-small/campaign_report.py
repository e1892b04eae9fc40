"""The campaign's ``report`` stage on this CPU: the brought-back figures (the unpacked results tar, and
``finetune.json``) as the Markdown tables of the model card and the README (``report.md``), and the card's
draft (``model-card.md``, :mod:`campaign_card`). Run it through ``campaign.py report``."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

from campaign_card import NAME, model_card  # noqa: E402
from campaign_common import REPO, log, num, read_json  # noqa: E402
from campaign_finetune import (  # noqa: E402
    LEARNING_RATE_ROW,
    PROBE_ROW,
    PROBE_SCRIPT,
    SPEED_TARGET_SECONDS,
    chosen_learning_rate,
    rate_name,
)
from campaign_here import _load, load_shared_corpus  # noqa: E402
from campaign_step import train_speed  # noqa: E402


def _round_large(value: float) -> int:
    """``value`` to the million from a million up (an estimate's precision), else to the unit."""
    return int(round(value, -6)) if value >= 1e6 else int(round(value))


def run_figures(results: Path) -> dict:
    """What one brought-back run did, from the files ``collect`` packed (``results``: the unpacked tar):
    ``steps`` (the final record's, else ``trainer_state.json``'s), ``batch`` (per device), ``examples``
    (steps x batch), ``seconds`` (``train_runtime``), ``flos`` (the Trainer's estimate) and ``device``
    (``bench.json``'s, else ``env.json``'s, which ``setup`` writes and ``collect`` packs). A missing
    figure is ``None``."""
    sys.path.insert(0, str(REPO))
    from bioelectra.pretraining import LOG_HISTORY_FILE, read_log_history

    hp = read_json(results / "run-hparams.json", {}) or {}
    state = read_json(results / "trainer_state.json", {}) or {}
    history = read_log_history(results / LOG_HISTORY_FILE)
    final = next((h for h in reversed(history) if "train_runtime" in h), {})
    steps = final.get("step", state.get("global_step"))
    batch = hp.get("per_device_train_batch_size")
    device = (read_json(results / "bench.json", {}) or {}).get("device") or (read_json(results / "env.json", {}) or {}).get("device")
    return {"steps": steps, "batch": batch, "examples": steps * batch if steps is not None and batch else None,
            "seconds": final.get("train_runtime"), "flos": final.get("total_flos"), "device": device}  # fmt: skip


def _continued_rows(figures: dict, continues: list[Path], train_examples: int | None) -> list[tuple[str, str]]:
    """The report's rows for a run that continued from earlier ones (``continues``: their unpacked results,
    earliest first): each earlier run's steps, examples, time and device, then the sums with this run's
    (``figures``: :func:`run_figures` of it). A sum is ``-`` when a run lacks that figure."""
    earlier = [(path, run_figures(path)) for path in continues]
    rows = []
    for i, (path, f) in enumerate(earlier, 1):
        rows.append((f"continued from, run {i} of {len(earlier) + 1}",
                     f"{num(f['steps'])} steps of batch {num(f['batch'])}, {num(f['examples'])} examples, "
                     f"{num(f['seconds'], ',.0f')} s on {f['device'] or '-'} ({path.name}/)"))  # fmt: skip
    runs = [f for _, f in earlier] + [figures]

    def total(key: str):
        values = [f[key] for f in runs]
        return None if any(v is None for v in values) else sum(values)

    steps, examples, seconds, flos = (total(k) for k in ("steps", "examples", "seconds", "flos"))
    passes = f" ({examples / train_examples:.2f} passes)" if examples and train_examples else ""
    rows.append((f"in all, the {len(runs)} runs",
                 f"{num(steps)} steps, {num(examples)} examples{passes}, "
                 f"{'-' if seconds is None else f'{seconds:,.0f} s ({seconds / 60:.1f} min)'} of training, "
                 f"{num(flos, '.3g')} FLOPs (the Trainer's estimate)"))  # fmt: skip
    return rows


def _pretraining_lines(results: Path, figures: dict, manifest: dict, continues: list[Path]) -> list[str]:
    """The report's "Pre-training run" table (``figures``: :func:`run_figures` of ``results``; ``continues``
    as :func:`results_report`'s) and its "Evaluations during the run" table."""
    from bioelectra.pretraining import FIRST_COMPILED_STEP_FILE, LOG_HISTORY_FILE, read_log_history

    hp = read_json(results / "run-hparams.json", {}) or {}
    build = read_json(results / "build_info.json", {}) or {}
    fitted = read_json(results / "fitted_schedule.json", {}) or {}  # a schedule fitted to the minutes
    done = read_json(results / "train-done.json", {}) or {}
    history = read_log_history(results / LOG_HISTORY_FILE)
    config = read_json(results / "export" / "discriminator" / "config.json", {}) or {}
    speed = train_speed(history, None)
    evals = [h for h in history if "eval_disc_auc" in h]

    steps, batch, seen, runtime = (figures[k] for k in ("steps", "batch", "examples", "seconds"))
    counts = build.get("counts", {})
    examples = counts.get("examples", {})
    train_examples = examples.get("train")
    tokens_per_example = (counts.get("tokens_in_examples") or 0) / max(1, sum(examples.values())) if examples else None
    lines = ["## Pre-training run", "", "| | |", "|---|---|"]
    rows = [
        ("device", figures["device"] or "-"),
        ("discriminator", f"hidden {config.get('hidden_size', '-')}, {config.get('num_hidden_layers', '-')} layers, "
                          f"{config.get('num_attention_heads', '-')} heads, FFN {num(config.get('intermediate_size'))}, "
                          f"embeddings {config.get('embedding_size', '-')}, vocabulary {num(config.get('vocab_size'))}"),
        ("text", f"{num(manifest.get('corpus', {}).get('bytes'))} bytes, "
                 f"{num(sum(v for k, v in manifest.get('corpus', {}).get('documents', {}).items() if not k.endswith('_dropped')) or None)} documents; "
                 f"{num(counts.get('tokens'))} tokens in {num(train_examples)} training and "
                 f"{num(examples.get('validation'))} validation examples of up to {build.get('max_seq_length', '-')} tokens"),
        ("steps", f"{num(steps)} of {num(fitted.get('max_steps', hp.get('max_steps')))} planned, batch {num(batch)}"),
        ("examples seen", f"{num(seen)} ({seen / train_examples:.2f} passes over the training examples)" if seen and train_examples else "-"),
        ("tokens seen (about)", num(_round_large(seen * tokens_per_example)) if seen and tokens_per_example else "-"),
        ("wall time of training", f"{runtime:,.0f} s ({runtime / 60:.1f} min)" if runtime else "-"),
        ("training FLOPs (the Trainer's estimate)", num(figures["flos"], ".3g")),
        ("speed (median of the training logs after the first)", f"{num(speed['median_steps_per_second'])} steps/s, "
                                                                f"data_wait_fraction {num(speed['median_data_wait_fraction'])}"),
        ("optimisation", (f"schedule fitted to {num(fitted.get('max_train_seconds'), ',.0f')} s of training: " if fitted else "")
                         + f"peak learning rate {num(fitted.get('peak_learning_rate', hp.get('learning_rate')), '.3g')}, "
                         f"warmup {num(fitted.get('warmup_steps', hp.get('warmup_steps')))} steps, "
                         f"{step_description(hp)}{fallback_note(done)}, untied generator {hp.get('untied_generator', '-')}"),
        ("first compiled step", first_compiled_step_text(read_json(results / FIRST_COMPILED_STEP_FILE, None))),
    ]  # fmt: skip
    if continues:
        rows += _continued_rows(figures, list(continues), train_examples)
    lines += [f"| {k} | {v} |" for k, v in rows]

    keys = ("eval_masked_lm_accuracy", "eval_disc_auc", "eval_disc_precision", "eval_disc_recall", "eval_disc_attention_entropy")
    lines += ["", "## Evaluations during the run", ""]
    if not evals:  # eval_steps 0 and no final evaluation logged, or no log_history.jsonl brought back
        return lines + [f"None in the run's {LOG_HISTORY_FILE}."]
    lines += ["| step | " + " | ".join(k.removeprefix("eval_") for k in keys) + " |", "|---:|" + "---:|" * len(keys)]
    lines += [f"| {num(h['step'])} | " + " | ".join(num(h.get(k), ".3f") for k in keys) + " |" for h in evals]

    return lines


@functools.cache
def _bench_report():
    """``bench/pretrain_report.py`` (the bench's Markdown and its cells; torch-free), loaded once."""
    return _load("pretrain_report", REPO / "bench" / "pretrain_report.py")


def step_description(hp: dict) -> str:
    """How the run's training step ran, from its hparams (``run-hparams.json``): ``train_step`` (the whole step
    of ours, captured or not, or the Trainer's), ``torch.compile`` and, where they were used, the compile scope,
    mode and options, ``fuse_qkv`` and the bf16 weight copies."""
    text = f"train_step {hp.get('train_step', '-')}, torch.compile {bool(hp.get('torch_compile'))}"
    how = []
    if hp.get("torch_compile") and hp.get("compile_scope", "step") != "step":
        how.append(f"scope {hp['compile_scope']}")
    if hp.get("torch_compile") and hp.get("compile_mode", "default") != "default":
        how.append(f"mode {hp['compile_mode']}")
    if hp.get("torch_compile") and hp.get("compile_options"):
        how.append(f"options {json.dumps(hp['compile_options'], sort_keys=True)}")
    if how:
        text += f" ({', '.join(how)})"
    return text + ("; fuse_qkv" if hp.get("fuse_qkv") else "") + ("; bf16 weight copies" if hp.get("bf16_weight_copies") else "")


def fallback_note(done: dict) -> str:
    """What ``train-done.json`` says of a failed first run that the supervisor ran again
    (:func:`campaign_train.supervise`): the whole step's failure, run on with the Trainer's step, or a compiled
    run's, run on eager; ``""`` when the first run was the only one."""
    if done.get("fallback") == "trainer":
        return f"; the whole-step run failed (exit {done.get('whole_step_returncode')}) and went on with the Trainer's step"
    if done.get("fallback"):
        return f"; the compiled run failed (exit {done.get('compiled_returncode')}) and went on eager"
    return ""


def first_compiled_step_text(first: dict | None) -> str:
    """``first_compiled_step.json`` (``pretrain train`` with ``torch_compile``) as a cell: the first step's
    seconds (loading the cache, compiling, the capture), the cache and whether it loaded, and the graphs torch's
    caches served; ``-`` for a run that compiled nothing or wrote none."""
    from bioelectra.compile_records import describe_cache_counts

    if not first:
        return "-"
    counts = first.get("compile_cache_counts") or {}
    cache = first.get("compile_cache")
    carried = ("no compile cache" if not cache else f"compile cache {Path(cache).name} "
               + ("loaded" if first.get("compile_cache_loaded") else "not loaded (none there, or it did not fit)"))  # fmt: skip
    return f"{num(first.get('seconds'), ',.1f')} s at step {num(first.get('global_step'))}; {carried}; {describe_cache_counts(counts)}"


#: The bench reports a results folder may hold, in the order they join the throughput table: ``bench`` and
#: ``bench --compile``, ``step-bench``'s eager and compiled parts, and its ``train`` part's ``pretrain train``
#: speed (``step-train.json``, written under ``--out``, not into the results tar: put it beside the unpacked
#: results, or give it with ``report --bench``).
BENCH_REPORTS = ("bench.json", "bench-compiled.json", "step-bench-eager.json", "step-bench-compiled.json", "step-train.json")


def _throughput_lines(results: Path, extra: list[Path]) -> list[str]:
    """The report's "Throughput" section: ``bench/pretrain_throughput.py --markdown`` over the reports of
    :data:`BENCH_REPORTS` found in ``results`` and those of ``extra`` (``report --bench``); nothing without a
    bench report. A ``step-train.json`` that no bench case matches is named, not raised."""
    throughput = _bench_report()
    found = [results / name for name in BENCH_REPORTS if (results / name).is_file()]
    # a file given is checked as --markdown checks it (its line and column when it is not JSON)
    paths, reports = found + list(extra), [read_json(p, {}) or {} for p in found] + [throughput.read_report(p) for p in extra]
    if not any(r.get("cases") for r in reports):
        return []
    try:
        table = throughput.markdown(*reports).rstrip()
    except ValueError as exc:
        trains = [str(p) for p, r in zip(paths, reports, strict=True) if throughput.is_train_report(r)]
        table = throughput.markdown(*(r for r in reports if not throughput.is_train_report(r))).rstrip()
        table += f"\n\n{', '.join(trains)} left out: {exc}."
    return ["", "## Throughput", "", "`bench/pretrain_throughput.py --markdown` over " + ", ".join(f"`{p.name}`" for p in paths)
            + ": ours beside a naive fp32 eager loop in the same run where there is one, synthetic batches; "
            "`pretrain train` from the run's own log windows.", "", table]  # fmt: skip


def _corpus_and_throughput_lines(results: Path, manifest: dict, bench: list[Path] = ()) -> list[str]:
    """The report's "Corpus and attribution" table (from ``manifest.json``) and its "Throughput" table (from
    :func:`_throughput_lines`); nothing for what was not brought back."""
    lines: list[str] = []
    corpus = manifest.get("corpus", {})
    documents = {k: v for k, v in corpus.get("documents", {}).items() if not k.endswith("_dropped")}
    if documents:
        terms = load_shared_corpus().SOURCE_TERMS
        dropped = ", ".join(f"{k} {v}" for k, v in corpus.get("excluded_for_eval_overlap", {}).items()) or "none"
        lines += ["", "## Corpus and attribution", "",
                  f"{num(corpus.get('bytes'))} bytes of text in {num(sum(documents.values()))} documents "
                  f"(`recipes/shared_corpus.py --subset all`); left out: {', '.join(corpus.get('left_out', [])) or 'none'}; "
                  f"dropped for overlap with evaluation text: {dropped}.", "",
                  "| source | documents | terms as stated by the source |", "|---|---:|---|"]  # fmt: skip
        for name, count in documents.items():
            what, stated = terms.get(name, (name, "-"))
            lines.append(f"| {what} | {num(count)} | {stated} |")

    return lines + _throughput_lines(results, list(bench))


def _finetune_lines(finetune: dict, figures: dict) -> list[str]:
    """The report's fine-tuning sections from ``finetune`` (``finetune.json``, merged): the learning rate of
    finetune's defaults, the linear probe, the comparisons, the speed of an ELECTRA-Base-sized model, and
    the commands of every run."""
    from downstream.benchmark import format_mean_std

    lines: list[str] = []
    done = {name: r for name, r in finetune.items() if isinstance(r, dict) and "row" in r}
    every_run = dict(done)
    tried = {name: r for name, r in done.items() if r["row"] == LEARNING_RATE_ROW}
    if tried:
        rate, why = chosen_learning_rate(finetune)
        lines += ["", "## The learning rate of finetune's defaults", "",
                  "bioelectra-small fine-tuned on NCBI-disease with each candidate rate, one trial of 3 epochs (seed 42); "
                  "the choice looks at development F1 only.", "", "| learning rate | dev F1 | time (s) |", "|---:|---:|---:|"]  # fmt: skip
        for r in tried.values():
            stats = ((r.get("summary") or {}).get("dev") or {}).get("f1") or {}
            cell = f"{100 * stats['mean']:.2f}" if stats.get("mean") is not None else ("failed" if "error" in r else "-")
            lines.append(f"| {rate_name(r['learning_rate'])} | {cell} | {r['wall_seconds']:.0f} |")
        lines += ["", f"Chosen: {rate_name(rate)}, the rate of the \"finetune's defaults\" rows below; register it for "
                  f"bioelectra-small in `SHIPPED_MODEL_LEARNING_RATES` (`bioelectra/presets.py`) when it ships."
                  if rate is not None else f"No rate chosen yet ({why})."]  # fmt: skip
        used = (finetune.get("learning_rate") or {}).get("rate")
        if used is not None and used != rate:
            lines[-1] += f" The rows below used {rate_name(used)} ({finetune['learning_rate'].get('why')})."
        done = {name: r for name, r in done.items() if name not in tried}
    probe_script = PROBE_SCRIPT.relative_to(REPO).as_posix()
    probes = {r["model"]: r for r in done.values() if r["row"] == PROBE_ROW}
    if probes:
        lines += ["", "## Linear probe", "",
                  "A softmax layer trained on the frozen encoder's word features (the first sub-token's state; "
                  f"`{probe_script}`): NCBI-disease development entity-level F1 (percent), one "
                  "run each. Fine-tuning re-learns the encoder from the task and can hide what pre-training put into "
                  "it; the probe cannot.", "", "| model | last layer | all layers |", "|---|---:|---:|"]  # fmt: skip
        for model, label in (("small", "bioelectra-small"), ("twin", "its untrained twin")):
            f1 = (probes.get(model) or {}).get("f1") or {}
            failed = "failed" if "error" in probes.get(model, {}) else "-"
            lines.append(f"| {label} | " + " | ".join(f"{f1[k]:.2f}" if k in f1 else failed
                                                        for k in ("last_layer", "all_layers")) + " |")  # fmt: skip
        small, twin = ((probes.get(m) or {}).get("f1") or {} for m in ("small", "twin"))
        if small and twin:
            lines.append("| gain | " + " | ".join(f"{small[k] - twin[k]:+.2f}" for k in ("last_layer", "all_layers")) + " |")
        done = {name: r for name, r in done.items() if r["row"] != PROBE_ROW}
    lines += ["", "## Fine-tuning", "", "Entity-level F1 (percent), mean ± std over the trials; the same command for "
              "bioelectra-small and its untrained twin (only `--ckpt` differs).", "",
              "| comparison | small dev F1 | small test F1 | twin dev F1 | twin test F1 | gain dev / test |",
              "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for row in dict.fromkeys(r["row"] for r in done.values()):
        pair = {r["model"]: r for r in done.values() if r["row"] == row}
        if set(pair) & {"small", "twin"} != set(pair):
            continue
        cells, means = [], {}
        for model in ("small", "twin"):
            summary = (pair.get(model) or {}).get("summary") or {}
            for split in ("dev", "test"):
                stats = summary.get(split, {}).get("f1", {})
                cells.append(format_mean_std(stats) if stats else ("failed" if "error" in pair.get(model, {}) else "-"))
                means[model, split] = stats.get("mean")
        gain = " / ".join(f"{100 * (means['small', s] - means['twin', s]):+.2f}"
                          if means.get(("small", s)) is not None and means.get(("twin", s)) is not None else "-"
                          for s in ("dev", "test"))  # fmt: skip
        lines.append(f"| {row} | " + " | ".join(cells) + f" | {gain} |")
    for r in done.values():
        if r["model"] == "base":
            lines += ["", f"{r['row']}, an ELECTRA-Base-sized model with random weights on {figures['device'] or '-'}: "
                      + (f"{r['wall_seconds']:.0f} s end to end (target: under {SPEED_TARGET_SECONDS} s, "
                         f"{'met' if r['wall_seconds'] < SPEED_TARGET_SECONDS else 'not met'})."
                         if "error" not in r else f"failed ({r['error']}).")]  # fmt: skip
    commands = [f"- `{name}`: `{'python ' + probe_script if r['row'] == PROBE_ROW else 'finetune'} {r['command']}`"
                for name, r in every_run.items()]  # fmt: skip
    lines += ["", "Commands (on the device; paths as there):", "", *commands, ""]
    return lines


def results_report(results: Path, finetune: dict, continues: list[Path] = (), bench: list[Path] = ()) -> str:
    """Markdown tables of a brought-back campaign for the model card and the README: the run, the metrics at
    each evaluation, the final metrics, and the fine-tuning comparisons (``finetune-eval``'s runs grouped by
    ``row``). Every figure is read from the files ``collect`` packed (``results``: the unpacked tar) and from
    ``finetune`` (``finetune.json``, merged); a figure that is not there is shown as ``-``. ``continues``:
    the unpacked results of the runs this one continued from (``pretrain train --init-from``), earliest
    first; the run's table then adds a row for each and one with the sums (:func:`_continued_rows`). ``bench``:
    bench reports kept apart from the results (``report --bench``), added to its throughput table."""
    sys.path.insert(0, str(REPO))
    figures = run_figures(results)
    manifest = read_json(results / "manifest.json", {}) or {}
    lines = _pretraining_lines(results, figures, manifest, list(continues))
    lines += _corpus_and_throughput_lines(results, manifest, list(bench))
    lines += _finetune_lines(finetune, figures)
    return "\n".join(lines)


def add_report_arguments(p) -> None:
    """``campaign.py report``'s options (``p``: its ``argparse`` sub-parser)."""
    p.add_argument("--results", type=Path, required=True, help="the unpacked results tar")
    p.add_argument("--finetune", type=Path, action="append", default=None,
                   help="a finetune.json (repeatable, later ones win; default: the one in --results)")  # fmt: skip
    p.add_argument("--continues", type=Path, action="append", default=[],
                   help="the unpacked results of a run this one continued from (pretrain train --init-from its export); "
                        "repeatable, earliest first: the report adds their steps, examples, time and FLOPs")  # fmt: skip
    p.add_argument("--bench", type=Path, action="append", default=[],
                   help="a bench report or step-bench's step-train.json kept apart from the results (repeatable): "
                        "added to the throughput table beside those in --results")  # fmt: skip


def cmd_report(args) -> None:
    """``results_report`` of ``--results`` into ``report.md`` there (and printed), and the model card's draft
    into ``model-card.md`` (:func:`campaign_card.model_card`).

    Raises:
        SystemExit: ``--results`` or a ``--continues`` folder holds no ``run-hparams.json`` (not an unpacked
            results tar), or a ``--finetune`` or ``--bench`` file given is missing.
    """
    from bioelectra.textio import atomic_write_text

    if not (args.results / "run-hparams.json").is_file():
        raise SystemExit(f"error: {args.results}: no run-hparams.json (expected the unpacked results tar: "
                         "cat results.tar.part-* | tar x -C DIR)")  # fmt: skip
    missing = [str(p) for p in args.finetune or [] if not p.is_file()]
    if missing:
        raise SystemExit(f"error: --finetune {', '.join(missing)}: no such file (a finetune.json from finetune-eval)")
    finetune: dict = {}
    for path in args.finetune or [args.results / "finetune.json"]:
        finetune.update({k: v for k, v in (read_json(Path(path), {}) or {}).items() if k != "skipped"})
    missing = [str(p) for p in args.continues if not (p / "run-hparams.json").is_file()]
    if missing:
        raise SystemExit(f"error: --continues {', '.join(missing)}: no run-hparams.json (expected an earlier run's "
                         "unpacked results tar)")  # fmt: skip
    missing = [str(p) for p in args.bench if not p.is_file()]
    if missing:
        raise SystemExit(f"error: --bench {', '.join(missing)}: no such file (a bench report, or step-bench's step-train.json)")
    text = results_report(args.results, finetune, args.continues, args.bench)
    atomic_write_text(args.results / "report.md", text)
    print(text)
    log(f"written {args.results / 'report.md'}")
    shipped = REPO / "bioelectra" / "assets" / "models" / NAME
    atomic_write_text(args.results / "model-card.md", model_card(args.results, finetune, text, shipped=shipped))
    log(f"written {args.results / 'model-card.md'}: the model card's draft; read it through, then copy it to "
        f"{shipped.relative_to(REPO) / 'README.md'}")
