"""Every option checked against the kind and its range before any data is read; the options that limit a
run the same in finetune, benchmark and evaluate; help text and messages shown as written (issues #49, #50)."""

import logging

import pytest
from conftest import FIXTURES
from test_bad_input import fails_clearly as fails_clearly_in
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DownstreamError
from downstream.settings import FinetuneSettings

runner = CliRunner()


def fails_clearly(args, *needles):
    """test_bad_input's check (exit 2, no traceback, each needle in the message) on the whole app."""
    return fails_clearly_in(app, args, *needles)


def test_a_metric_another_kind_reports_is_refused_before_any_work(tmp_path, tiny_checkpoint):
    out = tmp_path / "run"
    fails_clearly(["finetune", "--loader", "ner", "--data-dir", FIXTURES / "ner-tiny", "--ckpt", tiny_checkpoint,
                   "--metric", "mrr", "--output-dir", out],
                  "--metric 'mrr': expected one of f1, precision, recall, accuracy, loss for --loader ner")  # fmt: skip
    assert not out.exists()
    # extractive QA's own measures are its to choose
    from downstream.options import check_kind_metric

    check_kind_metric("qa", "mrr")
    with pytest.raises(DownstreamError, match="for --loader yesno"):
        check_kind_metric("yesno", "exact_match")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--protocol", "blurp"], "--protocol 'blurp': expected one of"),
        (["--data-root", "/nonexistent/data"], "--data-root /nonexistent/data: does not exist"),
        (["--suite", "nosuch"], "--suite 'nosuch': expected"),
        (["--max-eval-examples", "0"], "--max-eval-examples 0: expected at least 1"),
    ],
)
def test_benchmark_options_are_checked_before_anything_is_built(tmp_path, args, needle):
    out = tmp_path / "bench"
    fails_clearly(["benchmark", "--ckpt", "electra-small", "--output-dir", out, *args], needle)
    assert not out.exists()  # no preset checkpoint built, no data read


def test_seeds_out_of_range_are_refused_before_the_data_is_read(tmp_path, tiny_checkpoint):
    too_big = str(10**20)
    for command in (["finetune", "--data-dir", FIXTURES / "ner-tiny"], ["benchmark"]):
        fails_clearly([*command, "--ckpt", tiny_checkpoint, "--seed", too_big, "--output-dir", tmp_path / "s"], "--seed")
    # the last trial's seed must fit too (trial i uses seed + i)
    with pytest.raises(ValueError, match="--seed 4294967295"):
        FinetuneSettings(task="ner", checkpoint="c", output_dir=tmp_path, seed=2**32 - 1, num_trials=2)
    with pytest.raises(ValueError, match="--seed -1"):
        FinetuneSettings(task="ner", checkpoint="c", output_dir=tmp_path, seed=-1)
    assert not (tmp_path / "s").exists()


def _options(command_name: str) -> set[str]:
    import typer.main

    command = typer.main.get_command(app).commands[command_name]
    return {opt for param in command.params for opt in getattr(param, "opts", [])}


def test_the_options_that_limit_a_run_are_the_same_in_every_command():
    limits = {"--max-steps", "--max-train-examples", "--max-eval-examples"}
    assert limits <= _options("finetune")
    assert limits <= _options("benchmark")
    assert "--max-eval-examples" in _options("evaluate")  # evaluate trains nothing: the scoring limit only
    assert "--entity-type" in _options("evaluate")


def test_max_eval_examples_scores_only_the_first_dev_and_test_sentences(tmp_path):
    from downstream.kinds import build_task, task_class

    settings = FinetuneSettings(task="ner", checkpoint="c", output_dir=tmp_path, data_dir=FIXTURES / "ner-tiny",
                                max_eval_examples=2, entity_type="Disease")  # fmt: skip
    kind = task_class("ner")
    task = build_task("ner", kind.locate_files(settings), **kind.options(settings))
    assert len(task.splits["dev"].sentences) == 2 and len(task.splits["test"].sentences) == 2
    assert len(task.splits["train"].sentences) > 2
    # a limit changes the scores, so the trials' fingerprint; none leaves earlier runs' fingerprints alone
    unlimited = FinetuneSettings(task="ner", checkpoint="c", output_dir=tmp_path, data_dir="d")
    limited = FinetuneSettings(task="ner", checkpoint="c", output_dir=tmp_path, data_dir="d", max_eval_examples=5)
    assert unlimited.fingerprint() != limited.fingerprint()


def test_max_eval_examples_keeps_whole_questions():
    from types import SimpleNamespace

    from downstream.task import first_questions

    examples = [SimpleNamespace(question_id=q) for q in ("a", "a", "b", "c", "c", "d")]
    assert [e.question_id for e in first_questions(examples, 3)] == ["a", "a", "b", "c", "c"]
    assert first_questions(examples, None) == examples


def test_re_logs_the_training_count_after_the_dev_cut_and_the_limit(tmp_path, tiny_checkpoint, caplog):
    from downstream.trial.runner import run_trials

    settings = FinetuneSettings(task="re", checkpoint=str(tiny_checkpoint), output_dir=tmp_path / "re",
                                data_dir=FIXTURES / "re-chemprot", max_train_examples=3, max_eval_examples=2,
                                max_steps=1, max_seq_length=32, per_device_train_batch_size=2)  # fmt: skip
    with caplog.at_level(logging.INFO):
        run_trials(settings)
    line = next(r.getMessage() for r in caplog.records if ": train " in r.getMessage())
    assert ": train 3 / dev 2 / test 2 examples" in line, line
    assert any("--max-eval-examples" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_help_text_keeps_the_extras_names():
    result = runner.invoke(app, ["finetune", "--help"], env={"COLUMNS": "300"})
    text = " ".join(result.output.split())
    assert "bioelectra[search]" in text and "bioelectra[logging]" in text


def test_an_error_message_with_brackets_is_shown_as_written(capsys):
    import typer

    from bioelectra.cli.common import _fail

    with pytest.raises(typer.Exit):
        _fail(ValueError('pip install "bioelectra[plots]"'))
    assert "bioelectra[plots]" in capsys.readouterr().err


def test_convert_names_its_overwrite_flag(tmp_path):
    from bioelectra.tf.convert import convert_tf_checkpoint

    target = tmp_path / "out"
    target.mkdir()
    (target / "x").write_text("x")
    with pytest.raises(Exception, match="--overwrite"):
        convert_tf_checkpoint(FIXTURES / "tf_checkpoints" / "fp32-tied", target)
