"""bioelectra-small from text to shipped model: one script, one subcommand per stage
(docs/guides/pretraining-recipe.md tells how to run it, on a GPU machine or an offline GPU node).

Stages (each ``python recipes/bioelectra-small/campaign.py STAGE ...``):

- ``pack`` (here, on the CPU): the pre-training text (``recipes/shared_corpus.py --subset all --exclude
  pubmedqa-pqal``), an uncased WordPiece vocabulary trained on it, the BC5CDR fine-tuning sets and the
  Python 3.12 wheels an offline GPU node lacks, compressed into packs that each travel to the node beside
  the checkout (``.campaign/pack-1``, ``pack-2``, ...; ``--pack-mib``). ``--init-from`` an earlier
  export: its two networks in bfloat16 and its vocabulary instead of a new one.
- ``setup`` (device): install the wheels, unpack the packs given, record the machine (GPU, versions, the
  measured bf16 matmul rate and copy bandwidth) in ``env.json`` under ``--out``.
- ``bench`` (device): ``bench/pretrain_throughput.py`` on the three ELECTRA cases and this recipe's model,
  each beside the naive fp32 eager loop, each profiled: ``bench.json``; with
  ``--compile``, the recipe's model (or ``--cases``) under ``torch.compile``, added to
  ``bench-compiled.json``.
- ``step-bench`` (device): the whole training step (``train_step`` ``captured``) measured in one command, its parts
  in order of priority within ``--budget-seconds``: benches eager and compiled (each case's naive, eager and
  captured loops), the captured step's losses against the eager step's, and a short ``pretrain train`` of the
  recipe with it (``campaign_step.py``).
- ``data`` (device): ``pretrain build-data`` over the unpacked text on every core.
- ``train`` (device): launch ``pretrain train`` in the background (a process group of its own, so it outlives the command that started it)
  for ``--minutes`` of training: its schedule fitted to them as it goes (``fit_schedule_to_time``: the run
  measures its own speed and ends, saved, with its learning rate decayed, when the minutes are spent);
  ``--compile on`` trains under ``torch.compile`` and, if that run fails, eager for the minutes left
  (``supervise``); ``auto`` compiles when the compiled bench showed it faster.
- ``poll`` (device): wait (at most ``--wait`` seconds) and print the run's progress and metrics (from the
  run's ``log_history.jsonl``).
- ``collect`` (device): float32 export of generator + discriminator, pre-training metrics, logs: one tar in
  pieces of at most 15 MiB under ``--out`` (``cat results.tar.part-* | tar x`` to unpack).
- ``finetune-eval`` (device, or here afterwards): the learning rate of ``finetune``'s defaults for
  bioelectra-small (chosen on NCBI-disease development F1), then the comparisons (bioelectra-small against
  its untrained twin, ...) in order of priority while ``--budget-seconds`` last, and the fine-tuning speed
  of an ELECTRA-Base-sized model.
- ``ship``, ``report`` (here): the brought-back discriminator as the package's float16 model; the
  brought-back figures as the Markdown tables of its model card and the README (throughput included), and
  the card's draft (``campaign_card.py``).

Every stage reads and writes under ``--work`` (default ``work/bioelectra-small``; on the device a folder
that lives as long as the machine, e.g. ``/tmp/bes``) and writes what must come back under ``--out``
(default: the folder named by the environment variable ``OUT``, else ``<work>/out``). ``tests/test_campaign.py``
runs every stage on the CPU with a tiny configuration, ``--out`` a temporary folder.
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

from campaign_common import (  # noqa: E402, F401
    CHUNK_BYTES,
    COMPILE_CACHE,
    DEFAULT_CORPUS,
    DEFAULT_NER,
    HPARAMS,
    REPO,
    SHIPPED,
    SHIPPED_GENERATOR,
    SHIPPED_INIT_MARKER,
    _case_size,
    _same_case,
    log,
    majority_class_warning,
    read_json,
    recipe_case,
    run,
    shipped_init_from,
    unpack_compile_cache,
    use_site,
    write_json,
)  # fmt: skip
from campaign_finetune import (  # noqa: E402, F401
    BIO_ELECTRA_ROW,
    DEFAULTS_ROW,
    LEARNING_RATE_CANDIDATES,
    LEARNING_RATE_ROW,
    PROBE_ROW,
    SPEED_ROW,
    chosen_learning_rate,
    cmd_finetune_eval,
    finetune_queue,
    rate_name,
)  # fmt: skip
from campaign_here import (  # noqa: E402, F401
    assign_to_packs,
    bf16_copy,
    cmd_pack,
    cmd_ship,
    split_documents,
    travelling_bytes,
    xz_compress,
)  # fmt: skip
from campaign_report import add_report_arguments, cmd_report  # noqa: E402
from campaign_step import add_arguments as step_bench_arguments  # noqa: E402
from campaign_step import cmd_step_bench, train_speed  # noqa: E402, F401
from campaign_train import (  # noqa: E402, F401
    FALLBACK_MIN_SECONDS,
    FITTED_MAX_STEPS,
    cmd_data,
    cmd_poll,
    cmd_supervise,
    cmd_train,
    compile_decision,
    supervise,
    train_hparams,
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
        from pretrain_measure import measured_matmul_flops

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
        if (pack / SHIPPED_INIT_MARKER).is_file():
            log(f"init-from: {', '.join(shipped_init_from(work))} of the checkout's shipped model")
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
    write_json(work / "env.json", report)  # collect packs it: the results then name their device without bench.json
    print(json.dumps(report, indent=2))


def bench_cases(hparams: Path, *, compiled: bool = False) -> str:
    """The bench's cases: the three ELECTRA reference cases (Small 128 x 128, Base 128 x 128 and 512 x 32), then the recipe's model; compiled, the recipe's
    model only (the figure ``train --compile auto`` decides on; each compilation takes a minute or more of
    device time; ``--cases small:128:128`` adds ELECTRA-Small to ``bench-compiled.json`` later)."""
    recipe = f"{hparams}:128:{json.loads(hparams.read_text()).get('per_device_train_batch_size', 128)}"
    return recipe if compiled else f"small:128:128,base:128:128,base:512:32,{recipe}"


def cmd_bench(args) -> None:
    """``bench/pretrain_throughput.py`` into ``bench.json`` (eager, beside the naive loop), or with
    ``--compile`` into ``bench-compiled.json`` (``torch.compile``, no naive loop; each case's eager figure from
    ``bench.json`` beside it when that ran first). The bench writes its report after every case, so when it
    fails the cases it finished still reach ``--out``, with the failure under ``error``. A failed eager bench
    then raises (after the copy); a failed compiled bench is reported, not raised: it is the optional stage
    of the campaign."""
    use_site(args.work)
    cases = args.cases or bench_cases(args.hparams, compiled=args.compile)
    name = "bench-compiled.json" if args.compile else "bench.json"
    # compiled benches add up: a later bench's cases join (or replace) the earlier ones in bench-compiled.json
    previous = read_json(args.work / name, {}) if args.compile else {}
    fresh = args.work / f"{Path(name).stem}-run.json"  # this run's report alone, however far it got
    fresh.unlink(missing_ok=True)
    # in the order given: the three ELECTRA reference cases first, measured even if a later case fails or
    # `--timeout` cuts the bench short (train needs no bench: it fits its schedule to its minutes)
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
    the logs, metrics and benches into ``results.tar.part-*`` in ``--out``. The export comes first and an
    evaluation that fails is written into ``collect.json`` (``eval_error``) rather than raised: the weights
    are what the run exists for, and a CPU can evaluate them afterwards."""
    work, out = args.work, args.out
    use_site(work)
    from bioelectra.compile_records import FIRST_COMPILED_STEP_FILE

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
        (run_dir / FIRST_COMPILED_STEP_FILE, FIRST_COMPILED_STEP_FILE),
        (work / "train-done.json", "train-done.json"),
        (work / "train.log", "train.log"),
        (run_dir / "log_history.jsonl", "log_history.jsonl"),
        (work / "bench.json", "bench.json"),
        (work / "bench-compiled.json", "bench-compiled.json"),
        (work / "manifest.json", "manifest.json"),
        (work / "data" / "build_info.json", "build_info.json"),
        (work / "env.json", "env.json"),
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


def make_parser() -> argparse.ArgumentParser:
    """The campaign's command line: one subcommand per stage, each with the options of its function."""
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
                   help="MiB per pack (default: 64 MiB per transfer less this checkout's travelling files and 2 MiB)")  # fmt: skip
    p.add_argument("--chunk-bytes", type=int, default=CHUNK_BYTES)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--no-wheels", dest="wheels", action="store_false")
    p.add_argument("--wheels-only", action="store_true",
                   help="pack 1 with the wheels alone (no text, vocabulary or NER sets): what the step benchmarks carry")  # fmt: skip
    p.add_argument("--allow-unread-folders", action="store_true", help="pack although a corpus folder has no reader")
    p.add_argument("--init-from", type=Path, default=None,
                   help="an export (discriminator/ + generator/) to continue from: packed in bfloat16, with its vocabulary")  # fmt: skip
    p.add_argument("--init-generator", type=Path, default=None, help="the generator of a discriminator-alone --init-from (default for the shipped model: the one ship kept, where present)")  # fmt: skip

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

    p = stage("step-bench", cmd_step_bench, "the whole training step measured: benches, loss check, a short run (device)")
    step_bench_arguments(p)

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
    p.add_argument("--compile-cache", type=Path, default=COMPILE_CACHE, help="torch.compile's cache (xz or raw) for a compiled run")
    p.add_argument("--set", nargs=2, action="append", metavar=("KEY", "JSON"), help="override one hparam")
    p.add_argument("--foreground", action="store_true")
    p.add_argument("--check-seconds", type=float, default=60.0, help="wait this long, then show the first logs")

    p = stage("supervise", cmd_supervise, "run a pretrain train command, eager again if compiled fails (train's background process)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the pretrain train command")

    p = stage("poll", cmd_poll, "wait for the run and print its progress (device)")
    p.add_argument("--wait", type=float, default=540.0)
    p.add_argument("--lines", type=int, default=3)

    stage("collect", cmd_collect, "metrics, export and logs into --out (device)")

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
    p.add_argument("--target", type=Path, default=SHIPPED)
    p.add_argument("--generator-target", type=Path, default=SHIPPED_GENERATOR,
                   help="where the export's generator goes (float16, beside the recipe: the next continuation's)")  # fmt: skip
    p.add_argument("--max-mib", type=float, default=32.0)

    p = stage("report", cmd_report, "the brought-back figures as Markdown tables: report.md, and model-card.md, the card's draft (CPU, here)")
    add_report_arguments(p)

    return parser


def main(argv: list[str] | None = None) -> None:
    parser = make_parser()
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
