#!/usr/bin/env python
"""Peak resident memory of each rank of ``pretrain train`` on 1 and on 2 processes, on the same data; JSON.

Does each rank read only what it trains on? The examples are ``build-data``'s Arrow files, which every rank
opens memory-mapped (``datasets.load_from_disk``): opening costs address space, not memory, and a rank's
resident set grows by the file pages it touches. This script builds a synthetic ``build-data`` folder
(format 2, uint16 ids, full-length examples; a large one and a small one), runs ``run_pretraining`` with a
tiny model for a few steps on 1 process and on 2 (``accelerate launch --multi_gpu``, gloo on CPU), and
reports for each rank:

- ``peak_rss_mb``: ``getrusage(RUSAGE_SELF).ru_maxrss``, the process's peak resident set (everything:
  Python, torch, the model, the data pages);
- ``rss_anon_mb`` / ``rss_file_mb`` at the end of training (``/proc/self/status``): private memory, and
  file pages mapped in (shared with the page cache and the other ranks on the node, reclaimable);
- ``examples_rss_mb`` / ``examples_pss_mb``: the resident (and proportional: shared pages divided among the
  processes that map them) part of the mappings of the examples' Arrow files (``/proc/self/smaps``);
- ``rss_before_training_mb``: after the data is opened, the model built and the Trainer set up;
- ``examples_trained``: examples this rank trains on (steps x per-device batch x accumulation), and
  ``train_rows_read``: the training rows it actually fetched from the dataset (``Dataset.__getitems__``
  counted); for each run on several processes, ``rows_shared_by_ranks`` (rows fetched by more than one
  rank) and ``same_rows_as_one_process`` (the ranks' rows together are the rows one process fetched).

A dataset held in private memory would show as ``rss_anon_mb`` growing with the data (large vs small); a
rank reading the whole file would show ``examples_rss_mb`` near ``train_file_mb``. File pages are mapped
16 at a time around each page fault (the kernel's fault-around, 64 KB, for pages already in the page
cache) and whole large folios where the file system keeps them (ext4 on recent kernels), so
``examples_rss_mb`` can far exceed the bytes actually read: those pages are clean, shared between the
ranks of a node (see ``examples_pss_mb``) and reclaimable.

Examples::

    python bench/pretrain_rss.py                                  # 400,000 x 128-token examples (~103 MB)
    python bench/pretrain_rss.py --examples 1000000 --steps 40 --batch-size 64

No asserts: this prints figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: The model: 2 layers of width 64, so that the data's share of the memory is visible.
TINY_MODEL = {
    "model_hparam_overrides": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 128,
        "max_position_embeddings": 512,
    },
    "embedding_size": 64,
    "generator_hidden_size": 0.5,
}


def build_data(root: Path, *, examples: int, max_seq_length: int, seed: int = 0) -> dict:
    """A ``build-data`` folder of ``examples`` full-length random examples (train) + 1% validation, in
    format 2 (uint16 ids, ``segment_a_length``), written with the library's shard writer; returns sizes."""
    import numpy as np

    from bioelectra.presets import (
        BIO_ELECTRA_VOCAB_LOWER_CASE,
        bio_electra_vocab_file,
        load_wordpiece_tokenizer,
    )
    from bioelectra.shards import FORMAT_VERSION, _SplitWriter, id_dtype_for

    tokenizer = load_wordpiece_tokenizer(bio_electra_vocab_file(), do_lower_case=BIO_ELECTRA_VOCAB_LOWER_CASE)
    root.mkdir(parents=True)
    tokenizer.save_pretrained(str(root / "tokenizer"))
    rng = np.random.default_rng(seed)
    id_dtype = id_dtype_for(len(tokenizer))
    sizes = {}
    for split, n in (("train", examples), ("validation", max(1, examples // 100))):
        writer = _SplitWriter(root / "examples" / split, split, 100_000, id_dtype)
        for start in range(0, n, 50_000):
            count = min(50_000, n - start)
            ids = rng.integers(5, len(tokenizer), size=(count, max_seq_length), dtype=np.int32)  # (B, L)
            first = rng.integers(3, max_seq_length - 2, size=count).astype(np.int32)  # (B,) [CLS] A [SEP]
            ids[:, 0] = tokenizer.cls_token_id
            ids[np.arange(count), first - 1] = tokenizer.sep_token_id
            ids[:, -1] = tokenizer.sep_token_id
            lengths = np.full(count, max_seq_length, dtype=np.int32)
            writer.write(ids.reshape(-1), lengths, first)
        writer.finish()
        sizes[f"{split}_file_mb"] = round(
            sum(f.stat().st_size for f in (root / "examples" / split).glob("*.arrow")) / 2**20, 2
        )
    (root / "examples" / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "validation"]}))
    info = {
        "format_version": FORMAT_VERSION,
        "input_ids_dtype": id_dtype,
        "max_seq_length": max_seq_length,
        "vocab_size": len(tokenizer),
        "do_lower_case": BIO_ELECTRA_VOCAB_LOWER_CASE,
    }
    (root / "build_info.json").write_text(json.dumps(info))
    return {"examples": examples, "max_seq_length": max_seq_length, **sizes}


def _status_mb() -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon, RssFile, RssShmem of this process, in MiB (``/proc/self/status``)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def _mapped_mb(prefix: str) -> dict[str, float]:
    """Resident and proportional size of this process's mappings of files under ``prefix``, in MiB."""
    rss = pss = 0
    current = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            current = len(fields) >= 6 and fields[5].startswith(prefix)
        elif current and fields[0] == "Rss:":
            rss += int(fields[1])
        elif current and fields[0] == "Pss:":
            pss += int(fields[1])
    return {"examples_rss_mb": round(rss / 1024, 1), "examples_pss_mb": round(pss / 1024, 1)}


def worker(data_dir: Path, out_dir: Path, *, steps: int, batch_size: int) -> None:
    """One rank: train ``steps`` steps of global batch ``batch_size``; write ``rank<R>.json``."""
    import datasets
    from transformers import TrainerCallback

    from bioelectra.pretraining import run_pretraining

    examples_prefix = str((data_dir / "examples").resolve())
    seen: dict[str, object] = {"after_imports": _status_mb()}
    rows_read: list[int] = []
    getitems = datasets.Dataset.__getitems__

    def counting_getitems(self, keys):  # the rows a rank fetches from the training split
        if str(self.split) == "train":
            rows_read.extend(int(k) for k in keys)
        return getitems(self, keys)

    datasets.Dataset.__getitems__ = counting_getitems

    class Probe(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            seen["before_training"] = {**_status_mb(), **_mapped_mb(examples_prefix)}
            seen["split"] = [args.world_size, args.process_index, args.per_device_train_batch_size, args.gradient_accumulation_steps]

        def on_train_end(self, args, state, control, **kwargs):
            seen["after_training"] = {**_status_mb(), **_mapped_mb(examples_prefix)}

    hparams = {
        **TINY_MODEL,
        "max_steps": steps,
        "train_batch_size": batch_size,
        "warmup_steps": 0,
        "save_steps": 10**6,
        "eval_steps": 0,
        "num_eval_steps": 1,
        "per_device_eval_batch_size": 8,
        "logging_steps": steps,
    }
    run_pretraining(data_dir=data_dir, output_dir=out_dir / "run", hparams=hparams, callbacks=[Probe()])
    world, rank, per_device, accum = seen["split"]
    end = seen["after_training"]
    record = {
        "rank": rank,
        "world_size": world,
        "examples_trained": steps * per_device * accum,
        "train_rows_read": len(rows_read),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rss_after_imports_mb": seen["after_imports"]["VmRSS"],
        "rss_before_training_mb": seen["before_training"]["VmRSS"],
        "examples_rss_before_training_mb": seen["before_training"]["examples_rss_mb"],
        "rss_anon_mb": end["RssAnon"],
        "rss_file_mb": end["RssFile"],
        "examples_rss_mb": end["examples_rss_mb"],
        "examples_pss_mb": end["examples_pss_mb"],
    }
    (out_dir / f"rank{rank}.json").write_text(json.dumps(record))
    (out_dir / f"rank{rank}-rows.json").write_text(json.dumps(rows_read))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_case(data_dir: Path, out_dir: Path, *, processes: int, steps: int, batch_size: int, gpus: bool) -> list[dict]:
    """Run :func:`worker` on ``processes`` processes; returns the ranks' records."""
    out_dir.mkdir(parents=True)
    script = [str(Path(__file__).resolve()), "--worker", str(data_dir), str(out_dir), "--steps", str(steps),
              "--batch-size", str(batch_size)]  # fmt: skip
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    if not gpus:
        env["CUDA_VISIBLE_DEVICES"] = ""
    if processes == 1:
        command = [sys.executable, *script]
    else:
        command = [
            sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(processes),
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
            "--main_process_port", str(_free_port()), *script,
        ]  # fmt: skip
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return [
        {**json.loads((out_dir / f"rank{r}.json").read_text()), "rows": json.loads((out_dir / f"rank{r}-rows.json").read_text())}
        for r in range(processes)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=400_000, help="Training examples of the large data.")
    parser.add_argument("--small-examples", type=int, default=4_000, help="Training examples of the small data.")
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20, help="Optimizer steps of each run.")
    parser.add_argument("--batch-size", type=int, default=32, help="Global batch (train_batch_size).")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--gpus", action="store_true", help="Let the ranks use GPUs (default: CPU, gloo).")
    parser.add_argument("--workdir", type=Path, default=None, help="Keep the data and runs here.")
    parser.add_argument("--worker", nargs=2, type=Path, metavar=("DATA_DIR", "OUT_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker, steps=args.steps, batch_size=args.batch_size)
        return
    work = Path(tempfile.mkdtemp(prefix="pretrain-rss-")) if args.workdir is None else args.workdir
    result = {
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "settings": {"steps": args.steps, "train_batch_size": args.batch_size, "model": TINY_MODEL},
        "cases": [],
    }
    one_process_rows: list[int] | None = None
    for name, n in (("small", args.small_examples), ("large", args.examples)):
        data_dir = work / f"data-{name}"
        data = build_data(data_dir, examples=n, max_seq_length=args.max_seq_length)
        for processes in args.processes:
            ranks = run_case(
                data_dir, work / f"run-{name}-{processes}", processes=processes, steps=args.steps,
                batch_size=args.batch_size, gpus=args.gpus,
            )  # fmt: skip
            rows = [rank.pop("rows") for rank in ranks]
            case = {"data": data, "processes": processes, "ranks": ranks}
            if processes == 1:
                one_process_rows = sorted(rows[0])
            else:
                counts = Counter(row for rank_rows in rows for row in rank_rows)
                case["rows_shared_by_ranks"] = sum(1 for c in counts.values() if c > 1)
                case["same_rows_as_one_process"] = (
                    sorted(counts.elements()) == one_process_rows if one_process_rows is not None else None
                )
            result["cases"].append(case)
            print(json.dumps(result["cases"][-1]), file=sys.stderr)
    result["workdir"] = str(work)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
