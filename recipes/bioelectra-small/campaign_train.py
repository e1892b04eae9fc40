"""The campaign's pre-training run on the device: ``data`` (``pretrain build-data`` on the unpacked text),
``train`` (the recipe's hparams for ``--minutes``, launched in
the background under ``supervise``, which goes on eager when a compiled run fails) and ``poll`` (the run's
progress). The command line is ``campaign.py``'s (docs/guides/pretraining-recipe.md)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from campaign_common import (
    HERE,
    HPARAMS,
    REPO,
    log,
    majority_class_warning,
    read_json,
    recipe_case,
    run,
    unpack_compile_cache,
    use_site,
    write_json,
)


def cmd_data(args) -> None:
    use_site(args.work)
    corpus, data = args.work / "corpus", args.work / "data"
    if (data / "build_info.json").is_file():
        log(f"{data} exists: reused")
        return
    procs = args.num_processes or max(1, (os.cpu_count() or 2) - 1)
    run([sys.executable, REPO / "pretrain.py", "build-data", "--corpus-dir", corpus, "--output-dir", data,
         "--vocab-file", args.work / "vocab" / "vocab.txt", "--do-lower-case", "--max-seq-length",
         str(args.max_seq_length), "--num-processes", str(procs), "--seed", "42"])  # fmt: skip
    info = read_json(data / "build_info.json", {})
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "build_info.json", info)
    log(f"examples: {json.dumps({k: v for k, v in info.items() if not isinstance(v, dict | list)})}")


def compile_decision(args) -> tuple[bool, str]:
    """Whether ``train`` runs under ``torch.compile`` (``--compile``): ``on`` / ``off`` as said; ``auto`` when
    ``bench-compiled.json`` shows the recipe's model at least ``--compile-min-speedup`` times its eager speed."""
    if args.compile in ("on", "off"):
        return args.compile == "on", f"--compile {args.compile}"
    case = recipe_case(read_json(args.work / "bench-compiled.json", {}), args.hparams)
    speedup = None if case is None else case.get("speedup_over_eager")
    if speedup is None:
        return False, "eager: no compiled figure of the recipe's model beside an eager one (bench --compile)"
    if speedup < args.compile_min_speedup:
        return False, f"eager: compiled is x{speedup} the eager speed, below x{args.compile_min_speedup}"
    return True, f"compiled: x{speedup} the eager speed"


#: ``max_steps`` of a run whose schedule is fitted to its minutes: an upper bound that no run of minutes reaches
#: (a million steps, ELECTRA-Small's whole run), so the fitted length always decides.
FITTED_MAX_STEPS = 1_000_000


def train_hparams(args) -> dict:
    """The recipe's hparams for a run of ``--minutes`` of training-loop time (``max_train_seconds``: the run
    stops saved when they are spent).

    Without ``--steps`` the schedule is fitted to the minutes (``fit_schedule_to_time``): the run measures
    its own speed, the data path, evaluations and saves included (its first 20 steps, with the compilation,
    left out; the first fit waits for 20 more), and ends where the minutes
    end with its learning rate decayed; the library shortens a warmup longer than a quarter of the run at
    the recipe's peak (:func:`bioelectra.optimization.fit_warmup`). With ``--steps N`` the schedule is N
    steps, its warmup fitted by the same rule here. A continued run (``init-from/``) gets its own short
    re-warmup (``--init-from-warmup``) to the recipe's peak instead. Compiled (:func:`compile_decision`):
    every batch padded to ``max_seq_length``, so that its shape never changes (a new shape means a new
    compilation)."""
    from bioelectra.optimization import fit_warmup

    hp = json.loads(args.hparams.read_text())
    hp.pop("model_size", None)
    compiled, why = compile_decision(args)
    log(f"torch.compile: {why}")
    continued = args.init_from_warmup is not None and (args.work / "init-from").is_dir()
    if continued:
        hp["warmup_steps"] = args.init_from_warmup  # a short re-warmup of a trained model: no cap, no lower peak
    if args.steps:
        hp["max_steps"] = max(1, args.steps)
        if not continued:
            warmup = fit_warmup(hp.get("warmup_steps", 0), hp["max_steps"])
            if warmup != hp.get("warmup_steps", 0):
                hp["warmup_steps"] = warmup
                log(f"warmup fitted to a quarter of the run: {warmup} steps to the recipe's peak {hp['learning_rate']:.3g}")
        plan = f"max_steps {hp['max_steps']} (--steps)"
    else:
        hp["max_steps"] = FITTED_MAX_STEPS
        hp["fit_schedule_to_time"] = True
        plan = f"the schedule fitted to {args.minutes} min at the run's measured speed (max_steps {FITTED_MAX_STEPS:,} a bound)"
    if compiled:
        hp["torch_compile"] = True
        hp["compile_cache"] = str(unpack_compile_cache(getattr(args, "compile_cache", None), args.work))
        length = hp.get("max_seq_length") or read_json(args.work / "data" / "build_info.json", {}).get("max_seq_length")
        if length:
            hp["pad_to_multiple_of"] = int(length)
    hp["max_train_seconds"] = round(args.minutes * 60, 1)
    for key, value in (args.set or []):
        hp[key] = json.loads(value)
    log(f"{plan}, warmup {hp['warmup_steps']}")
    return hp


#: A compiled run that fails is run again eager (:func:`supervise`) only when at least this many seconds of
#: its minutes are left.
FALLBACK_MIN_SECONDS = 60.0


def supervise(cmd: list[str], work: Path, *, call=subprocess.call, clock=time.monotonic) -> dict:
    """Run the ``pretrain train`` command ``cmd`` (whose ``--hparams`` is ``<work>/train-hparams.json``) and
    return ``train-done.json``'s record.

    When a run of the whole step (``train_step`` ``whole`` or ``captured``) fails, and at least
    :data:`FALLBACK_MIN_SECONDS` of its ``max_train_seconds`` are left, it is run once more with the Trainer's
    step (``train_step: trainer``, compiled or not as it was). When a run under ``torch.compile`` fails, and at least :data:`FALLBACK_MIN_SECONDS` of its
    ``max_train_seconds`` are left, it is run once more eager: ``torch_compile`` off, the recipe's padding,
    ``max_train_seconds`` the time left. The same command resumes from the newest complete checkpoint when
    the compiled run saved one, else starts afresh. A compiled run can fail where an eager one would not (a
    torch or device the compilation has not met), and a run on a node with a time limit has no minutes for a
    person to notice and relaunch."""
    hp_file = work / "train-hparams.json"
    started = clock()
    code = call(cmd)
    record: dict = {"returncode": code}
    hp = read_json(hp_file, {})
    left = float(hp.get("max_train_seconds", 0.0)) - (clock() - started)
    whole = hp.get("train_step", "trainer") != "trainer"
    if code != 0 and whole and left >= FALLBACK_MIN_SECONDS:
        # the whole step (train_step whole / captured) failed: the Trainer's own step, compiled as it was, as
        # the runs before it trained
        write_json(hp_file, {**hp, "train_step": "trainer", "max_train_seconds": round(left, 1)})
        log(f"the {hp['train_step']} run failed (exit {code}): running again with the Trainer's step for the {left:.0f} s left")
        record = {"returncode": call(cmd), "whole_step_returncode": code, "fallback": "trainer"}
    elif code != 0 and hp.get("torch_compile") and left >= FALLBACK_MIN_SECONDS:
        recipe = json.loads(HPARAMS.read_text())
        eager = {**hp, "torch_compile": False, "max_train_seconds": round(left, 1)}
        if "pad_to_multiple_of" in recipe:
            eager["pad_to_multiple_of"] = recipe["pad_to_multiple_of"]
        write_json(hp_file, eager)
        log(f"the compiled run failed (exit {code}): running again eager for the {left:.0f} s left")
        record = {"returncode": call(cmd), "compiled_returncode": code, "fallback": "eager"}
    return {**record, "finished": time.time()}


def cmd_supervise(args) -> None:
    """The background process of ``train``: :func:`supervise`, then ``train-done.json``."""
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise SystemExit("error: supervise: no command after --")
    record = supervise(cmd, args.work)
    write_json(args.work / "train-done.json", record)


def cmd_train(args) -> None:
    work = args.work
    use_site(work)
    run_dir = work / "run"
    hp = train_hparams(args)
    write_json(work / "train-hparams.json", hp)
    cmd = [sys.executable, REPO / "pretrain.py", "train", "--data-dir", work / "data", "--output-dir", run_dir,
           "--model-size", json.loads(args.hparams.read_text()).get("model_size", "small"),
           "--hparams", work / "train-hparams.json"]  # fmt: skip
    if (work / "init-from").is_dir():
        cmd += ["--init-from", work / "init-from"]
    cmd = [str(c) for c in cmd]
    (work / "train-done.json").unlink(missing_ok=True)
    if args.foreground:
        write_json(work / "train-done.json", supervise(cmd, work))
        return
    log_file = open(work / "train.log", "ab")
    supervisor = [sys.executable, str(HERE / "campaign.py"), "supervise", "--work", str(work), "--", *cmd]
    proc = subprocess.Popen(supervisor, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True, env=os.environ.copy())
    write_json(work / "train-pid.json", {"pid": proc.pid, "started": time.time(), "command": cmd})
    log(f"pre-training started in the background (pid {proc.pid}); log: {work / 'train.log'}")
    time.sleep(args.check_seconds)
    cmd_poll(argparse.Namespace(work=work, out=args.out, wait=0, lines=5))


def _progress(work: Path, lines: int) -> dict:
    """The run's last ``lines`` training logs and all its evaluations, from the JSON lines the trainer
    appends to ``run/log_history.jsonl`` (the console log in ``train.log`` is wrapped for reading)."""
    from bioelectra.pretraining import LOG_HISTORY_FILE, read_log_history

    history = read_log_history(work / "run" / LOG_HISTORY_FILE)
    evals = [r for r in history if any(k.startswith("eval_") for k in r)]
    steps = [r for r in history if "loss" in r]  # evaluations log eval_loss, not loss
    return {"done": read_json(work / "train-done.json"), "last_logs": steps[-lines:], "evals": evals}


def cmd_poll(args) -> None:
    """Wait up to ``--wait`` seconds for the run to end, then print its progress and, for a run stuck on the
    majority class, :func:`majority_class_warning` (which advises letting it run, so it does not end the wait)."""
    deadline = time.monotonic() + args.wait
    hp = read_json(args.work / "train-hparams.json", {}) or {}
    while True:
        progress = _progress(args.work, args.lines)
        if progress["done"] or time.monotonic() >= deadline:
            break
        time.sleep(min(5, max(1, deadline - time.monotonic())))
    fitted = read_json(args.work / "run" / "fitted_schedule.json", {}) or {}  # the schedule fitted to the minutes
    warning = majority_class_warning(
        progress["evals"], fitted.get("peak_learning_rate", hp.get("learning_rate")), fitted.get("warmup_steps", hp.get("warmup_steps"))
    )
    if fitted:
        print("schedule", json.dumps(fitted))
    for record in progress["last_logs"]:
        print(json.dumps(record))
    for record in progress["evals"]:
        keep = ("step", "eval_masked_lm_accuracy", "eval_disc_auc", "eval_disc_recall", "eval_disc_precision",
                "eval_disc_loss", "eval_disc_attention_entropy")  # fmt: skip
        print("eval", json.dumps({k: record[k] for k in keep if k in record}))
    if warning:
        print(warning)
    print("done" if progress["done"] else "running", json.dumps(progress["done"]))
    if progress["done"] and progress["done"].get("returncode"):
        tail = (args.work / "train.log").read_text(errors="replace").splitlines()[-30:]
        print("\n".join(tail))
