"""The campaign's stages on this CPU: ``pack`` (text, vocabulary, wheels and NER sets into packs that
travel with the device calls) and ``ship`` (a brought-back export as the package's float16 model).
Run them through ``campaign.py pack`` / ``campaign.py ship``."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from campaign_card import NAME, model_card  # noqa: E402
from campaign_common import (  # noqa: E402
    NER_SETS,
    PYARROW_WHEEL,
    REPO,
    SOURCE_ONLY_WHEELS,
    SOURCE_ORDER,
    WHEELS,
    log,
    num,
    read_json,
    run,
    write_json,
)  # fmt: skip
from campaign_finetune import (  # noqa: E402
    LEARNING_RATE_ROW,
    PROBE_ROW,
    PROBE_SCRIPT,
    SPEED_TARGET_SECONDS,
    chosen_learning_rate,
    rate_name,
)


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_shared_corpus():
    return _load("shared_corpus", REPO / "recipes" / "shared_corpus.py")


def split_documents(text_file: Path, chunk_bytes: int):
    """Yield lists of lines of at most about ``chunk_bytes``, cut only at blank lines (document ends)."""
    chunk: list[str] = []
    size = 0
    with open(text_file, encoding="utf-8") as f:
        for line in f:
            chunk.append(line)
            size += len(line)
            if size >= chunk_bytes and not line.strip():
                yield chunk
                chunk, size = [], 0
    if chunk:
        yield chunk


def xz_compress(lines: list[str], target: Path, threads: int) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    with open(tmp, "wb") as fh:
        subprocess.run(
            ["xz", "-9", f"-T{threads}", "-c"], input="".join(lines).encode("utf-8"), stdout=fh, check=True
        )
    tmp.replace(target)


#: What one device call carries, the working tree and the carried packs together (device README, Limits).
CALL_MIB = 64.0

#: Room kept in each call for files written after ``pack`` (notes, a changed script).
MARGIN_MIB = 2.0


def travelling_bytes(repo: Path) -> int:
    """Bytes of the working tree a device call sends besides the carried paths: tracked files and untracked
    ones git does not ignore (device README). With a shipped model in the package it grows by its weights."""
    try:
        names = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                               capture_output=True, check=True).stdout.decode().split("\0")  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"error: {repo}: cannot list what travels with a device call ({exc}): give --pack-mib") from exc
    return sum((repo / n).stat().st_size for n in dict.fromkeys(names) if n and (repo / n).is_file())


def bf16_copy(export: Path, target: Path) -> None:
    """``export``'s ``discriminator/`` and ``generator/`` (``save_pretrained`` folders of any dtype) as
    bfloat16 copies in ``target``, with their tokenizer files: half the bytes of a float32 export, so that a
    continuation fits in pack 1 (issue 14: weights in bf16; ``pretrain train --init-from`` loads float32).
    A discriminator alone (the shipped model; :func:`bioelectra.pretraining.checkpoints.discriminator_alone`)
    becomes ``target/discriminator`` only: ``pretrain train`` then starts the generator anew."""
    import torch
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    from bioelectra.pretraining.checkpoints import discriminator_alone

    alone = discriminator_alone(export)
    parts = [("discriminator", ElectraForPreTraining, alone or export / "discriminator")]
    if alone is None:
        parts.append(("generator", ElectraForMaskedLM, export / "generator"))
    for name, cls, source in parts:
        dest = target / name
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for f in source.iterdir():  # tokenizer files, vocab.txt; the weights and config are written below
            if f.is_file() and not f.name.startswith("model") and f.name != "config.json":
                shutil.copy2(f, dest / f.name)
        model = cls.from_pretrained(str(source), dtype=torch.bfloat16)
        model.config.dtype = "bfloat16"
        model.save_pretrained(str(dest))


def cmd_pack(args) -> None:
    work, dest = args.work, args.dest
    if args.corpus_text is not None:  # text already in build-data's format
        corpus_dir = args.corpus_text
        files = sorted(corpus_dir.glob("*.txt"))
        if not files:
            raise SystemExit(f"error: {corpus_dir}: no .txt files")
        info = {"options": {"corpus_text": str(corpus_dir)}, "documents": {}, "bytes": sum(p.stat().st_size for p in files)}
    else:
        corpus_dir = work / "corpus"
        shared = load_shared_corpus()
        unread = shared.unread_folders(args.corpus) if args.corpus.is_dir() else []
        if unread and not args.allow_unread_folders:
            raise SystemExit(
                f"error: {args.corpus}: no source of recipes/shared_corpus.py reads {', '.join(unread)}: give each a "
                "reader there (SOURCE_FOLDERS, SUBSET_SOURCES; issue 14 asks for all the corpus), or pack without "
                "them with --allow-unread-folders (the manifest lists them)"
            )
        log(f"corpus: {args.corpus} -> {corpus_dir} (subset all, without the benchmarks {', '.join(shared.BENCHMARK_SOURCES)})")
        info = shared.prepare(args.corpus, corpus_dir, subset="all")
        info = {**info, "unread_folders": unread}
    log(f"corpus: {json.dumps(info['documents'])}, {info['bytes']:,} bytes of text")

    vocab_dir = work / "vocab"
    if args.init_from:  # the continued model's own vocabulary: a new build-vocab run need not give the same one
        from bioelectra.pretraining.checkpoints import discriminator_alone

        source = (discriminator_alone(args.init_from) or args.init_from / "discriminator") / "vocab.txt"
        if not source.is_file():
            raise SystemExit(f"error: --init-from {args.init_from}: no {source.relative_to(args.init_from)} "
                             "(expected an export, or a discriminator such as the shipped model)")  # fmt: skip
        if vocab_dir.exists():
            shutil.rmtree(vocab_dir)
        run([sys.executable, REPO / "pretrain.py", "build-vocab", "--vocab-file", source, "--output-dir", vocab_dir,
             "--do-lower-case"])  # fmt: skip
    elif not (vocab_dir / "vocab.txt").is_file():
        run([sys.executable, REPO / "pretrain.py", "build-vocab", "--corpus-dir", corpus_dir,
             "--output-dir", vocab_dir, "--vocab-size", str(args.vocab_size), "--do-lower-case"])  # fmt: skip
    vocab_entries = sum(1 for _ in open(vocab_dir / "vocab.txt", encoding="utf-8"))

    if dest.exists():
        shutil.rmtree(dest)
    chunks = []  # (source, path, text bytes, compressed bytes)
    staging = work / "chunks"
    staging.mkdir(parents=True, exist_ok=True)
    done = read_json(staging / "index.json", {})  # chunk name -> sha256 of its text: compressed once
    for stale in set(p.name for p in staging.glob("*.xz")) - set(done):
        (staging / stale).unlink()
    files = sorted(corpus_dir.glob("*.txt"), key=lambda p: (SOURCE_ORDER.index(p.stem) if p.stem in SOURCE_ORDER else 99, p.name))
    index = {}
    for text_file in files:
        for i, lines in enumerate(split_documents(text_file, args.chunk_bytes)):
            target = staging / f"{text_file.stem}.{i:02d}.txt.xz"
            data = "".join(lines).encode("utf-8")
            digest = hashlib.sha256(data).hexdigest()
            if not (target.is_file() and done.get(target.name) == digest):
                xz_compress(lines, target, args.threads)
            index[target.name] = digest
            chunks.append((text_file.stem, target, len(data), target.stat().st_size))
            log(f"  {target.name}: {chunks[-1][2]:,} -> {chunks[-1][3]:,} bytes")
    for stale in set(done) - set(index):
        (staging / stale).unlink(missing_ok=True)
    write_json(staging / "index.json", index)

    if args.pack_mib is None:
        pack_mib = CALL_MIB - travelling_bytes(REPO) / 2**20 - MARGIN_MIB
        log(f"packs of at most {pack_mib:.1f} MiB ({CALL_MIB:.0f} MiB per call, less this checkout and {MARGIN_MIB} MiB)")
    else:
        pack_mib = args.pack_mib
    limit = pack_mib * 2**20
    pack1_extra = []  # vocab, hparams, NER sets, wheels, init-from: all in pack 1
    (stage1 := work / "pack1-extra").mkdir(exist_ok=True)
    shutil.copytree(vocab_dir, stage1 / "vocab", dirs_exist_ok=True)
    pack1_extra.append(stage1 / "vocab")
    ner_tar = stage1 / "ner.tar.xz"
    present = [n for n in NER_SETS if (args.ner / n).is_dir()]
    with tarfile.open(ner_tar, "w:xz") as tar:
        for name in present:
            for split in ("train.tsv", "devel.tsv", "test.tsv"):
                tar.add(args.ner / name / split, arcname=f"{name}/{split}")
    pack1_extra.append(ner_tar)
    if args.wheels:
        wheels = stage1 / "wheels"
        shutil.rmtree(wheels, ignore_errors=True)
        platforms = [f"--platform={p}" for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "any")]
        run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", wheels, *WHEELS])  # fmt: skip
        run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", wheels, *SOURCE_ONLY_WHEELS])
        pack1_extra.append(wheels)
    if args.init_from:
        bf16_copy(args.init_from, stage1 / "init-from")
        pack1_extra.append(stage1 / "init-from")

    def size_of(p: Path) -> int:
        return p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.rglob("*") if f.is_file())

    packs: list[list[Path]] = [[*pack1_extra]]
    used = [sum(size_of(p) for p in pack1_extra)]
    if used[0] > limit:
        raise SystemExit(f"error: pack 1's fixed part is {used[0]:,} bytes, over the {pack_mib:.1f} MiB of a pack")
    for _, path, _, size in chunks:
        if used[-1] + size > limit:
            packs.append([])
            used.append(0)
        packs[-1].append(path)
        used[-1] += size
    manifest = {
        "corpus": info,
        "vocab_size": vocab_entries,
        "do_lower_case": True,
        "ner_sets": present,
        "wheels": sorted(p.name for p in (stage1 / "wheels").glob("*.whl")) if args.wheels else [],
        "init_from": str(args.init_from) if args.init_from else None,
        "chunks": [{"source": s, "file": p.name, "text_bytes": t, "xz_bytes": c} for s, p, t, c in chunks],
        "packs": [],
    }
    for i, (items, size) in enumerate(zip(packs, used, strict=True), start=1):
        pack = dest / f"pack-{i}"
        pack.mkdir(parents=True)
        for item in items:
            if item.is_dir():
                shutil.copytree(item, pack / item.name)
            else:
                shutil.copy2(item, pack / item.name)
        manifest["packs"].append({"name": pack.name, "bytes": size, "items": sorted(p.name for p in items)})
    if args.wheels:  # datasets 5.2 wants pyarrow >= 24; carried only if setup reports the image's as too old
        run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", dest / "pack-pyarrow" / "wheels",
             PYARROW_WHEEL])  # fmt: skip
    write_json(dest / "manifest.json", manifest)
    shutil.copy2(dest / "manifest.json", dest / "pack-1" / "manifest.json")
    text = sum(c[2] for c in chunks)
    log(f"packed {text:,} bytes of text into {len(packs)} pack(s): " + ", ".join(f"{u / 2**20:.1f} MiB" for u in used))


def cmd_ship(args) -> None:
    """The brought-back float32 discriminator as the package's float16 asset (tokenizer capped at 512)."""
    sys.path.insert(0, str(REPO))
    import torch
    from transformers import AutoTokenizer, ElectraForPreTraining

    from bioelectra.training import write_vocab_txt

    source = args.export / "discriminator"
    target = args.target
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model = ElectraForPreTraining.from_pretrained(str(source), dtype=torch.float32).to(torch.float16)
    model.config.dtype = "float16"
    model.save_pretrained(str(tmp))
    tokenizer = AutoTokenizer.from_pretrained(str(source))
    tokenizer.model_max_length = model.config.max_position_embeddings
    tokenizer.save_pretrained(str(tmp))
    write_vocab_txt(tokenizer, tmp / "vocab.txt")
    size = (tmp / "model.safetensors").stat().st_size
    if size > args.max_mib * 2**20:
        shutil.rmtree(tmp)
        raise SystemExit(f"error: {size:,} bytes of float16 weights, over the {args.max_mib} MiB cap")
    card = target / "README.md"
    if card.is_file():
        shutil.copy2(card, tmp / "README.md")
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)
    log(f"{target}: {size:,} bytes of float16 weights; write or update its model card (README.md)")


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
    from bioelectra.training import LOG_HISTORY_FILE, read_log_history

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


def results_report(results: Path, finetune: dict, continues: list[Path] = ()) -> str:
    """Markdown tables of a brought-back campaign for the model card and the README: the run, the metrics at
    each evaluation, the final metrics, and the fine-tuning comparisons (``finetune-eval``'s runs grouped by
    ``row``). Every figure is read from the files ``collect`` packed (``results``: the unpacked tar) and from
    ``finetune`` (``finetune.json``, merged); a figure that is not there is shown as ``-``. ``continues``:
    the unpacked results of the runs this one continued from (``pretrain train --init-from``), earliest
    first; the run's table then adds a row for each and one with the sums (:func:`_continued_rows`)."""
    sys.path.insert(0, str(REPO))
    from statistics import median_high

    from bioelectra.training import LOG_HISTORY_FILE, read_log_history
    from downstream.benchmark import format_mean_std

    def median(values: list[float]) -> float | None:
        return median_high(values) if values else None

    hp = read_json(results / "run-hparams.json", {}) or {}
    build = read_json(results / "build_info.json", {}) or {}
    manifest = read_json(results / "manifest.json", {}) or {}
    bench = read_json(results / "bench.json", {}) or {}
    fitted = read_json(results / "fitted_schedule.json", {}) or {}  # a schedule fitted to the minutes
    done = read_json(results / "train-done.json", {}) or {}
    history = read_log_history(results / LOG_HISTORY_FILE)
    config = read_json(results / "export" / "discriminator" / "config.json", {}) or {}
    training = [h for h in history if "loss" in h and "steps_per_second" in h]
    evals = [h for h in history if "eval_disc_auc" in h]

    figures = run_figures(results)
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
        ("speed (median of the training logs)", f"{num(median([h['steps_per_second'] for h in training]))} steps/s, "
                                                f"data_wait_fraction {num(median([h.get('data_wait_fraction', 0.0) for h in training]))}"),
        ("optimisation", (f"schedule fitted to {num(fitted.get('max_train_seconds'), ',.0f')} s of training: " if fitted else "")
                         + f"peak learning rate {num(fitted.get('peak_learning_rate', hp.get('learning_rate')), '.3g')}, "
                         f"warmup {num(fitted.get('warmup_steps', hp.get('warmup_steps')))} steps, "
                         f"torch.compile {bool(hp.get('torch_compile'))}"
                         + (f" (the compiled run failed with exit {done['compiled_returncode']}; it went on eager)" if done.get("fallback") else "")
                         + f", untied generator {hp.get('untied_generator', '-')}"),
    ]  # fmt: skip
    if continues:
        rows += _continued_rows(figures, list(continues), train_examples)
    lines += [f"| {k} | {v} |" for k, v in rows]

    keys = ("eval_masked_lm_accuracy", "eval_disc_auc", "eval_disc_precision", "eval_disc_recall", "eval_disc_attention_entropy")
    lines += ["", "## Evaluations during the run", "", "| step | " + " | ".join(k.removeprefix("eval_") for k in keys) + " |",
              "|---:|" + "---:|" * len(keys)]  # fmt: skip
    lines += [f"| {num(h['step'])} | " + " | ".join(num(h.get(k), ".3f") for k in keys) + " |" for h in evals]

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

    if bench.get("cases"):
        throughput = _load("pretrain_report", REPO / "bench" / "pretrain_report.py")
        lines += ["", "## Throughput", "", "`bench/pretrain_throughput.py` (call 1; the compiled speeds from `bench-compiled.json`, "
                  "calls 2 and 5): ours beside a naive fp32 eager loop in the same run, synthetic batches.", "",
                  throughput.markdown(bench, read_json(results / "bench-compiled.json", None)).rstrip()]  # fmt: skip

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
    return "\n".join(lines)


def cmd_report(args) -> None:
    """``results_report`` of ``--results`` into ``report.md`` there (and printed), and the model card's draft
    into ``model-card.md`` (:func:`campaign_card.model_card`).

    Raises:
        SystemExit: ``--results`` or a ``--continues`` folder holds no ``run-hparams.json`` (not an unpacked
            results tar), or a ``--finetune`` file given is missing.
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
    text = results_report(args.results, finetune, args.continues)
    atomic_write_text(args.results / "report.md", text)
    print(text)
    log(f"written {args.results / 'report.md'}")
    shipped = REPO / "bioelectra" / "assets" / "models" / NAME
    atomic_write_text(args.results / "model-card.md", model_card(args.results, finetune, text, shipped=shipped))
    log(f"written {args.results / 'model-card.md'}: the model card's draft; read it through, then copy it to "
        f"{shipped.relative_to(REPO) / 'README.md'}")
