"""The campaign's fine-tuning comparisons on the device (``campaign.py finetune-eval``): bioelectra-small
against its untrained twin on the NER sets, Bio-ELECTRA's protocol, and the fine-tuning time of an
ELECTRA-Base-sized model, in order of priority while a time budget lasts."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time

from campaign_common import NER_SETS, REPO, log, read_json, run, use_site, write_json

#: The rows of the fine-tuning comparison (``report`` groups the runs by them).
DEFAULTS_ROW = "{}, finetune's defaults"
BIO_ELECTRA_ROW = "NCBI-disease, Bio-ELECTRA's protocol (10 epochs at 3e-4)"
SPEED_ROW = "NCBI-disease fine-tuning time, 3 trials x 3 epochs"
DATASET_TITLES = {"ncbi-disease": "NCBI-disease", "bc5cdr-chem": "BC5CDR-chem", "bc5cdr-disease": "BC5CDR-disease"}


def finetune_queue(args) -> list[dict]:
    """The comparisons in order of priority (the first ones matter most if the budget runs out). Each run:
    ``name``, ``args`` (finetune's), ``row`` (what is compared) and ``model`` (``small``, ``twin`` or
    ``base``: an ELECTRA-Base-sized model with random weights, timed only)."""
    model, twin = args.work / "export" / "discriminator", args.work / "twin"
    ner = args.work / "ner"
    common = ["--trials", str(args.trials)]
    protocol = ["--epochs", "10", "--learning-rate", "3e-4"]
    ncbi = DEFAULTS_ROW.format(DATASET_TITLES["ncbi-disease"])
    queue = [
        {"name": "ncbi-small", "row": ncbi, "model": "small", "args": ["--dataset", "ncbi-disease", "--ckpt", model, *common]},
        {"name": "ncbi-twin", "row": ncbi, "model": "twin", "args": ["--dataset", "ncbi-disease", "--ckpt", twin, *common]},
        {"name": "ncbi-small-bio-electra-protocol", "row": BIO_ELECTRA_ROW, "model": "small", "args": ["--dataset", "ncbi-disease", "--ckpt", model, *common, *protocol]},
        {"name": "base-speed", "row": SPEED_ROW, "model": "base", "args": ["--dataset", "ncbi-disease", "--ckpt", "electra-base", *common], "speed": True},
    ]  # fmt: skip
    for name in NER_SETS:
        for which, ckpt in (("small", model), ("twin", twin)):
            if (ner / name).is_dir():
                queue.append({"name": f"{name}-{which}", "row": DEFAULTS_ROW.format(DATASET_TITLES[name]), "model": which,
                              "args": ["--data-dir", ner / name, "--ckpt", ckpt, *common]})  # fmt: skip
    queue.append({"name": "ncbi-twin-bio-electra-protocol", "row": BIO_ELECTRA_ROW, "model": "twin", "args": ["--dataset", "ncbi-disease", "--ckpt", twin, *common, *protocol]})  # fmt: skip
    return queue


def cmd_finetune_eval(args) -> None:
    """The comparisons of :func:`finetune_queue`, in its order, while ``--budget-seconds`` last (a run starts
    only if the previous run's time still fits). The results add up across calls in ``<work>/finetune.json``,
    copied to ``$OUT`` after every run: a comparison measured in an earlier call (call 1's ``base-speed``)
    is not run again (delete that file to measure again). A run that fails is recorded with its ``error``
    and the queue goes on; the stage then exits non-zero."""
    work, out = args.work, args.out
    use_site(work)
    sys.path.insert(0, str(REPO))
    from bioelectra.presets import build_untrained_twin

    model = work / "export" / "discriminator"
    if model.is_dir():  # absent before collect: then only the runs that need no pre-trained model can go
        build_untrained_twin(model, work / "twin", seed=0)
    start = time.monotonic()
    results = read_json(work / "finetune.json", {}) or {}
    results["skipped"] = []  # this call's

    def save() -> None:
        write_json(work / "finetune.json", results)
        write_json(out / "finetune.json", results)

    last_seconds, failed = 0.0, []
    for item in finetune_queue(args):
        name = item["name"]
        if args.only and name not in args.only:
            continue
        if name in results and "error" not in results[name]:
            log(f"{name}: measured in an earlier call ({results[name]['wall_seconds']} s), kept")
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
        run_dir = work / "finetune" / name
        cmd = [sys.executable, REPO / "finetune.py", "--loader", "ner", *item["args"], "--output-dir", run_dir, *shlex.split(args.extra)]
        t0 = time.monotonic()
        try:
            run(cmd, stdout=subprocess.DEVNULL if args.quiet else None)
            error = None
        except SystemExit as exc:  # recorded; the next comparison still runs
            error = str(exc)
        last_seconds = time.monotonic() - t0
        results[name] = {"row": item["row"], "model": item["model"], "command": " ".join(str(c) for c in cmd[2:]),
                         "wall_seconds": round(last_seconds, 1)}  # fmt: skip
        if error is None:
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
