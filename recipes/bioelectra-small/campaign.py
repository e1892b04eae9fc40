"""bioelectra-small on a lent GPU: one script, one stage per device call (see RUNBOOK.md beside it).

Stages (each ``python recipes/bioelectra-small/campaign.py STAGE ...``):

- ``pack`` (here, on the CPU): the pre-training text (``recipes/shared_corpus.py --subset all --exclude
  pubmedqa-pqal``), an uncased WordPiece vocabulary trained on it, the BC5CDR fine-tuning sets and the
  Python 3.12 wheels the GPU machine lacks, compressed into packs that each travel with one device call
  beside the checkout (``.campaign/pack-1``, ``pack-2``, ...; ``--pack-mib``). ``--init-from`` an earlier
  export: its two networks in bfloat16 and its vocabulary instead of a new one.
- ``setup`` (device): install the wheels, unpack the packs given, record the machine (GPU, versions, the
  measured bf16 matmul rate and copy bandwidth) in ``$OUT/env.json``.
- ``bench`` (device): ``bench/pretrain_throughput.py`` on the three ELECTRA cases and this recipe's model,
  each beside the naive fp32 eager loop, each profiled: ``$OUT/bench.json``; with
  ``--compile``, the recipe's model (or ``--cases``) under ``torch.compile``, added to
  ``$OUT/bench-compiled.json``.
- ``data`` (device): ``pretrain build-data`` over the unpacked text on every core.
- ``train`` (device): launch ``pretrain train`` in the background (a new session, so it outlives the call)
  for ``--minutes`` of training: its schedule fitted to them as it goes (``fit_schedule_to_time``: the run
  measures its own speed and ends, saved, with its learning rate decayed, when the minutes are spent);
  ``--compile on`` trains under ``torch.compile`` and, if that run fails, eager for the minutes left
  (``supervise``); ``auto`` compiles when the compiled bench showed it faster.
- ``poll`` (device): wait (at most ``--wait`` seconds) and print the run's progress and metrics (from the
  run's ``log_history.jsonl``).
- ``collect`` (device): float32 export of generator + discriminator, pre-training metrics, logs: one tar in
  pieces of at most 15 MiB under ``$OUT`` (``cat results.tar.part-* | tar x`` here).
- ``finetune-eval`` (device, or here afterwards): the learning rate of ``finetune``'s defaults for
  bioelectra-small (chosen on NCBI-disease development F1), then the comparisons (bioelectra-small against
  its untrained twin, ...) in order of priority while ``--budget-seconds`` last, and the fine-tuning speed
  of an ELECTRA-Base-sized model.
- ``ship``, ``report`` (here): the brought-back discriminator as the package's float16 model; the
  brought-back figures as the Markdown tables of its model card and the README (throughput included), and
  the card's draft (``campaign_card.py``).

Every stage reads and writes under ``--work`` (default ``work/bioelectra-small``; on the device a folder
that lives as long as the machine, e.g. ``/tmp/bes``) and writes what must come back under ``--out``
(default ``$OUT``, else ``<work>/out``). ``tests/test_campaign.py`` runs every stage on the CPU with a tiny
configuration, ``$OUT`` replaced by a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the campaign's sibling modules

from campaign_common import (  # noqa: E402
    CHUNK_BYTES,
    DEFAULT_CORPUS,
    DEFAULT_NER,
    HPARAMS,
    REPO,
    log,
    majority_class_warning,
    read_json,
    run,
    use_site,
    write_json,
)  # fmt: skip
from campaign_finetune import (  # noqa: E402, F401
    BIO_ELECTRA_ROW,
    DEFAULTS_ROW,
    LEARNING_RATE_CANDIDATES,
    LEARNING_RATE_ROW,
    SPEED_ROW,
    chosen_learning_rate,
    cmd_finetune_eval,
    finetune_queue,
    rate_name,
)  # fmt: skip
from campaign_here import (  # noqa: E402, F401
    bf16_copy,
    cmd_pack,
    cmd_report,
    cmd_ship,
    split_documents,
    travelling_bytes,
    xz_compress,
)  # fmt: skip

PIECE_BYTES = 15 * 2**20  # size of a returned tar piece (the device returns files of at most 16 MiB)


def machine_report() -> dict:
    """The machine for ``env.json``: versions, and on CUDA the device, its bf16 matmul rate and copy bandwidth.
    A measurement that raises is reported under ``cuda_error`` rather than raised, so that ``setup`` still
    writes ``env.json`` and the stages after it still run (they say for themselves whether the GPU works)."""
    import torch

    report = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cpus": os.cpu_count(),
        "device": "cpu",
    }
    try:
        import transformers

        report["transformers"] = transformers.__version__
    except ImportError:
        pass
    if not torch.cuda.is_available():
        return report
    report["device"] = "cuda"  # named below
    try:
        dev = torch.device("cuda")
        report["device"] = torch.cuda.get_device_name(dev)
        props = torch.cuda.get_device_properties(dev)
        report["multiprocessors"] = props.multi_processor_count
        report["memory_bytes"] = props.total_memory
        report["bf16_supported"] = torch.cuda.is_bf16_supported()
        sys.path.insert(0, str(REPO / "bench"))
        from pretrain_throughput import measured_matmul_flops

        report["measured_bf16_matmul_flops"] = round(measured_matmul_flops(dev), -9)
        x = torch.empty(2**30, dtype=torch.uint8, device=dev)
        y = torch.empty_like(x)
        y.copy_(x)
        torch.cuda.synchronize(dev)
        start = time.perf_counter()
        for _ in range(10):
            y.copy_(x)
        torch.cuda.synchronize(dev)
        report["device_copy_bytes_per_second"] = round(2 * 10 * x.numel() / (time.perf_counter() - start), -9)
    except Exception as exc:  # noqa: BLE001 - reported in env.json
        report["cuda_error"] = f"{type(exc).__name__}: {exc}"
    return report


def cmd_setup(args) -> None:
    work, out = args.work, args.out
    work.mkdir(parents=True, exist_ok=True)
    for pack in args.pack:
        if not pack.is_dir():
            raise SystemExit(f"error: {pack}: no such pack folder (run the pack stage here and carry it)")
        wheels = pack / "wheels"
        if wheels.is_dir() and not args.skip_wheels:
            run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile",
                 "--upgrade", "--target", work / "site", *sorted(wheels.glob("*.whl"))])  # fmt: skip
        for name in ("vocab", "init-from"):
            if (pack / name).is_dir():
                shutil.copytree(pack / name, work / name, dirs_exist_ok=True)
        if (pack / "ner.tar.xz").is_file():
            with tarfile.open(pack / "ner.tar.xz") as tar:
                tar.extractall(work / "ner", filter="data")
        corpus = work / "corpus"
        corpus.mkdir(exist_ok=True)
        for chunk in sorted(pack.glob("*.txt.xz")):
            target = corpus / chunk.name.removesuffix(".xz")
            if not target.is_file():
                tmp = target.with_name(f".{target.name}.tmp")
                with open(tmp, "wb") as fh:
                    subprocess.run(["xz", "-d", "-T0", "-c", chunk], stdout=fh, check=True)
                tmp.replace(target)
        if (pack / "manifest.json").is_file():
            shutil.copy2(pack / "manifest.json", work / "manifest.json")
        log(f"unpacked {pack}")
    use_site(work)
    report = machine_report()
    corpus_files = sorted((work / "corpus").glob("*.txt")) if (work / "corpus").is_dir() else []
    report["corpus_files"] = len(corpus_files)
    report["corpus_bytes"] = sum(p.stat().st_size for p in corpus_files)
    manifest = read_json(work / "manifest.json", {})
    report["corpus_chunks_expected"] = len(manifest.get("chunks", []))
    try:  # what build-data, pretrain train and finetune need beyond the image: a real round trip
        import tempfile

        import datasets
        import pyarrow
        import seqeval.metrics

        report["datasets"], report["pyarrow"] = datasets.__version__, pyarrow.__version__
        with tempfile.TemporaryDirectory() as tmp:
            datasets.Dataset.from_dict({"input_ids": [[2, 7, 3]]}).save_to_disk(tmp)
            assert datasets.load_from_disk(tmp)[0]["input_ids"] == [2, 7, 3]
        assert seqeval.metrics.f1_score([["B-X", "O"]], [["B-X", "O"]]) == 1.0
    except Exception as exc:  # noqa: BLE001 - reported, so the next call can carry pack-pyarrow
        report["missing"] = f"{type(exc).__name__}: {exc} (pyarrow too old for datasets? carry .campaign/pack-pyarrow)"
    write_json(out / "env.json", report)
    print(json.dumps(report, indent=2))


def bench_cases(hparams: Path, *, compiled: bool = False) -> str:
    """The bench's cases: the three ELECTRA cases of issue 14, then the recipe's model; compiled, the recipe's
    model only (the figure ``train --compile auto`` decides on; each compilation takes a minute or more of
    device time; ``--cases small:128:128`` adds ELECTRA-Small to ``bench-compiled.json`` later)."""
    recipe = f"{hparams}:128:{json.loads(hparams.read_text()).get('per_device_train_batch_size', 128)}"
    return recipe if compiled else f"small:128:128,base:128:128,base:512:32,{recipe}"


def _case_size(size: str) -> str:
    """A case's size as one spelling: an hparams file by its resolved path (from the repository root, where
    the stages run), a preset name as it is."""
    return str((REPO / size).resolve()) if str(size).endswith(".json") else str(size)


def recipe_case(report: dict, hparams: Path) -> dict | None:
    """The recipe model's case in a bench report when its optimized loop ran, else None."""
    return next(
        (c for c in report.get("cases", [])
         if _case_size(c["size"]) == _case_size(str(hparams)) and "error" not in c.get("optimized", {"error": "absent"})),
        None,
    )  # fmt: skip


def _same_case(a: dict, b: dict) -> bool:
    return (_case_size(a["size"]), a["seq_len"], a["batch_size"]) == (_case_size(b["size"]), b["seq_len"], b["batch_size"])


def cmd_bench(args) -> None:
    """``bench/pretrain_throughput.py`` into ``bench.json`` (eager, beside the naive loop), or with
    ``--compile`` into ``bench-compiled.json`` (``torch.compile``, no naive loop; each case's eager figure from
    ``bench.json`` beside it when that ran first). The bench writes its report after every case, so when it
    fails the cases it finished still reach ``$OUT``, with the failure under ``error``. A failed eager bench
    then raises (after the copy); a failed compiled bench is reported, not raised: it is the optional stage
    of the campaign."""
    use_site(args.work)
    cases = args.cases or bench_cases(args.hparams, compiled=args.compile)
    name = "bench-compiled.json" if args.compile else "bench.json"
    # compiled benches add up: a later call's cases join (or replace) the earlier ones in bench-compiled.json
    previous = read_json(args.work / name, {}) if args.compile else {}
    fresh = args.work / f"{Path(name).stem}-run.json"  # this run's report alone, however far it got
    fresh.unlink(missing_ok=True)
    # in the order given: issue 14's three ELECTRA cases first, measured even if a later case fails or the
    # call's `timeout` cuts the bench short (train needs no bench: it fits its schedule to its minutes)
    cmd = [sys.executable, REPO / "bench" / "pretrain_throughput.py", "--cases", cases,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--matmul", "--profile", str(args.profile),
           "--output", fresh]  # fmt: skip
    if args.compile:
        cmd += ["--compile", "--no-baseline"]
    if args.batch_size:
        cmd += ["--batch-size", str(args.batch_size)]
    if args.layers:
        cmd += ["--layers", str(args.layers)]
    failure = None
    try:
        run(cmd, stdout=subprocess.DEVNULL if args.quiet else None, timeout=args.timeout)
    except SystemExit as exc:
        failure = f"{cases}: {exc}"
        log(f"{'compiled ' if args.compile else ''}bench failed ({exc}); "
            + ("the eager figures in bench.json stand" if args.compile else "the cases it finished are kept"))  # fmt: skip
    report = read_json(fresh, {"cases": []})
    fresh.unlink(missing_ok=True)
    if failure is not None:
        report["error"] = failure
    eager = read_json(args.work / "bench.json", {}) if args.compile else {}
    for case in report["cases"]:
        opt = case.get("optimized", {})
        same = next((c for c in eager.get("cases", []) if _same_case(c, case)), None)
        if same and "error" not in opt and "error" not in same.get("optimized", {}):
            case["eager_steps_per_second"] = same["optimized"]["steps_per_second"]
            case["speedup_over_eager"] = round(opt["steps_per_second"] / case["eager_steps_per_second"], 3)
    if args.compile:
        kept = [c for c in previous.get("cases", []) if not any(_same_case(c, n) for n in report["cases"])]
        report = {**previous, **report, "cases": kept + report["cases"]}
        if failure is None:
            report.pop("error", None)  # an earlier call's failure, now run again
    write_json(args.work / name, report)
    write_json(args.out / name, report)
    for case in report["cases"]:
        opt, naive = case.get("optimized", {}), case.get("naive", {})
        versus = (f"vs eager {case.get('eager_steps_per_second')}; x{case.get('speedup_over_eager')}" if args.compile
                  else f"vs naive {naive.get('steps_per_second')}; x{case.get('speedup')}")  # fmt: skip
        log(f"{case['size']} seq {case['seq_len']} batch {case['batch_size']}: "
            f"{opt.get('steps_per_second', opt.get('error'))} steps/s ({opt.get('sequences_per_second')} seq/s, mfu "
            f"{opt.get('mfu_measured', opt.get('mfu'))}) {versus}")  # fmt: skip
    if failure is not None and not args.compile:
        raise SystemExit(f"error: eager bench failed: {failure} (the cases it finished are in {args.out / name})")


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


#: ``max_steps`` of a run whose schedule is fitted to its minutes: an upper bound that no lease reaches (a
#: million steps, ELECTRA-Small's whole run), so the fitted length always decides.
FITTED_MAX_STEPS = 1_000_000


def train_hparams(args) -> dict:
    """The recipe's hparams for a run of ``--minutes`` of training-loop time (``max_train_seconds``: the run
    stops saved when they are spent).

    Without ``--steps`` the schedule is fitted to the minutes (``fit_schedule_to_time``): the run measures
    its own speed, the compilation, data path, evaluations and saves included, and ends where the minutes
    end with its learning rate decayed; the library shortens a warmup longer than a quarter of the run at
    the recipe's slope (:func:`bioelectra.optimization.fit_warmup`). With ``--steps N`` the schedule is N
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
            # A shorter warmup to the same peak is a steeper slope, and the slope sets the learning rate at
            # which the generator reaches the unigram stage: the majority-class stall (RUNBOOK). Keep the slope.
            warmup, scale = fit_warmup(hp.get("warmup_steps", 0), hp["max_steps"])
            if scale != 1.0:
                hp["warmup_steps"], hp["learning_rate"] = warmup, hp["learning_rate"] * scale
                log(f"warmup fitted to a quarter of the run: {warmup} steps to a peak of {hp['learning_rate']:.3g}, the recipe's slope")
        plan = f"max_steps {hp['max_steps']} (--steps)"
    else:
        hp["max_steps"] = FITTED_MAX_STEPS
        hp["fit_schedule_to_time"] = True
        plan = f"the schedule fitted to {args.minutes} min at the run's measured speed (max_steps {FITTED_MAX_STEPS:,} a bound)"
    if compiled:
        hp["torch_compile"] = True
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

    When a run under ``torch.compile`` fails, and at least :data:`FALLBACK_MIN_SECONDS` of its
    ``max_train_seconds`` are left, it is run once more eager: ``torch_compile`` off, the recipe's padding,
    ``max_train_seconds`` the time left. The same command resumes from the newest complete checkpoint when
    the compiled run saved one, else starts afresh. The compilation has never run on the lent GPU before
    (RUNBOOK), and a lease has no minutes for a person to notice and relaunch."""
    hp_file = work / "train-hparams.json"
    started = clock()
    code = call(cmd)
    record: dict = {"returncode": code}
    hp = read_json(hp_file, {})
    left = float(hp.get("max_train_seconds", 0.0)) - (clock() - started)
    if code != 0 and hp.get("torch_compile") and left >= FALLBACK_MIN_SECONDS:
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
    supervisor = [sys.executable, str(Path(__file__).resolve()), "supervise", "--work", str(work), "--", *cmd]
    proc = subprocess.Popen(supervisor, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True, env=os.environ.copy())
    write_json(work / "train-pid.json", {"pid": proc.pid, "started": time.time(), "command": cmd})
    log(f"pre-training started in the background (pid {proc.pid}); log: {work / 'train.log'}")
    time.sleep(args.check_seconds)
    cmd_poll(argparse.Namespace(work=work, out=args.out, wait=0, lines=5))


def _progress(work: Path, lines: int) -> dict:
    """The run's last ``lines`` training logs and all its evaluations, from the JSON lines the trainer
    appends to ``run/log_history.jsonl`` (the console log in ``train.log`` is wrapped for reading)."""
    from bioelectra.training import LOG_HISTORY_FILE, read_log_history

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


def tar_pieces(sources: list[tuple[Path, str]], out: Path, name: str) -> list[str]:
    """One tar of ``sources`` (path, name inside) split into pieces of at most :data:`PIECE_BYTES`."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{name}.tar"
    with tarfile.open(tmp, "w") as tar:
        for path, arcname in sources:
            if path.exists():
                tar.add(path, arcname=arcname)
    pieces = []
    with open(tmp, "rb") as fh:
        i = 0
        while chunk := fh.read(PIECE_BYTES):
            piece = out / f"{name}.tar.part-{i:02d}"
            piece.write_bytes(chunk)
            pieces.append(piece.name)
            i += 1
    tmp.unlink()
    return pieces


def cmd_collect(args) -> None:
    """The run's newest complete checkpoint exported (float32, both networks), then evaluated, then packed with
    the logs, metrics and benches into ``results.tar.part-*`` in ``$OUT``. The export comes first and an
    evaluation that fails is written into ``collect.json`` (``eval_error``) rather than raised: the weights
    are what the session exists for, and the CPU can evaluate them afterwards."""
    work, out = args.work, args.out
    use_site(work)
    run_dir, export = work / "run", work / "export"
    if export.exists():
        shutil.rmtree(export)
    run([sys.executable, REPO / "pretrain.py", "export", "--model-dir", run_dir, "--output-dir", export, "--dtype", "float32"])
    eval_error = None
    (work / "eval.json").unlink(missing_ok=True)  # an earlier collect's
    try:
        run([sys.executable, REPO / "pretrain.py", "eval", "--model-dir", run_dir, "--output", work / "eval.json"])
    except SystemExit as exc:
        eval_error = str(exc)
        log(f"the evaluation failed ({exc}); the export is packed without it")
    state = sorted(run_dir.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1]))
    sources = [
        (export, "export"),
        (work / "eval.json", "eval.json"),
        (work / "train-hparams.json", "train-hparams.json"),
        (run_dir / "hparams.json", "run-hparams.json"),
        (run_dir / "eval_results.json", "eval_results.json"),
        (run_dir / "fitted_schedule.json", "fitted_schedule.json"),
        (work / "train-done.json", "train-done.json"),
        (work / "train.log", "train.log"),
        (run_dir / "log_history.jsonl", "log_history.jsonl"),
        (work / "bench.json", "bench.json"),
        (work / "bench-compiled.json", "bench-compiled.json"),
        (work / "manifest.json", "manifest.json"),
        (work / "data" / "build_info.json", "build_info.json"),
    ]
    if state:
        sources.append((state[-1], "trainer_state.json"))
    pieces = tar_pieces(sources, out, "results")
    summary = {"pieces": pieces, "eval": read_json(work / "eval.json"), "done": read_json(work / "train-done.json")}
    if eval_error is not None:
        summary["eval_error"] = eval_error
    write_json(out / "collect.json", summary)
    log(f"{len(pieces)} piece(s) in {out}: cat results.tar.part-* | tar x")


def positive_rate(text: str) -> float:
    """argparse type of a learning rate: a float above 0 (a rate of 0 or below would only fail inside finetune)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 3e-4, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a learning rate above 0, got {text}")
    return value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="stage", required=True)

    def stage(name: str, fn, help_: str):
        p = sub.add_parser(name, help=help_)
        p.set_defaults(fn=fn)
        p.add_argument("--work", type=Path, default=REPO / "work" / "bioelectra-small")
        p.add_argument("--out", type=Path, default=Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
        p.add_argument("--hparams", type=Path, default=HPARAMS)
        return p

    p = stage("pack", cmd_pack, "corpus, vocabulary, wheels and NER sets into packs (CPU, here)")
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    p.add_argument("--corpus-text", type=Path, default=None, help="plain text in build-data's format instead of --corpus")
    p.add_argument("--ner", type=Path, default=DEFAULT_NER)
    p.add_argument("--dest", type=Path, default=REPO / ".campaign")
    p.add_argument("--vocab-size", type=int, default=30522)
    p.add_argument("--pack-mib", type=float, default=None,
                   help="MiB per pack (default: the 64 MiB of a call less this checkout's travelling files and 2 MiB)")  # fmt: skip
    p.add_argument("--chunk-bytes", type=int, default=CHUNK_BYTES)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--no-wheels", dest="wheels", action="store_false")
    p.add_argument("--allow-unread-folders", action="store_true", help="pack although a corpus folder has no reader")
    p.add_argument("--init-from", type=Path, default=None,
                   help="an export (discriminator/ + generator/) to continue from: packed in bfloat16, with its vocabulary")  # fmt: skip

    p = stage("setup", cmd_setup, "install wheels, unpack packs, record the machine (device)")
    p.add_argument("--pack", type=Path, action="append", default=[])
    p.add_argument("--skip-wheels", action="store_true", help="a rehearsal where the packages are installed already")

    p = stage("bench", cmd_bench, "pre-training throughput, ours against the naive loop (device)")
    p.add_argument("--cases", default=None)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--profile", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--compile", action="store_true", help="torch.compile: bench-compiled.json beside bench.json")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds: stop the bench then, keeping (and bringing back) the cases it finished")  # fmt: skip
    p.add_argument("--quiet", action="store_true")

    p = stage("data", cmd_data, "build-data on the unpacked corpus (device)")
    p.add_argument("--num-processes", type=int, default=None)
    p.add_argument("--max-seq-length", type=int, default=128)

    p = stage("train", cmd_train, "launch pre-training in the background (device)")
    p.add_argument("--minutes", type=float, required=True, help="wall-clock training budget")
    p.add_argument("--steps", type=int, default=None, help="max_steps (default: the schedule fitted to --minutes as the run goes)")
    p.add_argument("--compile", choices=("auto", "on", "off"), default="off",
                   help="torch.compile the run; auto: when bench-compiled.json shows the gain below")  # fmt: skip
    p.add_argument("--compile-min-speedup", type=float, default=1.2)
    p.add_argument("--init-from-warmup", type=int, default=500, help="warmup steps when continuing from init-from/")
    p.add_argument("--set", nargs=2, action="append", metavar=("KEY", "JSON"), help="override one hparam")
    p.add_argument("--foreground", action="store_true")
    p.add_argument("--check-seconds", type=float, default=60.0, help="wait this long, then show the first logs")

    p = stage("supervise", cmd_supervise, "run a pretrain train command, eager again if compiled fails (train's background process)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the pretrain train command")

    p = stage("poll", cmd_poll, "wait for the run and print its progress (device)")
    p.add_argument("--wait", type=float, default=540.0)
    p.add_argument("--lines", type=int, default=3)

    stage("collect", cmd_collect, "metrics, export and logs into $OUT (device)")

    p = stage("finetune-eval", cmd_finetune_eval, "fine-tuning comparisons within a time budget (device)")
    p.add_argument("--budget-seconds", type=float, default=300.0)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--ner", type=Path, default=None,
                   help="folder of the BC5CDR sets (default: <work>/ner from pack 1, else ../shared/data/ner)")
    p.add_argument("--learning-rate", type=positive_rate, default=None,
                   help="the rate of the finetune's-defaults runs (default: chosen by the lr-* runs on NCBI-disease dev F1)")  # fmt: skip
    p.add_argument("--extra", default="", help="more finetune options for every run, one string: --extra='--max-steps 2'")
    p.add_argument("--quiet", action="store_true")

    p = stage("ship", cmd_ship, "a brought-back export as the package's float16 model (CPU, here)")
    p.add_argument("--export", type=Path, required=True, help="the export/ folder of the results tar")
    p.add_argument("--target", type=Path, default=REPO / "bioelectra" / "assets" / "models" / "bioelectra-small")
    p.add_argument("--max-mib", type=float, default=32.0)

    p = stage("report", cmd_report, "the brought-back figures as Markdown tables: report.md, and model-card.md, the card's draft (CPU, here)")
    p.add_argument("--results", type=Path, required=True, help="the unpacked results tar")
    p.add_argument("--finetune", type=Path, action="append", default=None,
                   help="a finetune.json (repeatable, later ones win; default: the one in --results)")  # fmt: skip

    args = parser.parse_args(argv)
    args.work = args.work.resolve()
    if args.out is None:
        args.out = args.work / "out"
    args.out = args.out.resolve()
    args.hparams = args.hparams.resolve()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args.fn(args)


if __name__ == "__main__":
    main()
