"""What the campaign's stages share: locations, the constants of the packs, and small helpers. The stages
themselves are in ``campaign.py`` (the device side, and the command line), ``campaign_train.py`` (the
device's pre-training run: train, supervise, poll), ``campaign_finetune.py`` (the device's fine-tuning
comparisons) and ``campaign_here.py`` (the CPU side: pack, ship, report)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))  # the repository: bioelectra.textio

from bioelectra.textio import atomic_write_text  # noqa: E402

HERE = Path(__file__).resolve().parent

REPO = HERE.parent.parent

#: torch.compile's cache artifacts of the recipe's whole training step, written by ``step-bench`` on an H200
#: (torch 2.11.0+cu130; docs/results/pretraining-findings.md, "The training step on the H200"), xz-compressed.
#: ``train`` and ``step-bench`` load it before compiling, so a fresh machine compiles from it; another torch or
#: device ignores it (logged).
COMPILE_CACHE = HERE / "compile-cache.bin.xz"

#: The raw artifacts' name in a work folder (``compile_cache`` reads it; a run writes its own there).
CACHE_NAME = "compile-cache.bin"


def unpack_compile_cache(carried: Path | None, work: Path) -> Path:
    """``<work>/compile-cache.bin``, the raw artifacts ``compile_cache`` reads, from ``carried`` (xz or raw) when it
    exists and the work folder has none yet (a run writes its own there after compiling)."""
    import lzma

    target = work / CACHE_NAME
    if carried is not None and Path(carried).is_file() and not target.is_file():
        data = Path(carried).read_bytes()
        target.write_bytes(lzma.decompress(data) if str(carried).endswith(".xz") else data)
        log(f"compile cache: {carried} -> {target} ({target.stat().st_size:,} bytes)")
    return target

DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "corpus"

DEFAULT_NER = REPO.parent / "shared" / "data" / "ner"

HPARAMS = HERE / "hparams.json"

#: The shipped model (a discriminator alone, float16) and, beside the recipe, the generator ``ship`` kept
#: with it (float16; what a continuation of the shipped model starts its generator from).
SHIPPED = REPO / "bioelectra" / "assets" / "models" / "bioelectra-small"
SHIPPED_GENERATOR = HERE / "generator"

#: Pack 1's note that the run continues the checkout's shipped model (``pack --init-from`` it): ``setup`` then
#: copies :data:`SHIPPED` and :data:`SHIPPED_GENERATOR` into ``init-from/`` on the device.
SHIPPED_INIT_MARKER = "init-from-shipped.json"


def shipped_init_from(work: Path) -> list[str]:
    """``<work>/init-from/`` from the checkout's shipped discriminator and, where ``ship`` kept it, its generator
    (float16; ``pretrain train --init-from`` loads any dtype as float32). Returns the parts copied."""
    import shutil

    parts = [("discriminator", SHIPPED), ("generator", SHIPPED_GENERATOR)]
    copied = []
    for name, source in parts:
        if (source / "config.json").is_file():
            dest = work / "init-from" / name
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(source, dest, ignore=shutil.ignore_patterns("README.md"))
            copied.append(name)
    return copied

#: Pack order: abstracts first (the text closest to the benchmarks), so a campaign that gets only pack 1
#: onto the device still trains on them.
SOURCE_ORDER = (
    "ohsumed_single_23", "ohsumed_first20k_extra", "pubmed_abstracts_1mb", "asreview", "pubmed_uscbiostats",
    "evidence_inference_pmc", "craft", "plos", "medquad", "elife", "sumpubmed_bmc",
)  # fmt: skip

#: Fine-tuning sets that travel in pack 1 (NCBI-disease is shipped inside the package).
NER_SETS = ("bc5cdr-chem", "bc5cdr-disease")

#: Wheels the GPU machine's Python 3.12 lacks (its image has torch, transformers, accelerate, tokenizers,
#: pyarrow, pandas, xxhash, fsspec, huggingface-hub; not datasets and its dill / multiprocess, nor
#: seqeval, which PyPI has only as a source archive and is built into a wheel here).
WHEELS = ("datasets==5.2.0", "dill==0.4.0", "multiprocess==0.70.18")

SOURCE_ONLY_WHEELS = ("seqeval==1.2.2",)

PYARROW_WHEEL = "pyarrow==24.0.0"

CHUNK_BYTES = 48 * 2**20  # text per compressed chunk (documents are never split)


def log(msg: str) -> None:
    print(f"[campaign {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(cmd: list[str], *, env: dict | None = None, stdout=None, timeout: float | None = None) -> None:
    """Run a command (printed first), with ``PYTHONPATH`` carrying the wheels' site folder; raise on
    failure with the command named. With ``timeout`` (seconds), a command still running then is killed and
    reported as a failure."""
    log("$ " + " ".join(str(c) for c in cmd))
    try:
        result = subprocess.run([str(c) for c in cmd], env=env or os.environ.copy(), stdout=stdout, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"error: {' '.join(str(c) for c in cmd[:4])} ... still running after {timeout:g} s: stopped") from None
    if result.returncode != 0:
        raise SystemExit(f"error: {' '.join(str(c) for c in cmd[:4])} ... exited with {result.returncode}")


def num(value, fmt: str = ",") -> str:
    """``value`` formatted for a report's or a card's table, ``-`` when it is missing (``None``)."""
    return "-" if value is None else format(value, fmt)


def read_json(path: Path, default=None):
    return json.loads(path.read_text()) if path.is_file() else default


def use_site(work: Path) -> None:
    """Put ``<work>/site`` (the installed wheels) on this process's and its children's import path."""
    site = work / "site"
    if site.is_dir():
        sys.path.insert(0, str(site))
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)


def write_json(path: Path, data) -> None:
    """Atomic JSON write (:func:`bioelectra.textio.atomic_write_text`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


#: ``eval_disc_recall`` at or below this counts as "predicts only original": the majority class.
STUCK_RECALL = 0.005

#: ... and ``eval_disc_auc`` below this as "ranks replaced tokens barely above chance". A discriminator can
#: recall nothing at the 0.5 threshold while its ranking improves (bioelectra-mini's run 7: recall 0.000 at
#: AUC 0.573, then 0.033 at 0.634); stuck runs stayed at 0.54-0.58 (run 6: 0.537; the recipe's shape on the
#: 2-core CPU at batch 32, untied, 1e-3: 0.537-0.577 from step 500 to 1,500).
STUCK_AUC = 0.6


def majority_class_warning(evals: list[dict], learning_rate: float | None = None, warmup_steps: int | None = None) -> str | None:
    """The recipe's stall rule as a message, or None: the last two evaluations of ``evals`` (``log_history``
    records) both have ``eval_disc_recall`` <= :data:`STUCK_RECALL` and ``eval_disc_auc`` < :data:`STUCK_AUC`,
    so the discriminator has been predicting "original" for every token, and ranking barely above chance,
    over an evaluation interval, as bioelectra-mini's run 6 did until it was stopped (docs/results/pretraining-findings.md).

    On the CPU the recipe's shape fell into this state every time, right after its generator learned the
    unigram distribution (masked-LM loss near 7.5): at batch 32 and 128, tied or not, at every warmup slope
    tried; a gentler slope made the dip later and shallower but did not avoid it (docs/results/pretraining-findings.md,
    "The majority-class stall on the CPU").
    So the message names the run's schedule (``learning_rate``, ``warmup_steps``) and advises against a
    restart, which would land in the same dip; it does not stop the run."""
    stuck = [e for e in evals if e.get("eval_disc_recall") is not None]
    if len(stuck) < 2 or any(e["eval_disc_recall"] > STUCK_RECALL or e.get("eval_disc_auc", 0.0) >= STUCK_AUC for e in stuck[-2:]):
        return None
    steps = " and ".join(str(e["step"]) for e in stuck[-2:])
    schedule = f" (peak learning rate {learning_rate:g}, warmup {warmup_steps} steps)" if learning_rate and warmup_steps else ""
    return (f"WARNING: eval_disc_recall <= {STUCK_RECALL} and eval_disc_auc < {STUCK_AUC} at steps {steps}{schedule}: "
            "the discriminator is stuck on the majority class. Every schedule tried on the CPU dipped here after the "
            "generator's unigram stage, and none avoided it, so a restart would land in the same dip: let the run "
            "go on and watch eval_disc_auc (docs/guides/pretraining-recipe.md, 'What to watch')")  # fmt: skip


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
