"""The campaign's fine-tuning comparisons on the device (``campaign.py finetune-eval``): the learning rate of
``finetune``'s defaults for bioelectra-small, bioelectra-small against its untrained twin on the NER sets and
in a frozen-encoder linear probe, Bio-ELECTRA's protocol, and the fine-tuning time of an ELECTRA-Base-sized
model, in order of priority while a time budget lasts."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time

from campaign_common import DEFAULT_NER, NER_SETS, REPO, log, read_json, run, use_site, write_json

#: The rows of the fine-tuning comparison (``report`` groups the runs by them).
DEFAULTS_ROW = "{}, finetune's defaults"
#: ``finetune --protocol bio-electra`` (``downstream.settings.PROTOCOLS``: 10 epochs at 3e-4, layer-wise learning-rate
#: decay 0.8, the original optimizer, dropout 0.1), cut to 3 trials like every row of the comparison.
BIO_ELECTRA_ROW = "NCBI-disease, Bio-ELECTRA's protocol (--protocol bio-electra)"
SPEED_ROW = "NCBI-disease fine-tuning time, 3 trials x 3 epochs"
#: The target of SPEED_ROW on one GPU, end to end (start-up, 3 trials, evaluation): 2 minutes, short enough to
#: fine-tune a Base-sized model beside a pre-training run (115.6 s on an H200: docs/results/pretraining-findings.md).
SPEED_TARGET_SECONDS = 120
LEARNING_RATE_ROW = "NCBI-disease, the learning rate of finetune's defaults (1 trial each, development F1)"
PROBE_ROW = "NCBI-disease, frozen-encoder linear probe (development F1)"
#: The probe: a softmax layer on the frozen encoder's word features. Three epochs of fine-tuning at 1e-3 can
#: re-learn what a short pre-training put into a small encoder (on the CPU, a run whose probe F1 was 19.0
#: against its twin's 2.2 fine-tuned no better than the twin: docs/results/pretraining-findings.md, "A run
#: fitted to its time"); the probe cannot, so it tells whether pre-training learned anything when fine-tuning shows no gain.
PROBE_SCRIPT = REPO / "recipes" / "bioelectra-mini" / "linear_probe.py"
DATASET_TITLES = {"ncbi-disease": "NCBI-disease", "bc5cdr-chem": "BC5CDR-chem", "bc5cdr-disease": "BC5CDR-disease"}


#: Learning rates tried for bioelectra-small before the "finetune's defaults" rows (NCBI-disease, one trial
#: of ``finetune``'s 3 epochs each, judged on development F1 alone: the test split plays no part in the
#: choice). 3e-4 is ELECTRA-Small's fine-tuning rate (ELECTRA paper, appendix table of fine-tuning
#: hyper-parameters) and Bio-ELECTRA's protocol's; 1e-3 is bioelectra-mini's (docs/results/pretraining-findings.md,
#: "A small encoder wants a higher fine-tuning rate": at hidden 128 and 3 epochs, 1e-3 beat 3e-4 by about 5 F1 points, for the
#: model and its twin alike). ``finetune``'s 1e-4 for other checkpoints is ELECTRA-Base's rate, too low for
#: 3 epochs of a 256-wide encoder. The winner is the rate of the defaults rows, for the model and its twin
#: alike, and the one to register for bioelectra-small in ``bioelectra.presets.SHIPPED_MODEL_LEARNING_RATES``
#: when it ships, so that those rows are the README command's figures.
LEARNING_RATE_CANDIDATES = (3e-4, 1e-3)


def rate_name(rate: float) -> str:
    """``3e-4`` for 0.0003, ``2.5e-4`` for 0.00025: the spelling of a learning rate in run names and on the
    command line (exact to 7 significant digits)."""
    mantissa, exponent = f"{rate:.6e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def chosen_learning_rate(results: dict, candidates: tuple[float, ...] = LEARNING_RATE_CANDIDATES) -> tuple[float | None, str]:
    """The candidate learning rate with the best NCBI-disease development F1 in ``results`` (``finetune.json``),
    the lower rate on a tie, and why; ``None`` while a candidate has no measured development F1 (not run
    yet, skipped or failed: every candidate must have been measured)."""
    scores = {}
    for rate in candidates:
        summary = (results.get(f"lr-{rate_name(rate)}") or {}).get("summary") or {}
        f1 = summary.get("dev", {}).get("f1", {}).get("mean")
        if f1 is None:
            return None, f"lr-{rate_name(rate)} not measured"
        scores[rate] = f1
    best = max(sorted(scores), key=lambda r: scores[r])  # sorted + max: the lowest of equal scores
    return best, ", ".join(f"{rate_name(r)}: dev F1 {100 * f:.2f}" for r, f in scores.items())


def defaults_rate(args, results: dict) -> tuple[float | None, str]:
    """The rate of the "finetune's defaults" runs, and why: ``--learning-rate`` when given, else the one the
    ``lr-*`` runs chose (:func:`chosen_learning_rate`; ``None`` until every candidate is measured)."""
    return (args.learning_rate, "--learning-rate") if args.learning_rate is not None else chosen_learning_rate(results)


def finetune_queue(args) -> list[dict]:
    """The comparisons in order of priority (the first ones matter most if the budget runs out). Each run:
    ``name``, ``args`` (finetune's, or with ``probe`` the linear probe's: :data:`PROBE_SCRIPT`), ``row`` (what
    is compared) and ``model`` (``small``, ``twin`` or ``base``: an ELECTRA-Base-sized model with random
    weights, timed only). A run with ``defaults_rate`` gets ``--learning-rate`` at run time:
    ``args.learning_rate`` if given, else :func:`chosen_learning_rate` of the ``lr-*`` runs (which are then
    queued first)."""
    model, twin = args.work / "export" / "discriminator", args.work / "twin"
    ner = args.ner or (args.work / "ner" if (args.work / "ner").is_dir() else DEFAULT_NER)  # device: pack 1's; here: ../shared
    common = ["--trials", str(args.trials)]
    protocol = ["--protocol", "bio-electra"]  # its 10 trials cut to 3: an explicit --trials wins over a protocol
    ncbi = DEFAULTS_ROW.format(DATASET_TITLES["ncbi-disease"])
    queue = [] if args.learning_rate is not None else [
        {"name": f"lr-{rate_name(rate)}", "row": LEARNING_RATE_ROW, "model": "small", "learning_rate": rate,
         "args": ["--dataset", "ncbi-disease", "--ckpt", model, "--trials", "1", "--learning-rate", rate_name(rate)]}
        for rate in LEARNING_RATE_CANDIDATES
    ]  # fmt: skip
    queue += [
        {"name": "ncbi-small", "row": ncbi, "model": "small", "defaults_rate": True, "args": ["--dataset", "ncbi-disease", "--ckpt", model, *common]},
        {"name": "ncbi-twin", "row": ncbi, "model": "twin", "defaults_rate": True, "args": ["--dataset", "ncbi-disease", "--ckpt", twin, *common]},
        {"name": "probe-small", "row": PROBE_ROW, "model": "small", "probe": True, "args": ["--dataset", "ncbi-disease", "--ckpt", model]},
        {"name": "probe-twin", "row": PROBE_ROW, "model": "twin", "probe": True, "args": ["--dataset", "ncbi-disease", "--ckpt", twin]},
        # the twin's protocol row right after the model's: on the CPU an untrained twin of this shape beat a
        # pre-trained model by 6.3 test F1 under this protocol, where 3 epochs at 1e-3 put them level
        # (docs/results/pretraining-findings.md), so the model's row means nothing without it
        {"name": "ncbi-small-bio-electra-protocol", "row": BIO_ELECTRA_ROW, "model": "small", "args": ["--dataset", "ncbi-disease", "--ckpt", model, *common, *protocol]},
        {"name": "ncbi-twin-bio-electra-protocol", "row": BIO_ELECTRA_ROW, "model": "twin", "args": ["--dataset", "ncbi-disease", "--ckpt", twin, *common, *protocol]},
        {"name": "base-speed", "row": SPEED_ROW, "model": "base", "args": ["--dataset", "ncbi-disease", "--ckpt", "electra-base", *common], "speed": True},
    ]  # fmt: skip
    for name in NER_SETS:
        for which, ckpt in (("small", model), ("twin", twin)):
            if (ner / name).is_dir():
                queue.append({"name": f"{name}-{which}", "row": DEFAULTS_ROW.format(DATASET_TITLES[name]), "model": which,
                              "defaults_rate": True, "args": ["--data-dir", ner / name, "--ckpt", ckpt, *common]})  # fmt: skip
    return queue


def has_gpu() -> bool:
    """Whether a CUDA device is there: the fine-tuning time (``"speed"`` runs) is a GPU figure, and an
    ELECTRA-Base-sized model would take hours on the 2-core CPU."""
    import torch

    return torch.cuda.is_available()


def cmd_finetune_eval(args) -> None:
    """The comparisons of :func:`finetune_queue`, in its order, while ``--budget-seconds`` last (a run starts
    only if the previous run's time still fits). The results add up across runs of the stage in ``<work>/finetune.json``,
    copied to ``--out`` after every run: a comparison measured by an earlier run of the stage (``base-speed``
    on a GPU, say) is not run again (delete that file to measure again), unless it is a "finetune's defaults" run made at
    another rate than the one now chosen or given. A run that fails is recorded with its ``error``
    and the queue goes on; the stage then exits non-zero. The "finetune's defaults" runs use the learning
    rate the ``lr-*`` runs chose (recorded as ``learning_rate``; they are skipped until every candidate has
    been measured) or ``--learning-rate``."""
    work, out = args.work, args.out
    use_site(work)
    sys.path.insert(0, str(REPO))
    from bioelectra.presets import build_untrained_twin

    model = work / "export" / "discriminator"
    if model.is_dir():  # absent before collect: then only the runs that need no pre-trained model can go
        build_untrained_twin(model, work / "twin", seed=0)
    start = time.monotonic()
    results = read_json(work / "finetune.json", {}) or {}
    results["skipped"] = []  # this run's

    def save() -> None:
        write_json(work / "finetune.json", results)
        write_json(out / "finetune.json", results)

    last_seconds, failed = 0.0, []
    for item in finetune_queue(args):
        name = item["name"]
        if args.only and name not in args.only:
            continue
        if name in results and "error" not in results[name]:
            earlier = results[name].get("learning_rate")
            rate_now = defaults_rate(args, results)[0] if item.get("defaults_rate") else None
            if rate_now is None or earlier is None or earlier == rate_now:
                log(f"{name}: measured in an earlier call ({results[name]['wall_seconds']} s), kept")
                continue
            # a "finetune's defaults" row is read at the model's rate: one run at another rate is run again
            log(f"{name}: measured at {rate_name(earlier)} in an earlier call; the rate is now {rate_name(rate_now)}, run again")
        if item.get("speed") and not has_gpu():
            results["skipped"].append(name)
            log(f"skipped {name}: a GPU figure, and no GPU here")
            continue
        if not model.is_dir() and any(a in (model, work / "twin") for a in item["args"]):
            results["skipped"].append(name)
            log(f"skipped {name}: no {model} yet (run collect first)")
            continue
        spent = time.monotonic() - start
        if spent + max(last_seconds, 1.0) > args.budget_seconds:
            results["skipped"].append(name)
            log(f"skipped {name}: {spent:.0f} of {args.budget_seconds} s spent")
            continue
        rate = item.get("learning_rate")
        if item.get("defaults_rate"):
            rate, why = defaults_rate(args, results)
            if rate is None:
                results["skipped"].append(name)
                log(f"skipped {name}: no learning rate chosen yet ({why})")
                continue
            results["learning_rate"] = {"rate": rate, "why": why}
            item = {**item, "args": [*item["args"], "--learning-rate", rate_name(rate)]}
        run_dir = work / "finetune" / name
        if item.get("probe"):  # args.extra is finetune's
            cmd = [sys.executable, PROBE_SCRIPT, *item["args"], "--output", run_dir / "probe.json"]
        else:
            cmd = [sys.executable, REPO / "finetune.py", "--loader", "ner", *item["args"], "--output-dir", run_dir, *shlex.split(args.extra)]
        t0 = time.monotonic()
        try:
            run(cmd, stdout=subprocess.DEVNULL if args.quiet else None)
            error = None
        except SystemExit as exc:  # recorded; the next comparison still runs
            error = str(exc)
        last_seconds = time.monotonic() - t0
        results[name] = {"row": item["row"], "model": item["model"], "command": " ".join(str(c) for c in cmd[2:]),
                         "wall_seconds": round(last_seconds, 1), **({"learning_rate": rate} if rate is not None else {}),
                         **({"probe": True} if item.get("probe") else {})}  # fmt: skip
        if error is None and item.get("probe"):
            results[name]["f1"] = (read_json(run_dir / "probe.json", {}) or {}).get("f1")
            log(f"{name}: {last_seconds:.0f} s, probe F1 {json.dumps(results[name]['f1'])}")
        elif error is None:
            results[name]["summary"] = read_json(run_dir / "results.json", {}).get("summary")
            log(f"{name}: {last_seconds:.0f} s, summary {json.dumps(results[name]['summary'])[:300]}")
        else:
            results[name]["error"] = error
            failed.append(name)
            log(f"{name} failed after {last_seconds:.0f} s ({error}); the next comparison goes on")
        save()
    save()
    if failed:
        raise SystemExit(f"error: {len(failed)} fine-tuning run(s) failed: {', '.join(failed)} (see finetune.json)")
