"""The recipe of recipes/bioelectra-small, dry-run on the CPU: every stage, in the order of
docs/guides/pretraining-recipe.md, with a tiny configuration and a temporary folder as --out."""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import REPO_ROOT, load_script

CAMPAIGN = REPO_ROOT / "recipes" / "bioelectra-small" / "campaign.py"

TINY = {
    "model_size": "small",
    "model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64},
    "embedding_size": 16,
    "generator_hidden_size": 0.5,
    "per_device_train_batch_size": 4,
    "per_device_eval_batch_size": 4,
    "learning_rate": 1e-3,
    "adam_bias_correction": True,
    "warmup_steps": 1000,
    "eval_steps": 0,
    "num_eval_steps": 2,
    "save_steps": 2,
    "logging_steps": 1,
    "dataloader_num_workers": 0,
    "seed": 0,
}
WORDS = "the patient tumor cancer gene protein cell expression disease mice therapy dose trial was with of in and".split()


def load_campaign():
    return load_script(CAMPAIGN)


def campaign(*args: str | Path) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, CAMPAIGN, *map(str, args)], capture_output=True, text=True, check=False, cwd=REPO_ROOT
    )
    assert result.returncode == 0, f"{args[0]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def write_corpus(folder: Path, docs: int) -> Path:
    rng = random.Random(0)
    words = WORDS + ["".join(rng.choice("abcdefghiklmnoprstuy") for _ in range(rng.randint(3, 9))) for _ in range(400)]
    folder.mkdir(parents=True)
    for name in ("ohsumed_single_23", "elife"):
        with open(folder / f"{name}.txt", "w") as fh:
            for _ in range(docs):
                for _ in range(rng.randint(2, 5)):
                    fh.write(" ".join(rng.choice(words) for _ in range(rng.randint(5, 14))) + " .\n")
                fh.write("\n")
    return folder


def write_ner(folder: Path) -> Path:
    for name in ("bc5cdr-chem", "bc5cdr-disease"):
        (folder / name).mkdir(parents=True)
        for split in ("train.tsv", "devel.tsv", "test.tsv"):
            (folder / name / split).write_text("Aspirin\tB\ncauses\tO\nulcers\tO\n.\tO\n\nThe\tO\ndose\tO\n\n" * 4)
    return folder


def test_split_documents_cuts_only_between_documents(tmp_path):
    c = load_campaign()
    text = write_corpus(tmp_path / "text", docs=40) / "elife.txt"
    chunks = list(c.split_documents(text, 300))
    assert len(chunks) > 3
    assert "".join("".join(ch) for ch in chunks) == text.read_text()  # nothing lost or reordered
    for ch in chunks[:-1]:
        assert ch[-1] == "\n"  # every chunk but the last ends at a document's blank line


def test_tar_pieces_reassemble(tmp_path):
    c = load_campaign()
    payload = tmp_path / "payload.bin"
    payload.write_bytes(random.Random(1).randbytes(2_500_000))
    c.PIECE_BYTES = 1_000_000
    pieces = c.tar_pieces([(payload, "inner/payload.bin")], tmp_path / "out", "results")
    assert pieces == ["results.tar.part-00", "results.tar.part-01", "results.tar.part-02"]
    assert all((tmp_path / "out" / p).stat().st_size <= 1_000_000 for p in pieces)
    whole = tmp_path / "whole.tar"
    whole.write_bytes(b"".join((tmp_path / "out" / p).read_bytes() for p in pieces))
    with tarfile.open(whole) as tar:
        assert tar.extractfile("inner/payload.bin").read() == payload.read_bytes()


def _train_args(hp_file: Path, work: Path, **kw):
    return argparse.Namespace(**{**dict(hparams=hp_file, work=work, steps=None, minutes=10.0, init_from_warmup=500, set=None,
                                        compile="auto", compile_min_speedup=1.2), **kw})  # fmt: skip


def test_train_hparams_fit_the_schedule_to_the_minutes(tmp_path):
    c = load_campaign()
    hp_file = tmp_path / "hp.json"
    hp_file.write_text(json.dumps(TINY))
    args = _train_args(hp_file, tmp_path)
    hp = c.train_hparams(args)  # no bench needed: the run measures its own speed
    assert hp["fit_schedule_to_time"] is True and hp["max_train_seconds"] == 600.0
    assert hp["max_steps"] == c.FITTED_MAX_STEPS and hp["warmup_steps"] == 1000  # the library fits the warmup
    assert hp["learning_rate"] == TINY["learning_rate"] and "model_size" not in hp and "torch_compile" not in hp
    from bioelectra.pretraining import resolve_hparams

    assert resolve_hparams("small", hp).fit_schedule_to_time  # valid hparams for pretrain train
    args.steps = 510  # a fixed schedule: the warmup is capped at a quarter of it, to the recipe's peak
    short = c.train_hparams(args)
    assert short["max_steps"] == 510 and short["warmup_steps"] == 127 and "fit_schedule_to_time" not in short
    assert short["learning_rate"] == TINY["learning_rate"]
    (tmp_path / "init-from").mkdir()  # continuing a trained model: its own short re-warmup, the recipe's peak
    continued = c.train_hparams(args)
    assert continued["warmup_steps"] == 500 and continued["learning_rate"] == TINY["learning_rate"]
    args.steps = None
    assert c.train_hparams(args)["warmup_steps"] == 500


def test_bench_cases_match_whatever_the_hparams_path_spelling():
    """A compiled case finds its eager twin when one bench named the recipe relative to the repository and
    the other by its absolute path (seen in a CPU rehearsal: the speedup came out None)."""
    c = load_campaign()
    relative = {"size": "recipes/bioelectra-small/hparams.json", "seq_len": 128, "batch_size": 8}
    absolute = {**relative, "size": str(REPO_ROOT / "recipes" / "bioelectra-small" / "hparams.json")}
    assert c._same_case(relative, absolute)
    assert not c._same_case(relative, {**absolute, "batch_size": 16})
    assert not c._same_case({**relative, "size": "small"}, {**relative, "size": "base"})
    # the recipe's case is found by the same rule, not by its file name alone
    report = {"cases": [{**relative, "optimized": {"steps_per_second": 1.0}}]}
    assert c.recipe_case(report, Path(absolute["size"])) is report["cases"][0]
    assert c.recipe_case(report, REPO_ROOT / "recipes" / "bioelectra-mini" / "hparams.json") is None


def test_train_compiles_when_asked_or_when_the_compiled_bench_shows_the_gain(tmp_path):
    c = load_campaign()
    hp_file = tmp_path / "hp.json"
    hp_file.write_text(json.dumps({**TINY, "max_seq_length": 128, "pad_to_multiple_of": 8}))

    def compiled_bench(speedup: float) -> None:
        case = {"size": str(hp_file), "optimized": {"steps_per_second": 20.0 * speedup, "warmup_seconds": 60.0},
                "speedup_over_eager": speedup}  # fmt: skip
        (tmp_path / "bench-compiled.json").write_text(json.dumps({"cases": [case]}))

    args = _train_args(hp_file, tmp_path)
    assert "torch_compile" not in c.train_hparams(args)  # auto without a compiled bench: eager
    compiled_bench(2.5)
    hp = c.train_hparams(args)
    assert hp["torch_compile"] is True and hp["pad_to_multiple_of"] == 128  # every batch at the full length
    compiled_bench(1.1)  # below --compile-min-speedup: eager
    hp = c.train_hparams(args)
    assert "torch_compile" not in hp and hp["pad_to_multiple_of"] == 8
    args.compile = "off"
    compiled_bench(3.0)
    assert "torch_compile" not in c.train_hparams(args)
    (tmp_path / "bench-compiled.json").write_text(json.dumps({"error": "compilation failed"}))
    args.compile = "auto"
    assert c.compile_decision(args)[0] is False
    args.compile = "on"  # forced: no compiled figure needed, the fitted schedule measures the run itself
    assert c.train_hparams(args)["torch_compile"] is True


def test_a_failed_compiled_run_goes_on_eager_with_the_time_left(tmp_path):
    c = load_campaign()
    recipe = json.loads(c.HPARAMS.read_text())
    hp_file = tmp_path / "train-hparams.json"
    now = {"t": 0.0}
    calls = []

    def fake_run(codes):
        def run(cmd):
            calls.append(json.loads(hp_file.read_text()))
            now["t"] += 100.0  # each attempt takes 100 s
            return codes[len(calls) - 1]
        return run

    hp_file.write_text(json.dumps({"torch_compile": True, "pad_to_multiple_of": 128, "max_train_seconds": 420.0}))
    record = c.supervise(["pretrain"], tmp_path, call=fake_run([1, 0]), clock=lambda: now["t"])
    assert record["returncode"] == 0 and record["compiled_returncode"] == 1 and record["fallback"] == "eager"
    assert calls[1]["torch_compile"] is False and calls[1]["max_train_seconds"] == 320.0
    assert calls[1]["pad_to_multiple_of"] == recipe["pad_to_multiple_of"]
    calls.clear()  # an eager run that fails is not run again: the same failure would come back
    hp_file.write_text(json.dumps({"max_train_seconds": 420.0}))
    assert c.supervise(["pretrain"], tmp_path, call=fake_run([1]), clock=lambda: now["t"])["returncode"] == 1 and len(calls) == 1
    calls.clear()  # nor a compiled run with under a minute left
    hp_file.write_text(json.dumps({"torch_compile": True, "max_train_seconds": 150.0}))
    assert c.supervise(["pretrain"], tmp_path, call=fake_run([1]), clock=lambda: now["t"])["returncode"] == 1 and len(calls) == 1


def test_a_bench_that_fails_part_way_keeps_what_it_measured(tmp_path, monkeypatch):
    """The bench dies after its first case (a later case crashed, or the call's --timeout stopped it): that
    case still reaches $OUT and the failure is written down; the eager bench then exits non-zero, the
    optional compiled one does not, and it keeps the earlier calls' compiled cases."""
    c = load_campaign()
    hp_file = tmp_path / "hp.json"
    hp_file.write_text(json.dumps(TINY))
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    recipe = {"size": str(hp_file), "seq_len": 128, "batch_size": 256, "optimized": {"steps_per_second": 30.0}}

    def bench_dying_after_the_first_case(cmd, **kwargs):
        assert kwargs["timeout"] == 120.0
        output = Path(cmd[cmd.index("--output") + 1])
        output.write_text(json.dumps({"device": "H100", "cases": [recipe]}))
        raise SystemExit("error: .../pretrain_throughput.py --cases ... exited with 1")

    monkeypatch.setattr(c, "run", bench_dying_after_the_first_case)
    args = argparse.Namespace(work=work, out=out, hparams=hp_file, cases=None, steps=20, warmup=5, profile=10,
                              batch_size=None, layers=None, compile=False, quiet=True, timeout=120.0)  # fmt: skip
    with pytest.raises(SystemExit, match="eager bench failed"):
        c.cmd_bench(args)
    report = json.loads((out / "bench.json").read_text())
    assert report["cases"] == [recipe] and "exited with 1" in report["error"]
    assert not list(work.glob("bench-run.json"))

    earlier = {"size": "small", "seq_len": 128, "batch_size": 128, "optimized": {"steps_per_second": 50.0}}
    (work / "bench-compiled.json").write_text(json.dumps({"cases": [earlier]}))
    args.compile = True
    c.cmd_bench(args)  # reported, not raised
    compiled = json.loads((out / "bench-compiled.json").read_text())
    assert compiled["cases"][0] == earlier and compiled["cases"][1]["speedup_over_eager"] == 1.0
    assert "exited with 1" in compiled["error"]


def test_a_command_past_its_timeout_is_stopped_and_named():
    load_campaign()  # puts the campaign's folder on the import path
    from campaign_common import run

    started = time.monotonic()
    with pytest.raises(SystemExit, match=r"still running after 0.5 s: stopped"):
        run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert time.monotonic() - started < 30


def test_machine_report_records_a_cuda_failure_instead_of_raising(monkeypatch):
    import torch

    c = load_campaign()
    assert c.machine_report()["device"] == "cpu" and "cuda_error" not in c.machine_report()

    def broken(*args, **kwargs):
        raise RuntimeError("CUDA error: unknown error")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", broken)
    report = c.machine_report()
    assert report["cuda_error"] == "RuntimeError: CUDA error: unknown error" and report["torch"] == torch.__version__
    assert report["device"] == "cuda"


def test_collect_packs_the_export_when_the_evaluation_fails(tmp_path, monkeypatch):
    c = load_campaign()
    work, out = tmp_path / "work", tmp_path / "out"
    (work / "run").mkdir(parents=True)
    (work / "eval.json").write_text('{"stale": true}')  # an earlier collect's

    def pretrain(cmd, **kwargs):
        if cmd[2] == "export":
            (Path(cmd[cmd.index("--output-dir") + 1]) / "discriminator").mkdir(parents=True)
            (Path(cmd[cmd.index("--output-dir") + 1]) / "discriminator" / "config.json").write_text("{}")
        else:
            raise SystemExit("error: pretrain.py eval ... exited with 1")

    monkeypatch.setattr(c, "run", pretrain)
    c.cmd_collect(argparse.Namespace(work=work, out=out))
    summary = json.loads((out / "collect.json").read_text())
    assert "exited with 1" in summary["eval_error"] and summary["eval"] is None
    (tmp_path / "results.tar").write_bytes(b"".join(p.read_bytes() for p in sorted(out.glob("results.tar.part-*"))))
    with tarfile.open(tmp_path / "results.tar") as tar:
        names = tar.getnames()
    assert "export/discriminator/config.json" in names and "eval.json" not in names


def test_pack_stops_at_a_corpus_folder_no_source_reads(tmp_path):
    c = load_campaign()
    (tmp_path / "corpus" / "pmc-oa-2026").mkdir(parents=True)
    args = argparse.Namespace(work=tmp_path / "work", dest=tmp_path / "packs", corpus_text=None, corpus=tmp_path / "corpus",
                              allow_unread_folders=False, wheels_only=False)  # fmt: skip
    with pytest.raises(SystemExit, match="no source of recipes/shared_corpus.py reads pmc-oa-2026"):
        c.cmd_pack(args)
    assert not args.dest.exists()


def test_poll_warns_when_the_discriminator_is_stuck_on_the_majority_class(tmp_path, capsys, monkeypatch):
    """The recipe's stall rule, printed by poll: two evaluations in a row that recall no replaced token (what the
    recipe's shape did on the 2-core CPU from step 500 on at 1e-3, batch 32 or 128, tied or untied). The
    warning advises letting the run go on, so poll keeps its wait."""
    c = load_campaign()

    def evals(*recalls):
        return [{"step": 250 * (i + 1), "eval_disc_recall": r, "eval_disc_auc": 0.56} for i, r in enumerate(recalls)]

    assert c.majority_class_warning(evals(0.315, 0.001), 1e-3) is None  # one evaluation is not a trend
    assert c.majority_class_warning(evals(0.0, 0.0, 0.02), 1e-3) is None  # it left the majority class
    assert "steps 500 and 750" in c.majority_class_warning(evals(0.3, 0.001, 0.0), 1e-3)
    assert "(peak learning rate 0.0005, warmup 5000 steps)" in c.majority_class_warning(evals(0.0, 0.0), 5e-4, 5000)
    ranking = [{"step": 1000, "eval_disc_recall": 0.0, "eval_disc_auc": 0.573}, {"step": 2000, "eval_disc_recall": 0.0, "eval_disc_auc": 0.634}]
    assert c.majority_class_warning(ranking, 1e-3) is None  # no recall yet, but the ranking is learning

    work = tmp_path / "work"
    (work / "run").mkdir(parents=True)
    (work / "train-hparams.json").write_text(json.dumps({"learning_rate": 1e-3, "warmup_steps": 1000}))
    (work / "run" / "log_history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals(0.3, 0.0, 0.0)))
    clock = {"now": 0.0}
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        clock["now"] += seconds

    monkeypatch.setattr(sys.modules["campaign_train"], "time", SimpleNamespace(monotonic=lambda: clock["now"], sleep=sleep, time=lambda: clock["now"]))
    c.cmd_poll(argparse.Namespace(work=work, out=tmp_path / "out", wait=60, lines=3))
    printed = capsys.readouterr().out
    assert "stuck on the majority class" in printed and "peak learning rate 0.001" in printed and "running" in printed
    assert "let the run go on" in printed and sum(sleeps) == 60  # advice to let it run: the wait is kept
    sleeps.clear()

    (work / "run" / "log_history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals(0.3, 0.2)))
    c.cmd_poll(argparse.Namespace(work=work, out=tmp_path / "out", wait=60, lines=3))
    assert "stuck" not in capsys.readouterr().out and sum(sleeps) == 60  # a learning run is waited for


def test_report_tables_come_from_the_brought_back_files(tmp_path):
    c = load_campaign()
    res = tmp_path / "results"
    (res / "export" / "discriminator").mkdir(parents=True)
    files = {
        "run-hparams.json": {"per_device_train_batch_size": 256, "max_steps": 20000, "learning_rate": 0.001,
                             "warmup_steps": 1000, "torch_compile": True, "untied_generator": True},
        "trainer_state.json": {"global_step": 18000},
        "build_info.json": {"max_seq_length": 128, "do_lower_case": True, "counts": {"tokens": 95_000_000, "tokens_in_examples": 95_000_000,
                                                              "examples": {"train": 781_709, "validation": 7_902}}},
        "manifest.json": {"corpus": {"bytes": 469_239_479, "documents": {"craft": 67, "asreview": 16_000,
                                                                        "asreview_duplicate_abstracts_dropped": 2_278},
                                     "left_out": ["pubmedqa-pqal"], "excluded_for_eval_overlap": {"craft-test": 30}}},
        "bench.json": {"device": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "cases": [
            {"size": "small", "seq_len": 128, "batch_size": 128, "speedup": 3.0,
             "optimized": {"steps_per_second": 36.0, "sequences_per_second": 4608.0}, "naive": {"steps_per_second": 12.0}}]},
        "export/discriminator/config.json": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                                             "intermediate_size": 1024, "embedding_size": 128, "vocab_size": 30522,
                                             "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "max_position_embeddings": 512},
        "eval.json": {"metrics": {"masked_lm_accuracy": 0.33, "disc_auc": 0.871},
                      "attention_entropy": {"discriminator": {"attention_entropy": 0.74}}},
    }  # fmt: skip
    for name, data in files.items():
        (res / name).write_text(json.dumps(data))
    history = [
        {"step": 1, "loss": 40.0, "steps_per_second": 0.05, "data_wait_fraction": 0.001},  # the compilation's window
        {"step": 200, "loss": 30.0, "steps_per_second": 20.0, "data_wait_fraction": 0.01},
        {"step": 400, "loss": 20.0, "steps_per_second": 24.0, "data_wait_fraction": 0.03},
        {"step": 2000, "eval_masked_lm_accuracy": 0.31, "eval_disc_auc": 0.861, "eval_disc_precision": 0.7,
         "eval_disc_recall": 0.2, "eval_disc_attention_entropy": 0.75},
        {"step": 20000, "train_runtime": 900.0, "total_flos": 1.234e17},
    ]  # fmt: skip
    (res / "log_history.jsonl").write_text("".join(json.dumps(h) + "\n" for h in history))
    import torch
    from safetensors.torch import save_file

    save_file({"electra.embeddings.word_embeddings.weight": torch.zeros(10, 4), "electra.embeddings.LayerNorm.bias": torch.zeros(4)},
              str(res / "export" / "discriminator" / "model.safetensors"))  # fmt: skip

    def run(row, model, test_f1, std=0.01):
        stats = {"mean": test_f1, "std": std}
        return {"row": row, "model": model, "command": f"--ckpt {model}", "wall_seconds": 60.0,
                "summary": {"dev": {"f1": {"mean": test_f1 - 0.02, "std": std}}, "test": {"f1": stats}}}  # fmt: skip

    finetune = {
        "lr-3e-4": {**run(c.LEARNING_RATE_ROW, "small", 0.66), "learning_rate": 3e-4},
        "lr-1e-3": {**run(c.LEARNING_RATE_ROW, "small", 0.69), "learning_rate": 1e-3},
        "ncbi-small": run(c.DEFAULTS_ROW.format("NCBI-disease"), "small", 0.70),
        "ncbi-twin": run(c.DEFAULTS_ROW.format("NCBI-disease"), "twin", 0.45),
        "ncbi-small-bio-electra-protocol": run(c.BIO_ELECTRA_ROW, "small", 0.72),
        "base-speed": {"row": c.SPEED_ROW, "model": "base", "command": "--ckpt electra-base", "wall_seconds": 95.4},
        "probe-small": {"row": c.PROBE_ROW, "model": "small", "probe": True, "command": "--dataset ncbi-disease --ckpt small",
                        "wall_seconds": 12.0, "f1": {"last_layer": 31.5, "all_layers": 40.25}},
        "probe-twin": {"row": c.PROBE_ROW, "model": "twin", "probe": True, "command": "--dataset ncbi-disease --ckpt twin",
                       "wall_seconds": 11.0, "f1": {"last_layer": 2.17, "all_layers": 4.72}},
        "skipped": ["bc5cdr-chem-small"],
    }
    (res / "finetune.json").write_text(json.dumps(finetune))
    c.main(["report", "--results", str(res)])
    report = (res / "report.md").read_text()
    for line in (
        "| device | NVIDIA H100 80GB HBM3 |",
        "| discriminator | hidden 256, 4 layers, 4 heads, FFN 1,024, embeddings 128, vocabulary 30,522 |",
        "| text | 469,239,479 bytes, 16,067 documents; 95,000,000 tokens in 781,709 training and 7,902 validation "
        "examples of up to 128 tokens |",
        "| steps | 20,000 of 20,000 planned, batch 256 |",  # the final record's step
        "| examples seen | 5,120,000 (6.55 passes over the training examples) |",
        "| tokens seen (about) | 616,000,000 |",
        "| wall time of training | 900 s (15.0 min) |",
        "| speed (median of the training logs after the first) | 24.0 steps/s, data_wait_fraction 0.03 |",
        "| 2,000 | 0.310 | 0.861 | 0.700 | 0.200 | 0.750 |",
        "| 3e-4 | 64.00 | 60 |",  # development F1 only: the choice never sees the test split
        "| 1e-3 | 67.00 | 60 |",
        "Chosen: 1e-3, the rate of the \"finetune's defaults\" rows below",
        "| NCBI-disease, finetune's defaults | 68.00 ± 1.00 | 70.00 ± 1.00 | 43.00 ± 1.00 | 45.00 ± 1.00 | +25.00 / +25.00 |",
        "| NCBI-disease, Bio-ELECTRA's protocol (--protocol bio-electra) | 70.00 ± 1.00 | 72.00 ± 1.00 | - | - | - / - |",
        "NCBI-disease fine-tuning time, 3 trials x 3 epochs, an ELECTRA-Base-sized model with random weights on "
        "NVIDIA H100 80GB HBM3: 95 s end to end (target: under 120 s, met).",
        "| ELECTRA-Small | 128 x 128 | 12.00 | 36.00 | - | - | - | eager step | x3.00 | 4,608 | - | >= 100 steps/s on an H100: "
        "not met (no compiled + captured figure) |",
        "469,239,479 bytes of text in 16,067 documents (`recipes/shared_corpus.py --subset all`); left out: "
        "pubmedqa-pqal; dropped for overlap with evaluation text: craft-test 30.",
        "| ASReview systematic-review datasets (`asreview/systematic-review-datasets`), repeated abstracts dropped "
        "| 16,000 | MEDLINE records (NLM terms); dataset licences per file (CC BY 4.0, CC0, Cohen 2006 custom open "
        "licence) |",
    ):  # fmt: skip
        assert line in report, f"{line}\n---\n{report}"
    assert "eLife" not in report and "CRAFT articles" in report  # the sources the manifest lists, no others
    assert "| NCBI-disease, the learning rate" not in report  # the candidates are not a comparison row
    assert "- `lr-3e-4`: `finetune --ckpt small`" in report  # but their commands are listed with the others
    assert "The rows below used" not in report
    # the probe: its own table (not a fine-tuning row), its command with the probe's script
    probe = report[report.index("## Linear probe"): report.index("## Fine-tuning")]
    for line in ("| bioelectra-small | 31.50 | 40.25 |", "| its untrained twin | 2.17 | 4.72 |", "| gain | +29.33 | +35.53 |"):
        assert line in probe, f"{line}\n---\n{probe}"
    assert "frozen-encoder linear probe" not in report[report.index("## Fine-tuning"):].split("Commands")[0]
    assert "- `probe-twin`: `python recipes/bioelectra-mini/linear_probe.py --dataset ncbi-disease --ckpt twin`" in report
    # the model card's draft, from the same files
    card = (res / "model-card.md").read_text()
    for line in (
        "pre-trained by this project with replaced token detection on 469 MB of biomedical text (the project's shared "
        "corpus, below), for 20,000 steps of batch 256 on NVIDIA H100 80GB HBM3 (15.0 minutes of training).",
        "| parameters | 44, of which 40 are the token embeddings |",  # counted from the export's tensors
        "| shape | hidden 256, 4 layers, 4 attention heads, FFN 1,024, embeddings 128, gelu, dropout 0.1 |",
        "| vocabulary | uncased WordPiece, 30,522 entries,",
        "| disc_auc (discriminator, replaced vs original) | 0.871 |",  # eval.json's, the final checkpoint's
        "| 2,000 | 0.310 | 0.861 | 0.700 | 0.200 | 0.750 |",
        "| NCBI-disease, finetune's defaults | 68.00 ± 1.00 | 70.00 ± 1.00 | 43.00 ± 1.00 | 45.00 ± 1.00 | +25.00 / +25.00 |",
        "| gain | +29.33 | +35.53 |",  # the probe's table too
        "- Short pre-training: 1.23e+17 FLOPs (the Trainer's estimate), about 1/11 of the original ELECTRA-Small's",
        "- NCBI-disease test F1 70.00 with `finetune`'s defaults, against 78.33 for Bio-ELECTRA",
        "| CRAFT articles from the PubMed Central Open Access subset",
    ):  # fmt: skip
        assert line in card, f"{line}\n---\n{card}"
    for needed in ("masked_lm_accuracy", "Intended use", "Limitations", "licen", "--ckpt bioelectra-small"):
        assert needed in card, needed  # what tests/test_shipped_model.py asks of a shipped model's card
    finetune["learning_rate"] = {"rate": 2e-3, "why": "--learning-rate"}  # rows run later at a given rate
    (res / "finetune.json").write_text(json.dumps(finetune))
    c.main(["report", "--results", str(res)])
    assert "The rows below used 2e-3 (--learning-rate)." in (res / "report.md").read_text()
    with pytest.raises(SystemExit, match="no run-hparams.json"):
        c.main(["report", "--results", str(tmp_path / "elsewhere")])
    with pytest.raises(SystemExit, match="missing.json: no such file"):
        c.main(["report", "--results", str(res), "--finetune", str(tmp_path / "missing.json")])


def _minimal_results(path: Path, *, steps: int, seconds: float, flos: float, device: str | None) -> Path:
    """An unpacked results tar with only what the run's table reads: hparams, the final log record, and
    ``env.json`` (what ``setup`` writes and ``collect`` packs) when ``device`` is given."""
    path.mkdir(parents=True)
    (path / "run-hparams.json").write_text(json.dumps({"per_device_train_batch_size": 256, "max_steps": steps}))
    (path / "build_info.json").write_text(json.dumps({"counts": {"tokens_in_examples": 1000, "examples": {"train": 100_000, "validation": 10}}}))
    record = {"step": steps, "train_runtime": seconds, "total_flos": flos}
    (path / "log_history.jsonl").write_text(json.dumps(record) + "\n")
    if device:
        (path / "env.json").write_text(json.dumps({"device": device}))
    return path


def test_report_of_a_continued_run_adds_the_earlier_runs(tmp_path):
    """``report --continues``: a row per earlier run and one with the sums; the card's draft then states the
    sums (steps, minutes, FLOPs), not the last run's alone; the device comes from ``env.json`` when the run
    had no bench."""
    c = load_campaign()
    first = _minimal_results(tmp_path / "first", steps=8_761, seconds=403.4, flos=6.0e15, device="NVIDIA H200")
    second = _minimal_results(tmp_path / "second", steps=13_823, seconds=414.6, flos=9.5e15, device="NVIDIA H200")
    c.main(["report", "--results", str(second), "--continues", str(first)])
    report = (second / "report.md").read_text()
    for line in (
        "| device | NVIDIA H200 |",
        "| steps | 13,823 of 13,823 planned, batch 256 |",  # this run's own rows are unchanged
        "| continued from, run 1 of 2 | 8,761 steps of batch 256, 2,242,816 examples, 403 s on NVIDIA H200 (first/) |",
        "| in all, the 2 runs | 22,584 steps, 5,781,504 examples (57.82 passes), 818 s (13.6 min) of training, "
        "1.55e+16 FLOPs (the Trainer's estimate) |",
    ):  # fmt: skip
        assert line in report, f"{line}\n---\n{report}"
    card = (second / "model-card.md").read_text()
    assert "for 22,584 steps of batch 256 on NVIDIA H200 (13.6 minutes of training in 2 runs, each continuing the one before)." in card, card
    assert "- Short pre-training: 1.55e+16 FLOPs" in card
    c.main(["report", "--results", str(second)])  # without --continues: the last run alone
    report = (second / "report.md").read_text()
    assert "in all" not in report and "| training FLOPs (the Trainer's estimate) | 9.5e+15 |" in report
    assert "## Evaluations during the run\n\nNone in the run's log_history.jsonl." in report  # no empty table
    with pytest.raises(SystemExit, match="--continues .*elsewhere: no run-hparams.json"):
        c.main(["report", "--results", str(second), "--continues", str(tmp_path / "elsewhere")])


def test_report_says_how_the_step_ran_compiled_and_fell_back(tmp_path):
    """The run's table says how its step ran (train_step, the compile scope and options, the fused projection),
    a failed first run that the supervisor ran again (the whole step's, on with the Trainer's step: no KeyError),
    and the first compiled step's seconds and cache counts (first_compiled_step.json, which collect packs); the
    throughput table reads step-bench's reports among the results and step-train.json given with --bench."""
    c = load_campaign()
    res = _minimal_results(tmp_path / "results", steps=17_030, seconds=194.0, flos=1e16, device="NVIDIA H200")
    hp = json.loads((res / "run-hparams.json").read_text())
    hp.update(train_step="captured", torch_compile=True, compile_scope="layers", compile_options={"combo_kernels": True},
              fuse_qkv=True, max_seq_length=128)  # fmt: skip
    (res / "run-hparams.json").write_text(json.dumps(hp))
    (res / "train-done.json").write_text(json.dumps({"returncode": 0, "whole_step_returncode": 1, "fallback": "trainer"}))
    counts = {"fxgraph_cache_hit": 4, "fxgraph_cache_miss": 1, "autograd_cache_hit": 1, "autograd_cache_bypass": 1}
    (res / "first_compiled_step.json").write_text(json.dumps(
        {"seconds": 37.04, "global_step": 0, "compile_cache": "/tmp/bes/compile-cache.bin", "compile_cache_loaded": True,
         "compile_cache_counts": counts}))  # fmt: skip
    recipe = str(c.HPARAMS)
    (res / "step-bench-compiled.json").write_text(json.dumps({"device": "NVIDIA H200", "cases": [
        {"size": recipe, "seq_len": 128, "batch_size": 256,
         "compiled_captured": {"steps_per_second": 120.0, "compiled": True, "captured": True, "warmup_seconds": 86.8}}]}))  # fmt: skip
    train = {"median_steps_per_second": 119.1, "windows": [{"step": 1}, {"step": 200}, {"step": 400}], "train_step": "captured",
             "torch_compile": True, "case": {"size": recipe, "seq_len": 128, "batch_size": 256}, "compile_scope": "step",
             "first_compiled_step": {"seconds": 37.04, "compile_cache_loaded": True, "compile_cache_counts": counts}}  # fmt: skip
    (tmp_path / "step-train.json").write_text(json.dumps(train))
    c.main(["report", "--results", str(res), "--bench", str(tmp_path / "step-train.json")])
    report = (res / "report.md").read_text()
    for line in (
        "warmup - steps, train_step captured, torch.compile True (scope layers, options {\"combo_kernels\": true}); "
        "fuse_qkv; the whole-step run failed (exit 1) and went on with the Trainer's step, untied generator - |",
        "| first compiled step | 37.0 s at step 0; compile cache compile-cache.bin loaded; graphs from a cache: "
        "inductor 4 of 5, AOT autograd 1 of 2 (1 refused) |",
        "| bioelectra-small | 256 x 128 | - | - | - | - | 120.00 | 119.10 | compiled + captured |",
        "| bioelectra-small | 256 x 128 | compiled + captured | - | - | - | 86.8 | not met |",
        "| bioelectra-small | 256 x 128 | `pretrain train` | loaded | 4 of 5 | 1 of 2 (1 refused) | 37.0 | met |",
        "`bench/pretrain_throughput.py --markdown` over `step-bench-compiled.json`, `step-train.json`:",
    ):  # fmt: skip
        assert line in report, f"{line}\n---\n{report}"
    # an older supervisor's record (a compiled run, on eager); a run that compiled nothing has no such row
    (res / "train-done.json").write_text(json.dumps({"returncode": 0, "compiled_returncode": 1, "fallback": "eager"}))
    (res / "first_compiled_step.json").unlink()
    (tmp_path / "step-train.json").write_text(json.dumps({**train, "case": {**train["case"], "batch_size": 8}}))
    c.main(["report", "--results", str(res), "--bench", str(tmp_path / "step-train.json")])
    report = (res / "report.md").read_text()
    assert "; the compiled run failed (exit 1) and went on eager," in report and "| first compiled step | - |" in report
    assert "| bioelectra-small | 8 x 128 |" in report  # its own case: a row of its own
    with pytest.raises(SystemExit, match="--bench .*missing.json: no such file"):
        c.main(["report", "--results", str(res), "--bench", str(tmp_path / "missing.json")])
    (tmp_path / "cut.json").write_text('{"cases": [')  # a report cut short
    with pytest.raises(SystemExit, match=r"cut.json: line 1, column 12: not JSON"):
        c.main(["report", "--results", str(res), "--bench", str(tmp_path / "cut.json")])


def test_packs_leave_room_for_the_checkout_that_travels_with_them(tmp_path):
    """A call carries the working tree (tracked and untracked-not-ignored files) and the packs in 64 MiB."""
    c = load_campaign()
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("ignored.bin\n")
    (repo / "tracked.bin").write_bytes(b"x" * 3000)
    (repo / "untracked.bin").write_bytes(b"y" * 500)
    (repo / "ignored.bin").write_bytes(b"z" * 100_000)
    subprocess.run(["git", "-C", str(repo), "add", "tracked.bin"], check=True)
    assert c.travelling_bytes(repo) == 3000 + 500 + len("ignored.bin\n")
    assert c.travelling_bytes(REPO_ROOT) > 2**20  # this checkout: the code and the shipped model
    (tmp_path / "plain").mkdir()
    with pytest.raises(SystemExit, match="give --pack-mib"):
        c.travelling_bytes(tmp_path / "plain")


def test_first_fit_packs_fill_the_gaps_and_keep_the_first_chunks_in_pack_1():
    """Each pack is a device call: a chunk goes into the first pack with room, so a small one fills a gap an
    earlier pack left instead of opening a new pack, and the order's first chunks (the abstracts) stay in pack 1."""
    c = load_campaign()
    places, used = c.assign_to_packs(2, [6, 5, 2, 3, 1], 10)
    assert places == [[0, 2], [1, 3, 4]]  # filling one pack after the other: [0], [1, 2, 3], [4]: 3 packs
    assert used == [10, 9]
    assert sorted(k for pack in places for k in pack) == list(range(5))
    assert c.assign_to_packs(0, [], 10) == ([[]], [0])
    with pytest.raises(SystemExit, match="--chunk-bytes"):
        c.assign_to_packs(0, [4, 11], 10)


def test_learning_rate_names_and_choice():
    c = load_campaign()
    assert [c.rate_name(r) for r in (3e-4, 1e-3, 2.5e-4, 5e-5)] == ["3e-4", "1e-3", "2.5e-4", "5e-5"]
    assert float(c.rate_name(2.5e-4)) == 2.5e-4

    def measured(dev_f1):
        return {"summary": {"dev": {"f1": {"mean": dev_f1}}, "test": {"f1": {"mean": 0.99}}}}

    assert c.chosen_learning_rate({"lr-3e-4": measured(0.5)})[0] is None  # 1e-3 not measured yet
    assert c.chosen_learning_rate({"lr-3e-4": measured(0.5), "lr-1e-3": {"error": "exited with 1"}}) == (
        None, "lr-1e-3 not measured")  # fmt: skip
    assert c.chosen_learning_rate({"lr-3e-4": measured(0.5), "lr-1e-3": measured(0.4)})[0] == 3e-4
    assert c.chosen_learning_rate({"lr-3e-4": measured(0.4), "lr-1e-3": measured(0.5)})[0] == 1e-3
    assert c.chosen_learning_rate({"lr-3e-4": measured(0.5), "lr-1e-3": measured(0.5)})[0] == 3e-4  # tie: lower


@pytest.mark.parametrize("rate", ["0", "-1e-3", "fast"])
def test_finetune_eval_refuses_a_rate_that_is_not_above_zero(rate, capsys):
    c = load_campaign()
    with pytest.raises(SystemExit) as stop:
        c.main(["finetune-eval", "--learning-rate", rate])
    assert stop.value.code == 2
    assert "--learning-rate" in capsys.readouterr().err
    assert c.positive_rate("3e-4") == 3e-4


def test_finetune_queue_puts_each_comparison_beside_its_twin_before_the_bc5cdr_sets(tmp_path):
    """The queue's order is the priority when the budget runs out: the model's rows first, each followed by
    its twin's (a protocol row alone cannot be read: on the CPU the twin beat a pre-trained model under it),
    then the fine-tuning time, then the BC5CDR sets."""
    c = load_campaign()
    ner = tmp_path / "ner"
    ner_sets = sys.modules["campaign_common"].NER_SETS  # the sets pack 1 carries
    for name in ner_sets:
        (ner / name).mkdir(parents=True)
    args = argparse.Namespace(work=tmp_path / "work", trials=3, learning_rate=None, ner=ner)
    names = [item["name"] for item in c.finetune_queue(args)]
    assert names == ["lr-3e-4", "lr-1e-3", "ncbi-small", "ncbi-twin", "probe-small", "probe-twin",
                     "ncbi-small-bio-electra-protocol", "ncbi-twin-bio-electra-protocol", "base-speed",
                     *(f"{name}-{which}" for name in ner_sets for which in ("small", "twin"))]  # fmt: skip
    assert ner_sets == ("bc5cdr-chem", "bc5cdr-disease")
    protocol = [item for item in c.finetune_queue(args) if item["row"] == c.BIO_ELECTRA_ROW]
    assert [item["args"][3] for item in protocol] == [args.work / "export" / "discriminator", args.work / "twin"]
    # the one definition of the protocol (downstream.settings.PROTOCOLS), cut to the 3 trials
    assert all(item["args"][-4:] == ["--trials", "3", "--protocol", "bio-electra"] for item in protocol)
    assert "lr-3e-4" not in [item["name"] for item in c.finetune_queue(argparse.Namespace(**{**vars(args), "learning_rate": 1e-3}))]


def test_finetune_eval_goes_on_after_a_failed_run_and_keeps_earlier_calls_results(tmp_path, monkeypatch):
    """Call 1 measures base-speed before any model exists; call 5 runs the comparisons: base-speed is not
    measured again, the learning rate is chosen on development F1 before the defaults rows, a failed run is
    recorded and the next one still runs; a later call retries only it."""
    import bioelectra.presets

    c = load_campaign()
    monkeypatch.setattr(bioelectra.presets, "build_untrained_twin", lambda model, target, seed: target.mkdir(exist_ok=True))
    work, out = tmp_path / "work", tmp_path / "out"
    ran, failing, rates = [], {"ncbi-twin"}, {}
    dev_f1 = {"3e-4": 0.40, "1e-3": 0.45}  # the higher rate wins on development F1 here

    def finetune(cmd, **kwargs):
        if "--output" in cmd:  # the linear probe
            output = Path(cmd[cmd.index("--output") + 1])
            ran.append(output.parent.name)
            assert Path(cmd[1]).name == "linear_probe.py" and "--max-steps" not in cmd  # --extra is finetune's
            if output.parent.name in failing:
                raise SystemExit("error: linear_probe.py ... exited with 1")
            output.parent.mkdir(parents=True)
            output.write_text(json.dumps({"f1": {"last_layer": 10.0, "all_layers": 12.0}}))
            return
        run_dir = Path(cmd[cmd.index("--output-dir") + 1])
        ran.append(run_dir.name)
        rate = cmd[cmd.index("--learning-rate") + 1] if "--learning-rate" in cmd else None
        rates[run_dir.name] = rate
        if run_dir.name in failing:
            raise SystemExit("error: finetune.py ... exited with 1")
        run_dir.mkdir(parents=True, exist_ok=True)  # finetune re-runs a trial whose settings changed
        summary = {"dev": {"f1": {"mean": dev_f1.get(rate, 0.5)}}, "test": {"f1": {"mean": 0.5}}}
        (run_dir / "results.json").write_text(json.dumps({"summary": summary}))

    monkeypatch.setattr(sys.modules["campaign_finetune"], "run", finetune)  # the stage's own module
    args = argparse.Namespace(work=work, out=out, hparams=c.HPARAMS, budget_seconds=600.0, trials=1, only=None,
                              extra="--max-steps 2", quiet=True, learning_rate=None, ner=tmp_path / "no-ner-sets")  # fmt: skip
    monkeypatch.setattr(sys.modules["campaign_finetune"], "has_gpu", lambda: False)
    c.cmd_finetune_eval(args)  # without a GPU the fine-tuning time (an ELECTRA-Base-sized model) is not measured
    assert ran == [] and "base-speed" in json.loads((out / "finetune.json").read_text())["skipped"]
    monkeypatch.setattr(sys.modules["campaign_finetune"], "has_gpu", lambda: True)  # the device from here on
    # without --ner and without the device's <work>/ner, the BC5CDR sets come from ../shared (when it is there)
    bc5 = [i for i in c.finetune_queue(argparse.Namespace(**{**vars(args), "ner": None})) if i["name"].startswith("bc5cdr")]
    assert len(bc5) == (4 if c.DEFAULT_NER.is_dir() else 0)
    assert all(Path(i["args"][1]).parent == c.DEFAULT_NER for i in bc5)
    c.cmd_finetune_eval(args)  # no export yet: only base-speed can run
    assert ran == ["base-speed"]
    comparisons = ["ncbi-small", "ncbi-twin", "probe-small", "probe-twin", "ncbi-small-bio-electra-protocol",
                   "ncbi-twin-bio-electra-protocol"]  # fmt: skip
    assert json.loads((out / "finetune.json").read_text())["skipped"] == ["lr-3e-4", "lr-1e-3", *comparisons]

    shutil.rmtree(out)  # the device empties $OUT before every call
    (work / "export" / "discriminator").mkdir(parents=True)
    ran.clear()
    with pytest.raises(SystemExit, match="1 fine-tuning run"):
        c.cmd_finetune_eval(args)
    assert ran == ["lr-3e-4", "lr-1e-3", *comparisons]
    assert rates["lr-3e-4"] == "3e-4" and rates["ncbi-small"] == rates["ncbi-twin"] == "1e-3"  # model and twin alike
    assert rates["ncbi-small-bio-electra-protocol"] is None  # a protocol keeps its own rate (finetune's --protocol)
    results = json.loads((out / "finetune.json").read_text())
    assert results["learning_rate"] == {"rate": 1e-3, "why": "3e-4: dev F1 40.00, 1e-3: dev F1 45.00"}
    assert results["ncbi-small"]["learning_rate"] == 1e-3 and "--learning-rate 1e-3" in results["ncbi-small"]["command"]
    assert results["base-speed"]["summary"] and "exited with 1" in results["ncbi-twin"]["error"]
    assert "summary" not in results["ncbi-twin"] and results["ncbi-twin-bio-electra-protocol"]["summary"]
    assert results["probe-twin"]["f1"] == {"last_layer": 10.0, "all_layers": 12.0} and results["probe-twin"]["probe"]
    assert "learning_rate" not in results["probe-small"]  # the probe trains its own softmax layer

    ran.clear()
    failing.clear()
    c.cmd_finetune_eval(args)
    assert ran == ["ncbi-twin"] and json.loads((out / "finetune.json").read_text())["ncbi-twin"]["summary"]

    # a failed candidate holds the defaults rows back (the choice needs every candidate); a given rate skips the choice
    shutil.rmtree(work / "finetune")
    (work / "finetune.json").unlink()
    ran.clear()
    failing.add("lr-1e-3")
    with pytest.raises(SystemExit, match="1 fine-tuning run"):
        c.cmd_finetune_eval(argparse.Namespace(**{**vars(args), "only": ["lr-3e-4", "lr-1e-3", "ncbi-small"]}))
    assert ran == ["lr-3e-4", "lr-1e-3"]
    assert json.loads((out / "finetune.json").read_text())["skipped"] == ["ncbi-small"]
    ran.clear()
    c.cmd_finetune_eval(argparse.Namespace(**{**vars(args), "only": ["ncbi-small"], "learning_rate": 2e-3}))
    assert ran == ["ncbi-small"] and rates["ncbi-small"] == "2e-3"
    # a defaults row is kept only at the rate now in force (the twin's rows measured at an earlier model's
    # rate must not sit beside the model's at a new one); rows that keep their own rate are kept as they are
    ran.clear()
    c.cmd_finetune_eval(argparse.Namespace(**{**vars(args), "only": ["ncbi-small"], "learning_rate": 2e-3}))
    assert ran == []
    c.cmd_finetune_eval(argparse.Namespace(**{**vars(args), "only": ["ncbi-small", "lr-3e-4"], "learning_rate": 3e-4}))
    assert ran == ["ncbi-small"] and rates["ncbi-small"] == "3e-4"
    assert json.loads((work / "finetune.json").read_text())["ncbi-small"]["learning_rate"] == 3e-4


@pytest.mark.slow
def test_campaign_dry_run_on_cpu(tmp_path):
    """pack -> setup -> bench (eager, compiled) -> data -> train (background) -> poll -> collect -> finetune-eval."""
    hparams = tmp_path / "tiny.json"
    hparams.write_text(json.dumps(TINY))
    work, out, dest = tmp_path / "device-work", tmp_path / "OUT", tmp_path / "campaign"
    text = write_corpus(tmp_path / "text", docs=300)
    campaign(
        "pack", "--corpus-text", text, "--ner", write_ner(tmp_path / "ner"), "--work", tmp_path / "here",
        "--dest", dest, "--vocab-size", "120", "--no-wheels", "--pack-mib", "0.05", "--chunk-bytes", "15000",
        "--threads", "1",
    )  # fmt: skip
    manifest = json.loads((dest / "manifest.json").read_text())
    packs = sorted(dest.glob("pack-*"))
    assert len(packs) == len(manifest["packs"]) >= 2  # the text did not fit one pack
    assert {"vocab", "ner.tar.xz", "manifest.json"} <= {p.name for p in packs[0].iterdir()}
    assert sum(ch["text_bytes"] for ch in manifest["chunks"]) == sum(p.stat().st_size for p in text.glob("*.txt"))

    setup = campaign("setup", *[a for p in packs for a in ("--pack", p)], "--work", work, "--out", out)
    env = json.loads((out / "env.json").read_text())
    assert env["corpus_files"] == env["corpus_chunks_expected"] == len(manifest["chunks"])
    assert env["corpus_bytes"] == sum(ch["text_bytes"] for ch in manifest["chunks"])
    assert "missing" not in env, setup.stdout

    campaign("bench", "--work", work, "--out", out, "--hparams", hparams, "--cases", f"{hparams}:32:4",
             "--steps", "2", "--warmup", "1", "--profile", "2", "--quiet")  # fmt: skip
    bench = json.loads((out / "bench.json").read_text())
    case = bench["cases"][0]
    assert case["discriminator"]["hidden_size"] == 32 and case["generator_hidden_size"] == 16
    assert case["optimized"]["steps_per_second"] > 0 and case["naive"]["steps_per_second"] > 0
    assert case["optimized"]["profile"]["steps"] == 2

    # the optional compiled bench: torch.compile, its eager figure beside it; a failure is reported, not raised
    campaign("bench", "--work", work, "--out", out, "--hparams", hparams, "--cases", f"{hparams}:32:4",
             "--steps", "2", "--warmup", "2", "--profile", "0", "--compile", "--quiet")  # fmt: skip
    compiled = json.loads((out / "bench-compiled.json").read_text())["cases"][0]
    assert compiled["optimized"]["compiled"] and "naive" not in compiled
    assert compiled["eager_steps_per_second"] == case["optimized"]["steps_per_second"]
    assert compiled["speedup_over_eager"] > 0
    assert json.loads((out / "bench.json").read_text())["cases"][0]["optimized"]["compiled"] is False
    failed = campaign("bench", "--work", work, "--out", out, "--hparams", hparams,
                      "--cases", f"{tmp_path / 'missing.json'}:32:4", "--compile", "--quiet")  # fmt: skip
    assert "compiled bench failed" in failed.stdout
    after = json.loads((out / "bench-compiled.json").read_text())
    assert "missing.json" in after["error"] and after["cases"][0] == compiled  # the earlier figure is kept

    campaign("data", "--work", work, "--out", out, "--num-processes", "1", "--max-seq-length", "32")
    assert json.loads((out / "build_info.json").read_text())["max_seq_length"] == 32

    # under torch.compile, as --compile auto chooses when the compiled bench shows the gain
    # (the recipe's compile cache holds CUDA kernels: this CPU run is given none)
    campaign("train", "--work", work, "--out", out, "--hparams", hparams, "--minutes", "5", "--steps", "4",
             "--check-seconds", "0", "--compile", "on", "--compile-cache", tmp_path / "no-cache.bin.xz")  # fmt: skip
    # poll returns when the run ends; the long wait is for a CPU shared with another test worker (make test's -n)
    poll = campaign("poll", "--work", work, "--out", out, "--wait", "600")
    assert "done" in poll.stdout and '"returncode": 0' in poll.stdout, poll.stdout
    # the run's logs as they happened (read from run/log_history.jsonl: the console's copy is wrapped)
    shown = [json.loads(line) for line in poll.stdout.splitlines() if line.startswith("{")]
    assert [r["step"] for r in shown] == [2, 3, 4] and all("steps_per_second" in r for r in shown), poll.stdout
    evals = [json.loads(line[len("eval "):]) for line in poll.stdout.splitlines() if line.startswith("eval ")]
    assert evals and evals[-1]["step"] == 4 and 0.0 <= evals[-1]["eval_disc_auc"] <= 1.0, poll.stdout
    run_hp = json.loads((work / "run" / "hparams.json").read_text())
    assert run_hp["max_steps"] == 4 and run_hp["max_train_seconds"] == 300.0 and run_hp["warmup_steps"] == 1
    assert run_hp["torch_compile"] is True and run_hp["pad_to_multiple_of"] == 32  # data's max_seq_length

    campaign("collect", "--work", work, "--out", out)
    pieces = sorted(out.glob("results.tar.part-*"))
    assert pieces
    here = tmp_path / "brought-back"
    here.mkdir()
    (tmp_path / "results.tar").write_bytes(b"".join(p.read_bytes() for p in pieces))
    with tarfile.open(tmp_path / "results.tar") as tar:
        tar.extractall(here, filter="data")
    assert json.loads((here / "trainer_state.json").read_text())["global_step"] == 4
    first = json.loads((here / "first_compiled_step.json").read_text())  # the run compiled: its compile time
    assert first["seconds"] > 0 and first["compile_cache_loaded"] is False  # --compile-cache named no file
    assert json.loads((here / "bench-compiled.json").read_text())["cases"][0]["optimized"]["compiled"]
    assert "disc_auc" in json.loads((here / "eval.json").read_text())["metrics"]
    assert json.loads((here / "env.json").read_text())["device"] == "cpu"  # setup's, packed: the results name their machine
    from transformers import AutoModelForTokenClassification

    model = AutoModelForTokenClassification.from_pretrained(here / "export" / "discriminator", num_labels=3)
    assert model.config.hidden_size == 32

    shipped = tmp_path / "assets" / "bioelectra-small"
    campaign("ship", "--export", here / "export", "--target", shipped, "--generator-target", tmp_path / "generator")
    assert json.loads((tmp_path / "generator" / "config.json").read_text())["architectures"] == ["ElectraForMaskedLM"]
    from safetensors import safe_open

    with safe_open(shipped / "model.safetensors", "pt") as f:
        assert {str(f.get_tensor(k).dtype) for k in f.keys()} == {"torch.float16"}
    assert json.loads((shipped / "tokenizer_config.json").read_text())["model_max_length"] == 512
    assert (shipped / "vocab.txt").read_text().splitlines()[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

    campaign("finetune-eval", "--work", work, "--out", out, "--trials", "1", "--only", "ncbi-small", "probe-small",
             "bc5cdr-chem-twin", "--learning-rate", "1e-3", "--extra=--max-steps 2 --max-train-examples 8", "--quiet")  # fmt: skip
    results = json.loads((out / "finetune.json").read_text())
    assert set(results) == {"ncbi-small", "probe-small", "bc5cdr-chem-twin", "skipped", "learning_rate"}
    assert results["skipped"] == []
    assert set(results["probe-small"]["f1"]) == {"last_layer", "all_layers"}  # the probe ran on NCBI-disease
    assert results["learning_rate"] == {"rate": 1e-3, "why": "--learning-rate"}
    assert results["ncbi-small"]["summary"] and results["ncbi-small"]["wall_seconds"] > 0

    # the brought-back figures as tables (here: only ncbi-small and bc5cdr-chem's twin ran)
    report = campaign("report", "--results", here, "--finetune", out / "finetune.json").stdout
    assert "| steps | 4 of 4 planned, batch 4 |" in report and "| 4 | " in report, report  # the final evaluation
    assert "| NCBI-disease, finetune's defaults | " in report and "| BC5CDR-chem, finetune's defaults | - | - | " in report
    assert f"| bioelectra-small | {results['probe-small']['f1']['last_layer']:.2f} | " in report
    assert "| its untrained twin | - | - |" in report

    # a later run continues from the brought-back export: packed in bfloat16, with the export's own
    # vocabulary (a new build-vocab run need not give the same one), then trained with a fresh warmup
    dest2, work2 = tmp_path / "campaign-2", tmp_path / "device-work-2"
    campaign("pack", "--corpus-text", text, "--ner", tmp_path / "ner", "--work", tmp_path / "here-2", "--dest", dest2,
             "--no-wheels", "--pack-mib", "1", "--chunk-bytes", "15000", "--threads", "1", "--init-from", here / "export")  # fmt: skip
    exported_vocab = (here / "export" / "discriminator" / "vocab.txt").read_bytes()
    assert (dest2 / "pack-1" / "vocab" / "vocab.txt").read_bytes() == exported_vocab
    for part in ("discriminator", "generator"):
        packed = dest2 / "pack-1" / "init-from" / part
        assert (packed / "vocab.txt").read_bytes() == exported_vocab
        with safe_open(packed / "model.safetensors", "pt") as f:
            assert {str(f.get_tensor(k).dtype) for k in f.keys()} == {"torch.bfloat16"}
    campaign("setup", *[a for p in sorted(dest2.glob("pack-*")) for a in ("--pack", p)], "--work", work2, "--out", out)
    campaign("data", "--work", work2, "--out", out, "--num-processes", "1", "--max-seq-length", "32")
    # as the recipe's guide runs it: no --steps, the schedule fitted to the minutes as the run goes
    campaign("train", "--work", work2, "--out", out, "--hparams", hparams, "--minutes", "0.2", "--check-seconds", "0",
             "--set", "save_steps", "100000")  # fmt: skip
    poll = campaign("poll", "--work", work2, "--out", out, "--wait", "600")
    assert '"returncode": 0' in poll.stdout, poll.stdout
    run_hp = json.loads((work2 / "run" / "hparams.json").read_text())
    assert run_hp["init_from"] == str(work2 / "init-from") and run_hp["warmup_steps"] == 500, run_hp
    assert run_hp["fit_schedule_to_time"] is True and run_hp["max_train_seconds"] == 12.0
    final = json.loads(sorted((work2 / "run").glob("checkpoint-*/trainer_state.json"))[-1].read_text())
    assert 1 <= final["global_step"] < load_campaign().FITTED_MAX_STEPS  # stopped by its time, saved


def test_a_failed_whole_step_run_goes_on_with_the_trainers_step(tmp_path):
    """A run of the captured step that fails is run again with the Trainer's step, compiled as it was (the
    path the GPU runs before it trained on), for the time left; once only."""
    c = load_campaign()
    hp_file = tmp_path / "train-hparams.json"
    now, calls = {"t": 0.0}, []

    def run(cmd):
        calls.append(json.loads(hp_file.read_text()))
        now["t"] += 100.0
        return 1 if len(calls) == 1 else 0

    hp_file.write_text(json.dumps({"train_step": "captured", "torch_compile": True, "max_train_seconds": 420.0}))
    record = c.supervise(["pretrain"], tmp_path, call=run, clock=lambda: now["t"])
    assert record["returncode"] == 0 and record["whole_step_returncode"] == 1 and record["fallback"] == "trainer"
    assert calls[1]["train_step"] == "trainer" and calls[1]["torch_compile"] is True
    assert calls[1]["max_train_seconds"] == 320.0 and len(calls) == 2


def test_step_train_speed_leaves_out_the_first_window_and_compares_with_the_bench():
    c = load_campaign()
    history = [{"step": 1, "loss": 9.0, "steps_per_second": 0.02, "data_wait_fraction": 0.5},  # compilation and capture
               {"step": 200, "loss": 8.0, "steps_per_second": 90.0, "data_wait_fraction": 0.01},
               {"eval_loss": 1.0, "step": 200},
               {"step": 400, "loss": 7.0, "steps_per_second": 95.0},
               {"step": 600, "loss": 6.0, "steps_per_second": 85.0}]  # fmt: skip
    speed = c.train_speed(history, 100.0)
    assert speed["median_steps_per_second"] == 90.0 and speed["fraction_of_bench"] == 0.9
    assert speed["median_data_wait_fraction"] == 0.0  # 0.01 and 0 (none said) twice; with the first window's 0.5, 0.01
    assert [w["step"] for w in speed["windows"]] == [1, 200, 400, 600]
    assert c.train_speed([], None)["median_steps_per_second"] is None


def test_step_train_carries_the_runs_first_compiled_step(tmp_path, monkeypatch):
    """step-bench's train part puts the run's first_compiled_step.json into step-train.json, so that the bench's
    Markdown gives the real path's compile time a row beside the bench's loops (the run here is a stand-in that
    writes what a compiled pretrain train writes: a real compilation takes minutes on this CPU)."""
    c = load_campaign()
    step = sys.modules["campaign_step"]
    work, out = tmp_path / "work", tmp_path / "OUT"
    (work / "data").mkdir(parents=True)
    (work / "data" / "build_info.json").write_text("{}")  # data built: the part goes straight to the run
    first = {"seconds": 41.2, "global_step": 0, "compile_cache": str(work / "compile-cache.bin"),
             "compile_cache_loaded": True, "compile_cache_counts": {"fxgraph_cache_hit": 2, "fxgraph_cache_miss": 0}}  # fmt: skip

    def pretrain_train(args):
        run = args.work / "run"
        run.mkdir(parents=True)
        settings = {k: json.loads(v) for k, v in args.set}
        (run / "hparams.json").write_text(json.dumps({"max_seq_length": 128, "per_device_train_batch_size": 256,
                                                      "torch_compile": args.compile == "on", **settings}))  # fmt: skip
        windows = [{"step": 1, "loss": 9.0, "steps_per_second": 0.02}, {"step": 200, "loss": 8.0, "steps_per_second": 110.0}]
        (run / "log_history.jsonl").write_text("".join(json.dumps(w) + "\n" for w in windows))
        (run / "first_compiled_step.json").write_text(json.dumps(first))
        (args.work / "train-done.json").write_text(json.dumps({"returncode": 0}))

    monkeypatch.setattr(step, "cmd_train", pretrain_train)
    args = c.make_parser().parse_args(["step-bench", "--work", str(work), "--out", str(out), "--only", "train",
                                       "--compile-train", "on", "--train-minutes", "2"])  # fmt: skip
    assert step._train(args, 600.0, work / "compile-cache.bin")["status"] == "done"
    train = json.loads((out / "step-train.json").read_text())
    assert train["first_compiled_step"] == first and train["median_steps_per_second"] == 110.0
    assert train["train_step"] == "captured" and train["torch_compile"] is True
    report = load_script(REPO_ROOT / "bench" / "pretrain_report.py")
    rows = report.markdown(train).split("Time to the first fast step")[1].splitlines()
    assert "| bioelectra-small | 256 x 128 | `pretrain train` | loaded | 2 of 2 | 0 of 0 | 41.2 | met |" in rows, rows


def test_step_bench_dry_run_on_cpu(tmp_path):
    """step-bench's parts on the CPU with tiny cases, a built data folder standing in for `data`: the eager bench
    (naive, eager, captured loops), the loss check, then a short `pretrain train` of the captured step (running
    uncaptured here), each report under $OUT; a part that no longer fits the budget is skipped and said so.
    The compiled part is left out here (an inductor compilation takes about a minute on this CPU)."""
    from pretrain_fixture import make_data_dir

    hparams = tmp_path / "tiny.json"
    hparams.write_text(json.dumps(TINY))
    work, out = tmp_path / "work", tmp_path / "OUT"
    make_data_dir(work / "data")
    case = f"{hparams}:32:4"
    campaign("step-bench", "--work", work, "--out", out, "--hparams", hparams, "--only", "eager", "loss", "train",
             "--cases-eager", case, "--cases-loss", case, "--loss-steps", "3", "--steps", "2", "--warmup", "1",
             "--profile", "0", "--train-minutes", "1.5", "--set", "max_steps", "4", "--logging-steps", "1",
             "--compile-scope", "layers", "--compile-mode", "max-autotune-no-cudagraphs",
             "--compile-options", '{"epilogue_fusion": false}', "--bf16-weight-copies")  # fmt: skip
    record = json.loads((out / "step-bench.json").read_text())
    assert [record["parts"][p]["status"] for p in ("eager", "loss", "train")] == ["done"] * 3
    assert "compiled" not in record["parts"]
    eager = json.loads((out / "step-bench-eager.json").read_text())["cases"][0]
    assert eager["captured"]["whole_step"] and eager["captured"]["captured"] is False  # no CUDA here
    assert eager["captured"]["speedup"] > 0 and eager["optimized"]["steps_per_second"] > 0
    assert eager["captured"]["random_stream"]["fresh"] is True  # new dropout and samples at every step
    assert eager["captured"]["bf16_weight_copies"] is False  # asked for, but no bf16 autocast on this CPU: no casts to spare
    check = json.loads((out / "step-bench-loss.json").read_text())["cases"][0]["loss_check"]
    assert len(check["losses"]["eager"]) == len(check["losses"]["captured"]) == 3
    assert check["max_relative_difference"] < 1e-5  # uncaptured on the CPU: the same random stream
    train = json.loads((out / "step-train.json").read_text())
    assert train["train_step"] == "captured" and train["done"]["returncode"] == 0
    assert train["compiled"] is False and "no captured figure" in train["why"]
    assert [w["step"] for w in train["windows"]] == [1, 2, 3, 4] and train["median_steps_per_second"] > 0
    assert train["bench_best_steps_per_second"] == max(
        eager[k]["steps_per_second"] for k in ("optimized", "captured")
    )  # the recipe's case is the tiny hparams file here
    run_hp = json.loads((work / "run" / "hparams.json").read_text())
    assert run_hp["train_step"] == "captured" and run_hp["pad_to_multiple_of"] == 32
    assert run_hp["compile_scope"] == "layers"  # --compile-scope reaches the run (not compiled here)
    assert (run_hp["compile_mode"], run_hp["compile_options"]) == ("max-autotune-no-cudagraphs", {"epilogue_fusion": False})
    # the run names its case as the bench does, so the README's table puts it beside the bench's loops
    assert train["case"] == {"size": str(hparams), "seq_len": 32, "batch_size": 4}
    assert (train["compile_scope"], train["fuse_qkv"], "compile_options" in train) == ("layers", False, False)
    assert run_hp["bf16_weight_copies"] is True  # --bf16-weight-copies reaches the run
    assert train["bf16_weight_copies"] is False  # and the report says it was not used (no bf16 autocast here)
    table = load_script(REPO_ROOT / "bench" / "pretrain_throughput.py").markdown(
        json.loads((out / "step-bench-eager.json").read_text()), train)
    row = next(line for line in table.splitlines() if line.startswith(f"| {hparams.parent.name} | 4 x 32 |"))
    assert f"| {train['median_steps_per_second']:.2f} |" in row and "`pretrain train`" in table
    # a budget too small for any part: each is skipped and said so, nothing runs
    campaign("step-bench", "--work", work, "--out", tmp_path / "OUT2", "--hparams", hparams, "--budget-seconds", "10")
    skipped = json.loads((tmp_path / "OUT2" / "step-bench.json").read_text())["parts"]
    assert {p["status"] for p in skipped.values()} == {"skipped"} and len(skipped) == 4
    bad = subprocess.run([sys.executable, CAMPAIGN, "step-bench", "--work", work, "--out", tmp_path / "OUT3", "--hparams",
                          hparams, "--compile-scope", "model"], capture_output=True, text=True, cwd=REPO_ROOT)  # fmt: skip
    assert bad.returncode != 0 and "--compile-scope 'model': expected one of step, forward, layers" in bad.stderr
    assert not (tmp_path / "OUT3" / "step-bench.json").exists()  # refused before any part ran
    bad = subprocess.run([sys.executable, CAMPAIGN, "step-bench", "--work", work, "--out", tmp_path / "OUT4", "--hparams",
                          hparams, "--compile-options", '{"max_autotun": true}'], capture_output=True, text=True,
                         cwd=REPO_ROOT)  # fmt: skip
    assert bad.returncode != 0 and "'max_autotun' is not an option of torch's inductor" in bad.stderr
    assert not (tmp_path / "OUT4" / "step-bench.json").exists()


def test_a_shipped_discriminator_packs_alone_for_a_continuation(tmp_path):
    """`pack --init-from` the shipped model (a discriminator alone, float16): pack 1 carries it in bfloat16 with
    its vocabulary, no generator; `pretrain train --init-from` then starts the generator anew."""
    import torch

    from bioelectra.pretraining.checkpoints import build_model, discriminator_alone
    from bioelectra.pretraining.settings import resolve_hparams

    c = load_campaign()
    hp = resolve_hparams("small", {k: v for k, v in TINY.items() if k != "model_size"})
    shipped = tmp_path / "shipped"
    build_model("small", hp, vocab_size=120, pad_token_id=0).discriminator.to(torch.float16).save_pretrained(shipped)
    (shipped / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    c.bf16_copy(shipped, tmp_path / "init-from")
    assert sorted(p.name for p in (tmp_path / "init-from").iterdir()) == ["discriminator"]
    packed = tmp_path / "init-from" / "discriminator"
    assert (packed / "vocab.txt").read_text() == (shipped / "vocab.txt").read_text()
    from safetensors import safe_open

    with safe_open(packed / "model.safetensors", "pt") as f:
        assert {str(f.get_tensor(k).dtype) for k in f.keys()} == {"torch.bfloat16"}
    assert discriminator_alone(tmp_path / "init-from") == packed


def test_ship_keeps_the_generator_and_a_continuation_of_the_shipped_model_packs_it(tmp_path):
    """`ship` writes the export's generator (float16) beside the recipe; `pack --init-from` the shipped
    discriminator then carries that generator too, and the joint model loads both networks' weights."""
    import torch
    from transformers import BertTokenizerFast

    from bioelectra.pretraining.checkpoints import build_model, discriminator_alone, load_pretraining_model
    from bioelectra.pretraining.settings import resolve_hparams

    c = load_campaign()
    hp = resolve_hparams("small", {k: v for k, v in TINY.items() if k != "model_size"})
    model = build_model("small", hp, vocab_size=120, pad_token_id=0)
    torch.manual_seed(3)
    with torch.no_grad():
        for p in model.generator.parameters():
            p.add_(torch.randn_like(p))
    export = tmp_path / "export"  # export_checkpoint's layout
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(f"w{i}" for i in range(115))]) + "\n")
    for part, net in (("discriminator", model.discriminator), ("generator", model.generator)):
        net.save_pretrained(export / part)
        BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(export / part)
    shipped, kept = tmp_path / "shipped", tmp_path / "generator"
    c.cmd_ship(argparse.Namespace(export=export, target=shipped, generator_target=kept, max_mib=32.0))
    assert discriminator_alone(shipped) == shipped
    assert json.loads((kept / "config.json").read_text())["architectures"] == ["ElectraForMaskedLM"]

    c.bf16_copy(shipped, tmp_path / "init-from", kept)
    assert sorted(p.name for p in (tmp_path / "init-from").iterdir()) == ["discriminator", "generator"]
    assert discriminator_alone(tmp_path / "init-from") is None
    loaded = load_pretraining_model(tmp_path / "init-from")
    for (name, want), got in zip(model.generator.state_dict().items(), loaded.generator.state_dict().values(), strict=True):
        assert torch.equal(got, want.half().to(torch.bfloat16).float()), name  # shipped float16, packed bfloat16

    # an export without a generator removes the stale one: it belonged to the earlier discriminator
    shutil.rmtree(export / "generator")
    c.cmd_ship(argparse.Namespace(export=export, target=shipped, generator_target=kept, max_mib=32.0))
    assert not kept.exists()
    c.bf16_copy(shipped, tmp_path / "init-from-2", kept)
    assert sorted(p.name for p in (tmp_path / "init-from-2").iterdir()) == ["discriminator"]


def test_the_recipe_compile_cache_unpacks_once_into_the_work_folder(tmp_path):
    """``train`` and ``step-bench`` load torch.compile's artifacts from ``<work>/compile-cache.bin``: the carried
    file (xz or raw) is unpacked there when the folder has none, and a run's own artifacts are not overwritten.
    The recipe's committed cache is such an xz file (torch's cache artifacts, tens of MB unpacked)."""
    import lzma

    c = load_campaign()
    carried = tmp_path / "cache.bin.xz"
    carried.write_bytes(lzma.compress(b"artifacts"))
    work = tmp_path / "work"
    work.mkdir()
    target = c.unpack_compile_cache(carried, work)
    assert target == work / "compile-cache.bin" and target.read_bytes() == b"artifacts"
    target.write_bytes(b"the run's own")
    assert c.unpack_compile_cache(carried, work).read_bytes() == b"the run's own"
    raw, other = tmp_path / "raw.bin", tmp_path / "other"
    raw.write_bytes(b"raw artifacts")
    other.mkdir()
    assert c.unpack_compile_cache(raw, other).read_bytes() == b"raw artifacts"
    assert not c.unpack_compile_cache(tmp_path / "absent.xz", tmp_path).is_file()
    assert c.COMPILE_CACHE.is_file() and len(lzma.decompress(c.COMPILE_CACHE.read_bytes())) > 10_000_000


def test_a_continuation_of_the_shipped_model_reads_its_weights_from_the_checkout(tmp_path):
    """`pack --init-from` the shipped model writes only a note into pack 1 (the weights travel with the checkout
    already); `setup` of that pack copies the shipped discriminator and the generator kept beside the recipe
    into `init-from/`, which `pretrain train --init-from` loads."""
    c = load_campaign()
    pack = tmp_path / "pack-1"
    pack.mkdir()
    (pack / c.SHIPPED_INIT_MARKER).write_text(json.dumps({"parts": ["discriminator", "generator"]}))
    work = tmp_path / "work"
    campaign("setup", "--work", work, "--out", tmp_path / "out", "--pack", pack, "--skip-wheels")
    disc = work / "init-from" / "discriminator"
    assert (disc / "model.safetensors").read_bytes() == (c.SHIPPED / "model.safetensors").read_bytes()
    assert (disc / "vocab.txt").read_text() == (c.SHIPPED / "vocab.txt").read_text()
    assert not (disc / "README.md").exists()  # the model card stays in the package
    if (c.SHIPPED_GENERATOR / "config.json").is_file():
        gen = work / "init-from" / "generator"
        assert (gen / "model.safetensors").read_bytes() == (c.SHIPPED_GENERATOR / "model.safetensors").read_bytes()
    assert c.shipped_init_from(tmp_path / "again") == [
        name for name, d in (("discriminator", c.SHIPPED), ("generator", c.SHIPPED_GENERATOR)) if (d / "config.json").is_file()
    ]


def test_a_wheels_only_pack_carries_the_wheels_and_no_text(tmp_path, monkeypatch):
    """`pack --wheels-only` (what issue 45's step benchmarks carry) writes pack 1 with the wheels and a manifest
    alone, without reading the corpus, and `setup` of it records the machine with no text expected. pip is a
    stand-in here (the real download is a network call); each wheel it is asked for becomes a file."""
    c = load_campaign()
    here = sys.modules["campaign_here"]
    asked = []

    def pip(cmd):
        cmd = [str(a) for a in cmd]
        at = cmd.index("-d" if "download" in cmd else "-w") + 1  # the target folder, then the wheels asked for
        folder = Path(cmd[at])
        folder.mkdir(parents=True, exist_ok=True)
        for spec in cmd[at + 1:]:
            asked.append(spec)
            (folder / (spec.replace("==", "-") + "-py3-none-any.whl")).write_bytes(b"wheel")

    monkeypatch.setattr(here, "run", pip)
    dest = tmp_path / "campaign"
    (dest / "pack-2").mkdir(parents=True)  # an earlier pack's leftovers are removed
    args = c.make_parser().parse_args(["pack", "--wheels-only", "--dest", str(dest), "--corpus", str(tmp_path / "absent"),
                                       "--work", str(tmp_path / "here")])  # fmt: skip
    args.fn(args)
    assert asked == [*here.WHEELS, *here.SOURCE_ONLY_WHEELS, here.PYARROW_WHEEL]
    assert sorted(p.name for p in dest.iterdir()) == ["manifest.json", "pack-1", "pack-pyarrow"]
    assert not (tmp_path / ".campaign.tmp").exists()  # built there, then renamed
    assert sorted(p.name for p in (dest / "pack-1").iterdir()) == ["manifest.json", "wheels"]
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["wheels_only"] and manifest["chunks"] == [] and len(manifest["wheels"]) == 4
    assert not (tmp_path / "here").exists()  # no corpus read, no vocabulary built
    campaign("setup", "--work", tmp_path / "work", "--out", tmp_path / "out", "--pack", dest / "pack-1", "--skip-wheels")
    env = json.loads((tmp_path / "out" / "env.json").read_text())
    assert env["corpus_files"] == env["corpus_chunks_expected"] == 0 and "missing" not in env
    for wrong in (["--no-wheels"], ["--init-from", str(tmp_path)]):
        args = c.make_parser().parse_args(["pack", "--wheels-only", "--dest", str(dest), *wrong])
        with pytest.raises(SystemExit, match="--wheels-only packs the wheels alone"):
            args.fn(args)

    def offline(cmd):
        raise SystemExit(f"error: {cmd[0]} failed (offline)")

    monkeypatch.setattr(here, "run", offline)  # a failed download leaves the packs there as they were
    args = c.make_parser().parse_args(["pack", "--wheels-only", "--dest", str(dest)])
    with pytest.raises(SystemExit, match="offline"):
        args.fn(args)
    assert sorted(p.name for p in (dest / "pack-1" / "wheels").iterdir()) == sorted(manifest["wheels"])
    assert not (tmp_path / ".campaign.tmp").exists()
