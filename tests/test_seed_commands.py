"""Every command line printed in the project's seed documents (../shared/seeds), through our entry points.

Each test names the seed and the original command. Paths are replaced by fixtures and sizes are made tiny
(a few steps, a tiny model); everything else is as the seed wrote it. The original scripts map onto ours:
``build_pretraining_dataset.py`` -> ``pretrain.py build-data``, ``run_pretraining.py`` -> ``pretrain.py
train``, ``run_finetuning.py`` -> ``run_finetuning.py``, transformers' ``convert_electra_original_tf_checkpoint
_to_pytorch.py`` -> ``convert_tf_checkpoint.py``; ``finetune.py`` is already ours.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO_ROOT
from typer.testing import CliRunner

from bioelectra.cli import _single, normalize_original_flags, pretrain_app
from bioelectra.presets import bio_electra_vocab_file

runner = CliRunner()
TINY_MODEL = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
WORDS = "the patient tumor cancer gene protein cell expression disease mice therapy dose was with of in and".split()


def invoke(app, args: list) -> str:
    result = runner.invoke(app, normalize_original_flags([str(a) for a in args]))
    assert result.exit_code == 0, f"{args[:3]}: exit {result.exit_code}\n{result.output[-3000:]}\n{result.exception!r}"
    return result.output


def invoke_fails(app, args: list) -> str:
    result = runner.invoke(app, normalize_original_flags([str(a) for a in args]))
    assert result.exit_code == 2, f"expected a clear error (exit 2), got {result.exit_code}\n{result.output[-2000:]}"
    assert "Traceback" not in result.output
    return result.output


def write_corpus(folder: Path) -> Path:
    """Two text files, one sentence per line, a blank line between documents."""
    rng = random.Random(0)
    folder.mkdir(parents=True)
    for k in range(2):
        docs = []
        for _ in range(40):
            docs.append("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) for _ in range(3)))
        (folder / f"part{k}.txt").write_text("\n\n".join(docs) + "\n")
    return folder


@pytest.fixture(scope="module")
def pretraining_dir(tmp_path_factory) -> Path:
    """Seed 000: ``python build_pretraining_dataset.py --corpus-dir $corpus_path --vocab-file
    $model_path/vocab.txt --output-dir $model_path/pretrain_tfrecords --max-seq-length 128
    --blanks-separate-docs False --do-lower-case --do-strip-accents --num-processes 8``."""
    root = tmp_path_factory.mktemp("seed000")
    corpus = write_corpus(root / "corpus")
    model_path = root / "model"
    model_path.mkdir()
    shutil.copy(bio_electra_vocab_file(), model_path / "vocab.txt")
    invoke(pretrain_app, ["build-data", "--corpus-dir", corpus, "--vocab-file", model_path / "vocab.txt",
                          "--output-dir", model_path / "pretrain_tfrecords", "--max-seq-length", "128",
                          "--blanks-separate-docs", "False", "--do-lower-case", "--do-strip-accents",
                          "--num-processes", "8"])  # fmt: skip
    return model_path


def test_seed000_build_pretraining_dataset_blanks_separate_docs_false(pretraining_dir):
    info = json.loads((pretraining_dir / "pretrain_tfrecords" / "build_info.json").read_text())
    # what the user wrote: blank lines do NOT separate documents (the original's type=bool read it as True)
    assert info["options"]["blanks_separate_docs"] is False
    assert info["do_lower_case"] is True and info["max_seq_length"] == 128


def test_seed000_run_pretraining_with_the_original_hparams(pretraining_dir):
    """Seed 000: ``python3 electra_repo/run_pretraining.py --data-dir $model_path --model-name $model_name
    --hparams '{"model_size": "small", "num_train_steps": 1000000, "vocab_size": 169300}'`` (steps and model
    tiny; vocab_size that of the vocabulary used, as in the seed)."""
    vocab_size = sum(1 for _ in open(pretraining_dir / "vocab.txt"))
    hparams = {"model_size": "small", "num_train_steps": 2, "vocab_size": vocab_size,
               "model_hparam_overrides": TINY_MODEL, "train_batch_size": 4, "eval_batch_size": 4,
               "num_eval_steps": 1, "keep_checkpoint_max": 1, "use_tpu": False}  # fmt: skip
    invoke(pretrain_app, ["train", "--data-dir", pretraining_dir, "--model-name", "bio_electra_small",
                          "--hparams", json.dumps(hparams)])  # fmt: skip
    run = pretraining_dir / "models" / "bio_electra_small"
    recorded = json.loads((run / "hparams.json").read_text())
    assert recorded["max_steps"] == 2 and recorded["save_total_limit"] == 1
    assert recorded["ignored_original_hparams"] == {"use_tpu": False}
    assert (run / "eval_results.json").is_file()

    # Seed 001: run_pretraining.py --data-dir $DATA_DIR --model-name electra_small_owt
    #           --hparams '{"do_train": false, "do_eval": true}'  (evaluate only)
    out = invoke(pretrain_app, ["train", "--data-dir", pretraining_dir, "--model-name", "bio_electra_small",
                                "--hparams", json.dumps({"do_train": False, "do_eval": True, "num_eval_steps": 1,
                                                         "eval_batch_size": 4})])  # fmt: skip
    assert '"disc_auc"' in out and '"train_loss": null' in out

    # the checkpoint's vocabulary must be the data's: a wrong vocab_size is a clear error
    bad = {**hparams, "vocab_size": 169300}
    output = invoke_fails(pretrain_app, ["train", "--data-dir", pretraining_dir, "--model-name", "other",
                                         "--hparams", json.dumps(bad)])  # fmt: skip
    assert "vocab_size=169300" in output and str(vocab_size) in output


def test_seed002_build_data_no_lower_case_and_run_pretraining_hparams_file(tmp_path):
    """Seed 002: ``build_pretraining_dataset.py --corpus-dir $DATA_DIR --vocab-file $DATA_DIR/vocab.txt
    --output-dir $DATA_DIR/pretrain_tfrecords --max-seq-length 128 --blanks-separate-docs False
    --no-lower-case --num-processes 5``, then ``run_pretraining.py --data-dir $DATA_DIR --model-name
    $MODEL_NAME --hparams "/content/drive/.../hparams.json"`` (a file) and ``run_pretraining.py --data-dir
    $DATA_DIR --model-name electra_small`` (given the same tiny hparams: the defaults are 1M steps)."""
    data_dir = tmp_path / "data"
    corpus = write_corpus(tmp_path / "corpus")
    data_dir.mkdir()
    shutil.copy(bio_electra_vocab_file(), data_dir / "vocab.txt")
    invoke(pretrain_app, ["build-data", "--corpus-dir", corpus, "--vocab-file", data_dir / "vocab.txt",
                          "--output-dir", data_dir / "pretrain_tfrecords", "--max-seq-length", "128",
                          "--blanks-separate-docs", "False", "--no-lower-case", "--num-processes", "5"])  # fmt: skip
    info = json.loads((data_dir / "pretrain_tfrecords" / "build_info.json").read_text())
    assert info["do_lower_case"] is False and info["options"]["blanks_separate_docs"] is False
    hparams_file = tmp_path / "hparams.json"
    hparams_file.write_text(json.dumps({"model_size": "small", "num_train_steps": 1, "train_batch_size": 4,
                                        "model_hparam_overrides": TINY_MODEL, "do_lower_case": False,
                                        "num_eval_steps": 1, "eval_batch_size": 4}))  # fmt: skip
    invoke(pretrain_app, ["train", "--data-dir", data_dir, "--model-name", "electra_MALS", "--hparams", hparams_file])
    assert (data_dir / "models" / "electra_MALS" / "checkpoint-1").is_dir()
    # the casing is fixed by build-data: saying otherwise is a clear error, not a silently other model
    hparams_file.write_text(json.dumps({**json.loads(hparams_file.read_text()), "do_lower_case": True}))
    output = invoke_fails(pretrain_app, ["train", "--data-dir", data_dir, "--model-name", "x", "--hparams", hparams_file])
    assert "do_lower_case" in output


@pytest.fixture
def tf_model_dir(tmp_path) -> Path:
    """A TF checkpoint directory with the config.json the old transformers converter read."""
    target = tmp_path / "models" / "electra_MALS"
    shutil.copytree(FIXTURES / "tf_checkpoints" / "fp32-tied", target)
    (target / "hparams.json").unlink(missing_ok=True)
    config = {"model_type": "electra", "vocab_size": 40, "embedding_size": 8, "hidden_size": 16,
              "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32,
              "max_position_embeddings": 16, "type_vocab_size": 2}  # fmt: skip
    (target / "config.json").write_text(json.dumps(config))
    return target


@pytest.mark.parametrize("part", ["discriminator", "generator"])
def test_seed000_transformers_converter_flags(tf_model_dir, part):
    """Seed 000: ``python .../convert_electra_original_tf_checkpoint_to_pytorch.py --tf_checkpoint_path
    $MODEL_DIR --config_file $MODEL_DIR/config.json --pytorch_dump_path $MODEL_DIR/pytorch_model.bin
    --discriminator_or_generator $ELECTRA_EXPORT``."""
    out = invoke(_single("convert"), ["--tf_checkpoint_path", tf_model_dir, "--config_file", tf_model_dir / "config.json",
                                      "--pytorch_dump_path", tf_model_dir / "pytorch_model.bin",
                                      "--discriminator_or_generator", part])  # fmt: skip
    written = tf_model_dir / "pytorch_model"  # the directory beside the file name given
    assert "names a file" in out and (written / "config.json").is_file()
    arch = json.loads((written / "config.json").read_text())["architectures"]
    assert arch == (["ElectraForPreTraining"] if part == "discriminator" else ["ElectraForMaskedLM"])


def test_seed002_converter_with_equals_and_electra_config_file(tf_model_dir):
    """Seed 002: ``convert_electra_tf_checkpoint_to_pytorch.py --tf_checkpoint_path=$DIR/
    --electra_config_file=$DIR/config.json --pytorch_dump_path=$DIR/pytorch_model.bin``."""
    invoke(_single("convert"), [f"--tf_checkpoint_path={tf_model_dir}/", f"--electra_config_file={tf_model_dir}/config.json",
                                f"--pytorch_dump_path={tf_model_dir}/pytorch_model.bin"])  # fmt: skip
    assert (tf_model_dir / "pytorch_model" / "model.safetensors").is_file()


def test_converter_accepts_every_original_pretraining_hparam(tf_model_dir):
    """An hparams.json with the --hparams of the original run_pretraining.py, keep_checkpoint_max and the
    Electric-era keys included (refused before: the converter kept its own, shorter list)."""
    (tf_model_dir / "config.json").unlink()
    (tf_model_dir / "hparams.json").write_text(json.dumps(
        {"model_size": "small", "model_hparam_overrides": {"hidden_size": 16, "num_attention_heads": 2},
         "keep_checkpoint_max": 3, "electric_objective": False, "two_tower_generator": False, "use_tpu": True}))  # fmt: skip
    invoke(_single("convert"), [tf_model_dir, "-o", tf_model_dir.parent / "hf"])
    assert (tf_model_dir.parent / "hf" / "model.safetensors").is_file()


@pytest.fixture
def finetuning_data_dir(tmp_path, tiny_checkpoint) -> Path:
    """The original DATA_DIR: models/electra-small (our tiny checkpoint) and finetuning_data/<task>."""
    data_dir = tmp_path / "DATA_DIR"
    shutil.copytree(tiny_checkpoint, data_dir / "models" / "electra-small")
    shutil.copytree(FIXTURES / "ner-tiny", data_dir / "finetuning_data" / "ncbi-disease")
    shutil.copytree(FIXTURES / "re-gad" / "1", data_dir / "finetuning_data" / "gad")
    return data_dir


@pytest.mark.parametrize("task", ["gad", "ncbi-disease"])
def test_seed000_run_finetuning(finetuning_data_dir, task):
    """Seed 000: ``python run_finetuning.py --data-dir $DATA_DIR --model-name electra-small --hparams
    '{"model_size": "small", "task_names": ["<task>"], "learning_rate": 3e-4, "max_seq_length": 128,
    "num_trials": 10, "num_train_epochs": 10.0, "train_batch_size": 32, "eval_batch_size": 32,
    "predict_batch_size": 32}'`` (2 trials of 1 epoch)."""
    hparams = {"model_size": "small", "task_names": [task], "learning_rate": 3e-4, "max_seq_length": 128,
               "num_trials": 2, "num_train_epochs": 1.0, "train_batch_size": 32, "eval_batch_size": 32,
               "predict_batch_size": 32}  # fmt: skip
    invoke(_single("run-finetuning"), ["--data-dir", finetuning_data_dir, "--model-name", "electra-small",
                                       "--hparams", json.dumps(hparams)])  # fmt: skip
    model = finetuning_data_dir / "models" / "electra-small"
    lines = (model / "results" / f"{task}_results.txt").read_text().splitlines()
    assert len(lines) == 2 and all(line.startswith(f"{task}: precision: ") and " - f1: " in line for line in lines)
    report = json.loads((model / "finetuning_models" / f"{task}_model" / "results.json").read_text())
    assert report["settings"]["learning_rate"] == 3e-4 and report["settings"]["layerwise_lr_decay"] == 0.8
    assert report["settings"]["per_device_eval_batch_size"] == 32 and report["num_trials"] == 2
    assert report["settings"]["optimizer"] == "electra" and report["settings"]["dropout"] == 0.1  # the original's

    # the original's evaluation of a fine-tuned model: do_train false, do_eval true, init_checkpoint
    trial_model = model / "finetuning_models" / f"{task}_model" / "trial-0" / "model"
    evaluation = {"task_names": [task], "do_train": False, "do_eval": True, "init_checkpoint": str(trial_model)}
    invoke(_single("run-finetuning"), ["--data-dir", finetuning_data_dir, "--model-name", "electra-small",
                                       "--hparams", json.dumps(evaluation)])  # fmt: skip
    line = (model / "results" / f"{task}_results.txt").read_text().splitlines()
    assert line == lines[:1]  # the first trial's development scores, reproduced without training


@pytest.mark.parametrize(
    ("hparams", "message"),
    [
        # Seed 001: run_finetuning.py ... '{"model_size": "base", "task_names": ["mnli"], "do_train": false,
        #           "do_eval": true, "init_checkpoint": "<data-dir>/models/electra_base/finetuning_models/mnli_model_1"}'
        ({"model_size": "base", "task_names": ["mnli"], "do_train": False, "do_eval": True,
          "init_checkpoint": "x/finetuning_models/mnli_model_1"}, 'evaluates "init_checkpoint"'),  # fmt: skip
        # Seed 001: run_finetuning.py ... '{"model_size": "base", "task_names": ["squad"]}' (and ["chunk"])
        ({"model_size": "base", "task_names": ["squad"]}, "task 'squad'"),
        ({"model_size": "base", "task_names": ["chunk"]}, "task 'chunk'"),
        ({"task_names": ["ncbi-disease"], "learning_rat": 1e-4}, "unknown hparam(s) ['learning_rat']"),
    ],
)
def test_seed001_run_finetuning_tasks_we_do_not_have_are_clear_errors(finetuning_data_dir, hparams, message):
    output = invoke_fails(_single("run-finetuning"), ["--data-dir", finetuning_data_dir, "--model-name", "electra_base",
                                                      "--hparams", json.dumps(hparams)])  # fmt: skip
    assert message in output.replace("\n", " ")


@pytest.mark.parametrize(("loader", "dataset"), [("re", "gad"), ("ner", "ncbi-disease")])
def test_seed000_finetune_commands(tmp_path, monkeypatch, loader, dataset):
    """Seed 000: ``python finetune.py --ckpt electra-small --loader re --dataset gad --output_dir finetune
    --greater_is_better --metric f1 --trials 3 --epochs 3`` (and ``--loader ner --dataset ncbi-disease``),
    one optimizer step per trial on 16 training examples; GAD from a cache holding the fixture."""
    monkeypatch.setenv("BIOELECTRA_CACHE", str(tmp_path / "cache"))
    shutil.copytree(FIXTURES / "re-gad", tmp_path / "cache" / "datasets" / "gad")
    monkeypatch.chdir(tmp_path)
    trials = "3" if loader == "re" else "1"  # NER evaluates the whole shipped NCBI-disease dev and test sets
    args = ["--ckpt", "electra-small", "--loader", loader, "--dataset", dataset, "--output_dir", "finetune",
            "--greater_is_better", "--metric", "f1", "--trials", trials, "--epochs", "3", "--max-steps", "1",
            "--max-train-examples", "16", *(["--fold", "1"] if loader == "re" else [])]  # fmt: skip
    invoke(_single("finetune"), args)
    assert json.loads((tmp_path / "finetune" / "results.json").read_text())["num_trials"] == int(trials)


def test_entry_script_rewrites_the_original_boolean_value(tmp_path):
    """The real ``python pretrain.py`` process (not the test runner): ``--blanks-separate-docs False``."""
    corpus = write_corpus(tmp_path / "corpus")
    result = subprocess.run(
        [sys.executable, REPO_ROOT / "pretrain.py", "build-data", "--corpus-dir", corpus, "--output-dir",
         tmp_path / "out", "--blanks-separate-docs", "False", "--max-seq-length", "32"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((tmp_path / "out" / "build_info.json").read_text())["options"]["blanks_separate_docs"] is False
    bad = subprocess.run([sys.executable, REPO_ROOT / "pretrain.py", "build-data", "--blanks-separate-docs=maybe"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert bad.returncode == 2 and "expected True or False" in bad.stdout + bad.stderr
