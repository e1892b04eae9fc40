"""The campaign's stages on this CPU: ``pack`` (text, vocabulary, wheels and NER sets into packs that
travel to an offline GPU node beside the checkout) and ``ship`` (a brought-back export as the package's
float16 model).
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

from campaign_common import (  # noqa: E402
    NER_SETS,
    PYARROW_WHEEL,
    REPO,
    SHIPPED,
    SHIPPED_GENERATOR,
    SHIPPED_INIT_MARKER,
    SOURCE_ONLY_WHEELS,
    SOURCE_ORDER,
    WHEELS,
    log,
    read_json,
    run,
    write_json,
)  # fmt: skip


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


#: The default transfer limit to a GPU node: one pack and the working tree together at most this size.
TRANSFER_MIB = 64.0

#: Room kept in each transfer for files written after ``pack`` (notes, a changed script).
MARGIN_MIB = 2.0


def travelling_bytes(repo: Path) -> int:
    """Bytes of the working tree that travel to the node beside a pack: tracked files and untracked
    ones git does not ignore (device README). With a shipped model in the package it grows by its weights."""
    try:
        names = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                               capture_output=True, check=True).stdout.decode().split("\0")  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"error: {repo}: cannot list what travels with the checkout ({exc}): give --pack-mib") from exc
    return sum((repo / n).stat().st_size for n in dict.fromkeys(names) if n and (repo / n).is_file())


def bf16_copy(export: Path, target: Path, generator: Path | None = None) -> None:
    """``export``'s ``discriminator/`` and ``generator/`` (``save_pretrained`` folders of any dtype) as
    bfloat16 copies in ``target``, with their tokenizer files: half the bytes of a float32 export, so that a
    continuation fits in pack 1 (``pretrain train --init-from`` loads them as float32).
    A discriminator alone (the shipped model; :func:`bioelectra.pretraining.checkpoints.discriminator_alone`)
    takes its generator from ``generator`` (the one ``ship`` kept beside the recipe) when that folder is
    given and exists; without it ``target`` holds ``discriminator/`` only and ``pretrain train`` starts the
    generator anew."""
    import torch
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    from bioelectra.pretraining.checkpoints import discriminator_alone

    alone = discriminator_alone(export)
    parts = [("discriminator", ElectraForPreTraining, alone or export / "discriminator")]
    if alone is None:
        parts.append(("generator", ElectraForMaskedLM, export / "generator"))
    elif generator is not None and (generator / "config.json").is_file():
        parts.append(("generator", ElectraForMaskedLM, generator))
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


def _pack_corpus(args, work: Path) -> tuple[Path, dict]:
    """``pack``'s text: ``--corpus-text`` as it is, else ``--corpus`` through ``recipes/shared_corpus.py``
    (subset all, the benchmarks left out) into ``work/corpus``; ``(the text's folder, its summary)``."""
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
                "reader there (SOURCE_FOLDERS, SUBSET_SOURCES; the recipe pre-trains on all of the corpus), or pack without "
                "them with --allow-unread-folders (the manifest lists them)"
            )
        log(f"corpus: {args.corpus} -> {corpus_dir} (subset all, without the benchmarks {', '.join(shared.BENCHMARK_SOURCES)})")
        info = shared.prepare(args.corpus, corpus_dir, subset="all")
        info = {**info, "unread_folders": unread}
    log(f"corpus: {json.dumps(info['documents'])}, {info['bytes']:,} bytes of text")
    return corpus_dir, info


def _pack_vocab(args, work: Path, corpus_dir: Path) -> tuple[Path, int]:
    """``pack``'s vocabulary in ``work/vocab``: ``--init-from``'s own, else one built from the text (once);
    ``(its folder, its entries)``."""
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
    return vocab_dir, vocab_entries


def _compressed_chunks(args, work: Path, corpus_dir: Path) -> list[tuple[str, Path, int, int]]:
    """The text files cut at document ends into chunks of about ``--chunk-bytes`` and xz-compressed in
    ``work/chunks`` (a chunk whose text is unchanged is not compressed again):
    ``(source, path, text bytes, compressed bytes)`` of each, in the order of ``SOURCE_ORDER``."""
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
    return chunks


def assign_to_packs(fixed: int, sizes: list[int], limit: int) -> tuple[list[list[int]], list[int]]:
    """The chunks' places in packs of at most ``limit`` bytes, pack 1 holding ``fixed`` bytes already: first fit
    in the chunks' order (each into the first pack with room). The order is :data:`SOURCE_ORDER`'s, the
    abstracts first, and first fit keeps them in pack 1; a small chunk later in the order still fills a gap an
    earlier pack left, where filling one pack after the other opens a new one at the first chunk that does not
    fit. Fewer packs are fewer transfers to an offline node: the shared corpus's 18 chunks (seven of about 10 MiB)
    took 5 packs of 27.1 MiB filled one after the other, 4 by first fit.

    Returns:
        ``(places, used)``: the chunk indices of each pack, in order, and each pack's bytes.

    Raises:
        SystemExit: a chunk larger than ``limit`` (give a smaller ``--chunk-bytes``).
    """
    places: list[list[int]] = [[]]
    used = [fixed]
    for k, size in enumerate(sizes):
        if size > limit:
            raise SystemExit(f"error: a chunk of {size:,} bytes does not fit a pack of {limit:,}: give a smaller --chunk-bytes")
        room = next((i for i, u in enumerate(used) if u + size <= limit), None)
        if room is None:
            places.append([])
            used.append(0)
            room = len(used) - 1
        places[room].append(k)
        used[room] += size
    return places, used


#: pip's platform tags for the device's image (Linux x86_64, glibc 2.28 or later), most specific first.
WHEEL_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "any")


def _pip_download(target: Path, *specs: str) -> None:
    """``specs`` as wheels for the device's image (CPython 3.12, :data:`WHEEL_PLATFORMS`) into ``target``."""
    run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version",
         "3.12", "--implementation", "cp", *(f"--platform={p}" for p in WHEEL_PLATFORMS), "-d", target, *specs])  # fmt: skip


def _download_wheels(wheels: Path) -> None:
    """The packages the device's image lacks into ``wheels``: :data:`WHEELS` downloaded, :data:`SOURCE_ONLY_WHEELS`
    built here."""
    shutil.rmtree(wheels, ignore_errors=True)
    _pip_download(wheels, *WHEELS)
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", wheels, *SOURCE_ONLY_WHEELS])


def _download_pyarrow(dest: Path) -> None:
    """The pyarrow wheel into ``dest/pack-pyarrow/wheels``: datasets 5.2 wants pyarrow >= 24, so it is carried
    only if ``setup`` reports the image's as too old."""
    _pip_download(dest / "pack-pyarrow" / "wheels", PYARROW_WHEEL)


def _pack_wheels_only(args) -> None:
    """``pack --wheels-only``: pack 1 with the wheels and a manifest alone, no text, vocabulary or NER sets, and
    ``pack-pyarrow``; what benchmarks of the training step carry (they read no text), in seconds
    instead of the 10-15 minutes of the text's compression. Built under a temporary name (removed if a download
    fails) and renamed to ``--dest``, so a failed download leaves the packs there as they were."""
    dest = args.dest
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    pack = tmp / "pack-1"
    try:
        _download_wheels(pack / "wheels")
        _download_pyarrow(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    wheels = sorted(p.name for p in (pack / "wheels").glob("*.whl"))
    size = sum(f.stat().st_size for f in pack.rglob("*") if f.is_file())
    manifest = {"wheels_only": True, "corpus": {}, "wheels": wheels, "chunks": [],
                "packs": [{"name": pack.name, "bytes": size, "items": ["wheels"]}]}  # fmt: skip
    write_json(tmp / "manifest.json", manifest)
    shutil.copy2(tmp / "manifest.json", pack / "manifest.json")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    log(f"packed {len(wheels)} wheels alone into {dest / pack.name} ({size / 2**20:.1f} MiB): no text, vocabulary or NER sets")


def cmd_pack(args) -> None:
    if args.wheels_only:
        if not args.wheels or args.init_from:
            raise SystemExit("error: --wheels-only packs the wheels alone: not with --no-wheels or --init-from")
        _pack_wheels_only(args)
        return
    work, dest = args.work, args.dest
    corpus_dir, info = _pack_corpus(args, work)

    vocab_dir, vocab_entries = _pack_vocab(args, work, corpus_dir)

    if dest.exists():
        shutil.rmtree(dest)
    chunks = _compressed_chunks(args, work, corpus_dir)  # (source, path, text bytes, compressed bytes)

    if args.pack_mib is None:
        pack_mib = TRANSFER_MIB - travelling_bytes(REPO) / 2**20 - MARGIN_MIB
        log(f"packs of at most {pack_mib:.1f} MiB ({TRANSFER_MIB:.0f} MiB per transfer, less this checkout and {MARGIN_MIB} MiB)")
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
        _download_wheels(stage1 / "wheels")
        pack1_extra.append(stage1 / "wheels")
    if args.init_from and args.init_from.resolve() == SHIPPED.resolve() and args.init_generator is None:
        # the shipped discriminator and the generator kept beside the recipe travel with the checkout: pack 1
        # names them (setup copies them into init-from/ there) rather than carrying them a second time
        marker = stage1 / SHIPPED_INIT_MARKER
        parts = ["discriminator", *(["generator"] if (SHIPPED_GENERATOR / "config.json").is_file() else [])]
        marker.write_text(json.dumps({"discriminator": str(SHIPPED.relative_to(REPO)), "parts": parts}) + "\n")
        log(f"init-from: {', '.join(parts)} (the checkout's shipped model, not copied into pack 1)")
        pack1_extra.append(marker)
    elif args.init_from:
        generator = args.init_generator
        if generator is None and args.init_from.resolve() == SHIPPED.resolve():
            generator = SHIPPED_GENERATOR
        bf16_copy(args.init_from, stage1 / "init-from", generator)
        log(f"init-from: {', '.join(sorted(p.name for p in (stage1 / 'init-from').iterdir()))}")
        pack1_extra.append(stage1 / "init-from")

    def size_of(p: Path) -> int:
        return p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.rglob("*") if f.is_file())

    fixed = sum(size_of(p) for p in pack1_extra)
    if fixed > limit:
        raise SystemExit(f"error: pack 1's fixed part is {fixed:,} bytes, over the {pack_mib:.1f} MiB of a pack")
    placed, used = assign_to_packs(fixed, [size for *_, size in chunks], limit)
    packs = [[chunks[k][1] for k in members] for members in placed]
    packs[0][:0] = pack1_extra
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
    if args.wheels:
        _download_pyarrow(dest)
    write_json(dest / "manifest.json", manifest)
    shutil.copy2(dest / "manifest.json", dest / "pack-1" / "manifest.json")
    text = sum(c[2] for c in chunks)
    log(f"packed {text:,} bytes of text into {len(packs)} pack(s): " + ", ".join(f"{u / 2**20:.1f} MiB" for u in used))


def cmd_ship(args) -> None:
    """The brought-back float32 discriminator as the package's float16 asset (tokenizer capped at 512), and the
    export's generator as a float16 ``save_pretrained`` folder at ``--generator-target`` (beside the recipe, not
    in the package): the next ``pack --init-from`` the shipped model continues both networks, not the
    discriminator with a fresh generator. An export without a generator removes a stale one there."""
    sys.path.insert(0, str(REPO))
    import torch
    from transformers import AutoTokenizer, ElectraForPreTraining

    from bioelectra.pretraining import write_vocab_txt

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
    _ship_generator(args.export / "generator", args.generator_target)


def _ship_generator(source: Path, target: Path) -> None:
    """``source`` (an export's ``generator/``) as float16 at ``target``, written under a temporary name; a
    missing ``source`` removes ``target`` (a generator must belong to the shipped discriminator)."""
    import torch
    from transformers import ElectraForMaskedLM

    if not (source / "config.json").is_file():
        if target.exists():
            shutil.rmtree(target)
            log(f"{target}: removed (the export has no generator; the next continuation starts one anew)")
        return
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model = ElectraForMaskedLM.from_pretrained(str(source), dtype=torch.float32).to(torch.float16)
    model.config.dtype = "float16"
    model.save_pretrained(str(tmp))
    for f in source.iterdir():  # tokenizer files and vocab.txt, as the discriminator's
        if f.is_file() and not f.name.startswith("model") and f.name != "config.json":
            shutil.copy2(f, tmp / f.name)
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)
    log(f"{target}: the generator, {(target / 'model.safetensors').stat().st_size:,} bytes of float16 weights (commit it with the model)")
