"""Pre-training on two machines, simulated on this host, and the distributed safeguards of ``pretrain train``.

The slow test starts two ``accelerate launch`` commands as two machines (``--num_machines 2
--num_processes 2 --machine_rank 0|1 --main_process_ip 127.0.0.1``, one CPU process each, gloo), each
running ``pretrain.py train`` with the same ``--hparams``; then single-process runs of the same command, and
a resume of the two-machine run on one process.

Why the losses are compared with a tolerance, and how the data make that tolerance tight. The global batch
is the same set of examples on 1 or 2 processes: the Trainer's sampler (accelerate's
``SeedableRandomSampler``, seeded with ``data_seed``) gives every rank the same permutation, and
accelerate's ``BatchSamplerShard`` hands per-device batch ``i`` to rank ``i % world_size``, so optimizer
step ``k`` trains on examples ``perm[8k : 8k + 8]`` whether one process reads them as 4 micro-batches of 2
or each of two ranks reads 2 of those micro-batches. The losses still cannot be equal: masking, the generator's sampling and dropout
draw from each process's own random stream (``seed + rank``, :class:`RankSeedCallback`), so the masked
positions of an example differ between the runs, and a run's loss is the mean of the ranks' means.
So the examples here are built for the loss to be a fingerprint of the batch and nearly blind to the
masks: example ``i`` repeats one word ``w_i`` (every masked position has the same label, whatever is
masked), all examples have the same length (the same number of masked positions, so a mean of rank means
is the mean over the global batch), dropout is off, and the run starts (``--init-from``) from a model whose
generator output bias gives word ``w_i`` the logit ``BIAS_STEP * i``: the generator's loss on example ``i``
is about ``BIAS_STEP * (63 - i) + 1.5`` nats, so a batch's loss is set by which examples are in it.
A different set of 8 examples moves the mean by about a nat; what is left of the random masking moves it
by hundredths. ``TOLERANCE`` sits between, and the test checks that it separates: runs with a global batch
of 4 and of 16 must be farther than it from the reference at some step.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from pretrain_fixture import SPECIALS, WORDS

REPO = Path(__file__).resolve().parent.parent
PRETRAIN = REPO / "pretrain.py"

#: Examples of the fingerprint data (one word each), tokens per example, generator-bias step per example.
NUM_EXAMPLES = 64
EXAMPLE_LENGTH = 16
BIAS_STEP = 0.25

#: Largest |loss difference| (total loss, and mlm_loss, in nats) at a step between the two-machine run and
#: one process on the same global batch. Measured here: at most 0.027 at steps 1-6 and 0.024 at steps 7-9
#: after the resume (what the random masks and samples leave); global batches of 4 and 16 are 1.98 and 1.86
#: away at their farthest step, and rank 0's own mlm_loss (not averaged over the ranks) is 2.99 away.
TOLERANCE = 0.25

#: The same ``--hparams`` for every run: a 2-layer model read from ``--init-from``; ``train_batch_size``
#: is the global batch, the per-device cap of 2 turns the rest into accumulation (2 on 2 processes, 4 on 1).
HPARAMS = {
    "train_batch_size": 8,
    "per_device_train_batch_size": 2,
    "num_train_steps": 6,
    "save_checkpoints_steps": 3,
    "learning_rate": 1e-3,
    "warmup_steps": 2,
    "eval_steps": 0,
    "num_eval_steps": 1,
    "per_device_eval_batch_size": 8,
    "logging_steps": 1,
    "attn_implementation": "eager",
}

#: The architecture of the ``--init-from`` model (dropout off: no random masks in the forward pass).
MODEL = {
    "model_hparam_overrides": {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 64,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
    },
    "embedding_size": 32,
    "generator_hidden_size": 0.5,
}


def _free_port() -> int:
    """A free TCP port on 127.0.0.1; skips the test, saying so, when none can be bound."""
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    except OSError as exc:
        pytest.skip(f"cannot bind a TCP port on 127.0.0.1 for the rendezvous of the two machines: {exc}")


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    env["CUDA_VISIBLE_DEVICES"] = ""  # CPU and gloo, also on a machine with one GPU
    env["COLUMNS"] = "400"  # log lines unwrapped
    for name in ("ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(name, None)
    return env


def make_fingerprint_data(root: Path) -> Path:
    """A ``build-data`` directory whose train example ``i`` is ``[CLS] w_i x 14 [SEP]`` (module docstring)."""
    import datasets

    from bioelectra.presets import load_wordpiece_tokenizer

    root.mkdir(parents=True)
    (root / "vocab.txt").write_text("\n".join(SPECIALS + WORDS) + "\n", encoding="utf-8")
    tokenizer = load_wordpiece_tokenizer(root / "vocab.txt", do_lower_case=False)
    tokenizer.save_pretrained(str(root / "tokenizer"))
    first_word = len(SPECIALS)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id

    def split(words: range) -> datasets.Dataset:
        ids = [[cls, *[first_word + w] * (EXAMPLE_LENGTH - 2), sep] for w in words]
        return datasets.Dataset.from_dict(
            {"input_ids": ids, "token_type_ids": [[0] * EXAMPLE_LENGTH for _ in ids]},
            features=datasets.Features(
                {
                    "input_ids": datasets.Sequence(datasets.Value("int32")),
                    "token_type_ids": datasets.Sequence(datasets.Value("int8")),
                }
            ),
        )

    examples = datasets.DatasetDict(
        {"train": split(range(NUM_EXAMPLES)), "validation": split(range(NUM_EXAMPLES, NUM_EXAMPLES + 8))}
    )
    examples.save_to_disk(str(root / "examples"))
    info = {"max_seq_length": EXAMPLE_LENGTH, "do_lower_case": False, "vocab_size": len(tokenizer)}
    (root / "build_info.json").write_text(json.dumps(info), encoding="utf-8")
    return root


def make_init_model(path: Path, data_dir: Path) -> Path:
    """The ``--init-from`` model: :data:`MODEL`, with the generator's output bias ``BIAS_STEP * i`` on word
    ``w_i`` of the training examples (0 elsewhere)."""
    from bioelectra.pretraining.checkpoints import build_model
    from bioelectra.pretraining.inputs import load_pretraining_data
    from bioelectra.pretraining.settings import resolve_hparams

    tokenizer = load_pretraining_data(data_dir).tokenizer
    torch.manual_seed(0)
    model = build_model(
        "small", resolve_hparams("small", MODEL), vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id
    )
    with torch.no_grad():
        bias = model.generator.generator_lm_head.bias
        bias.zero_()
        bias[len(SPECIALS) : len(SPECIALS) + NUM_EXAMPLES] = BIAS_STEP * torch.arange(NUM_EXAMPLES)
    model.save_pretrained(str(path))
    return path


def _train_command(data_dir: Path, output_dir: Path, init: Path, hparams: dict) -> list[str]:
    return [
        str(PRETRAIN), "train", "--data-dir", str(data_dir), "--output-dir", str(output_dir),
        "--init-from", str(init), "--hparams", json.dumps(hparams),
    ]  # fmt: skip


def _run_one_process(command: list[str], timeout: float = 180) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, *command], env=_env(), capture_output=True, text=True, timeout=timeout, cwd=REPO
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def _run_two_machines(command: list[str], log_dir: Path, timeout: float = 180) -> list[str]:
    """One ``accelerate launch`` per simulated machine, output in ``log_dir/machine<R>.log``. When one
    machine fails, or at the timeout, both launchers are killed (their process groups: the launcher and the
    rank it started). Returns the two outputs."""
    port = _free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    logs = [log_dir / f"machine{r}.log" for r in (0, 1)]
    procs: list[subprocess.Popen] = []
    timed_out = False
    try:
        for machine_rank, log in enumerate(logs):
            launcher = [
                sys.executable, "-m", "accelerate.commands.launch",
                "--multi_gpu", "--num_machines", "2", "--num_processes", "2",
                "--machine_rank", str(machine_rank), "--main_process_ip", "127.0.0.1",
                "--main_process_port", str(port), "--mixed_precision", "no", "--dynamo_backend", "no",
                *command,
            ]  # fmt: skip
            with log.open("w") as out:
                procs.append(
                    subprocess.Popen(
                        launcher, env=_env(), cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                    )
                )
        deadline = time.monotonic() + timeout
        while any(p.poll() is None for p in procs) and not any(p.poll() for p in procs):
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.2)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    outputs = [log.read_text(errors="replace") for log in logs]
    report = "\n---\n".join(f"machine {r}:\n{out[-4000:]}" for r, out in enumerate(outputs))
    assert not timed_out, f"the two machines did not finish within {timeout} s:\n{report}"
    bad = [(r, p.returncode) for r, p in enumerate(procs) if p.returncode != 0]
    taken = ("address already in use", "another process is utilizing it")
    if bad and any(phrase in out.lower() for out in outputs for phrase in taken):
        pytest.skip(f"port {port} on 127.0.0.1 was taken by another program before the two machines met: {bad}")
    assert not bad, f"machine(s) failed (rank, exit code) {bad}:\n{report}"
    return outputs


def _state(checkpoint: Path) -> dict:
    return json.loads((checkpoint / "trainer_state.json").read_text())


def _per_step(state: dict, key: str = "loss") -> dict[int, float]:
    return {h["step"]: h[key] for h in state["log_history"] if key in h and "train_runtime" not in h}


@pytest.mark.slow
def test_two_machines_train_the_global_batch_and_resume_on_one_process(tmp_path):
    """(a) the record of a two-machine run, (b) its losses against one process on the same global batch and
    against wrong global batches, (c) its resume on one process (module docstring; about 45 s here)."""
    data_dir = make_fingerprint_data(tmp_path / "data")
    init = make_init_model(tmp_path / "init", data_dir)
    two = tmp_path / "two-machines"
    outputs = _run_two_machines(_train_command(data_dir, two, init, HPARAMS), tmp_path / "logs")

    # (a) the run's record: two processes, train_batch_size is the global batch
    record = json.loads((two / "hparams.json").read_text())
    split = (record["per_device_train_batch_size"], record["gradient_accumulation_steps"], record["world_size"])
    assert split == (2, 2, 2), record
    assert split[0] * split[1] * split[2] == record["train_batch_size"] == 8
    assert sorted(p.name for p in two.glob("checkpoint-*")) == ["checkpoint-3", "checkpoint-6"]
    assert {f.name for f in (two / "checkpoint-6").glob("rng_state*")} == {"rng_state_0.pth", "rng_state_1.pth"}
    state6 = _state(two / "checkpoint-6")
    # each rank reads its half of the 64 examples: an optimizer step is 8 of them, 1/8 of an epoch
    epochs = _per_step(state6, "epoch")
    assert epochs == pytest.approx({k: k * 8 / NUM_EXAMPLES for k in range(1, 7)}), epochs
    assert all('"global_step": 6' in out for out in outputs)

    # (b) one process, the same --hparams (4 micro-batches of 2); and global batches of 4 and 16
    one = tmp_path / "one-process"
    _run_one_process(_train_command(data_dir, one, init, HPARAMS))
    assert json.loads((one / "hparams.json").read_text())["gradient_accumulation_steps"] == 4
    reference = _per_step(_state(one / "checkpoint-6"))
    losses = _per_step(state6)
    gaps = {k: round(abs(losses[k] - reference[k]), 4) for k in range(1, 7)}
    # mlm_loss is the mean over both ranks (rank 0's alone is the fingerprint of its 4 examples)
    mlm, reference_mlm = _per_step(state6, "mlm_loss"), _per_step(_state(one / "checkpoint-6"), "mlm_loss")
    mlm_gaps = {k: round(abs(mlm[k] - reference_mlm[k]), 4) for k in range(1, 7)}
    wrong = {}
    for batch in (4, 16):
        out = tmp_path / f"global-batch-{batch}"
        _run_one_process(_train_command(data_dir, out, init, {**HPARAMS, "train_batch_size": batch}))
        other = _per_step(_state(out / "checkpoint-6"))
        wrong[batch] = round(max(abs(other[k] - reference[k]) for k in range(1, 7)), 4)
    print(json.dumps({"gaps": gaps, "mlm_gaps": mlm_gaps, "wrong_batch_max_gap": wrong}))
    assert max(gaps.values()) < TOLERANCE, (gaps, losses, reference)
    assert max(mlm_gaps.values()) < TOLERANCE, (mlm_gaps, mlm, reference_mlm)
    assert min(wrong.values()) > 2 * TOLERANCE, wrong  # the tolerance tells a wrong global batch apart

    # (c) resume on ONE process with num_train_steps 9: from checkpoint-6, the same global batch; the
    # reference resumes its own 6 steps the same way (the learning-rate schedule changes at the resume)
    nine = {**HPARAMS, "num_train_steps": 9}
    proc = _run_one_process(_train_command(data_dir, two, init, nine))
    log = proc.stdout + proc.stderr
    assert f"resuming from {two / 'checkpoint-6'}" in log, log[-3000:]
    assert "on 1 process(es) instead of 2: the same global batch 8, now 2 per device x 4 accumulation" in log
    record = json.loads((two / "hparams.json").read_text())
    split = (record["world_size"], record["per_device_train_batch_size"], record["gradient_accumulation_steps"])
    assert split == (1, 2, 4), record
    state9 = _state(two / "checkpoint-9")
    assert (state9["global_step"], state9["max_steps"]) == (9, 9)
    resumed = _per_step(state9)
    assert {k: resumed[k] for k in range(1, 7)} == losses  # checkpoint-6's history, continued: not a new run
    _run_one_process(_train_command(data_dir, one, init, nine))
    reference = _per_step(_state(one / "checkpoint-9"))
    # steps 7-9 on one process after 6 on two train on what they train on after 6 on one: the skip to the
    # resumed step counts global batches, whatever the number of processes that trained them
    resume_gaps = {k: round(abs(resumed[k] - reference[k]), 4) for k in (7, 8, 9)}
    print(json.dumps({"resume_gaps": resume_gaps}))
    assert max(resume_gaps.values()) < TOLERANCE, (resumed, reference)


# --- the safeguards, without processes ------------------------------------------------------------


@pytest.mark.parametrize(
    "variable", ["ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED"], ids=["fsdp", "deepspeed"]
)
def test_pretrain_train_refuses_sharded_training(tmp_path, monkeypatch, variable):
    """``accelerate launch --use_fsdp`` / ``--use_deepspeed`` (or such a config) stops ``pretrain train``
    before anything is read or written: on a CPU the Trainer would silently run DDP instead, and on GPUs the
    shared embeddings of the generator and discriminator are not tested under sharding."""
    from typer.testing import CliRunner

    from bioelectra.cli import pretrain_app

    monkeypatch.setenv(variable, "true")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        pretrain_app, ["train", "--data-dir", str(tmp_path / "no-data"), "--output-dir", str(out)]
    )
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert f"{variable}=true" in text and "sharded training (FSDP / DeepSpeed ZeRO) is not supported" in text
    assert "--multi_gpu" in text and "docs/guides/distributed.md" in text
    assert not out.exists()


def test_sharded_training_request_names_the_trainer_arguments(monkeypatch):
    from bioelectra.pretraining.settings import sharded_training_request

    for variable in ("ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED"):
        monkeypatch.delenv(variable, raising=False)
    assert sharded_training_request() is None
    assert sharded_training_request({"fsdp": ""}) is None
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "false")
    assert sharded_training_request({"seed": 1}) is None
    assert sharded_training_request({"fsdp": "full_shard"}) == "TrainingArguments fsdp='full_shard'"
    assert "deepspeed" in sharded_training_request({"deepspeed": "ds.json"})


class _Args:
    """The ``TrainingArguments`` fields the callbacks read."""

    def __init__(self, *, world_size: int, process_index: int, seed: int = 42) -> None:
        self.world_size, self.process_index, self.seed = world_size, process_index, seed
        self.device = torch.device("cpu")


def test_each_rank_gets_its_own_random_stream():
    """Rank r draws from ``seed + r`` once training begins (the Trainer seeds every rank alike); one
    process keeps the Trainer's stream untouched."""
    from transformers import TrainerControl, TrainerState

    from bioelectra.pretraining.callbacks import RankSeedCallback

    def draws(world_size: int, rank: int) -> torch.Tensor:
        torch.manual_seed(42)  # what Trainer.__init__ does on every rank
        torch.rand(3)  # model initialisation and the like
        RankSeedCallback().on_train_begin(
            _Args(world_size=world_size, process_index=rank), TrainerState(), TrainerControl()
        )
        return torch.rand(5)

    def stream(seed: int, skip: int = 0) -> torch.Tensor:
        torch.manual_seed(seed)
        torch.rand(skip)
        return torch.rand(5)

    rank0, rank1 = draws(2, 0), draws(2, 1)
    assert torch.equal(rank0, stream(42)) and torch.equal(rank1, stream(43))
    assert torch.equal(draws(1, 0), stream(42, skip=3))  # one process: the Trainer's stream, untouched


@pytest.mark.parametrize("own_clock_expired, process_zero_expired", [(True, False), (False, True)])
def test_the_deadline_is_process_zeros_on_every_rank(monkeypatch, own_clock_expired, process_zero_expired):
    """``max_train_seconds`` on several processes: each rank's own clock would cross the deadline at its own
    step (they start at different times), and a rank that stops alone hangs the others; process 0's
    decision is broadcast instead."""
    import torch.distributed as dist
    from transformers import TrainerControl, TrainerState

    from bioelectra.pretraining.callbacks import DeadlineCallback

    broadcasts = []

    def broadcast(tensor, src):
        broadcasts.append(src)
        tensor.fill_(int(process_zero_expired))

    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "broadcast", broadcast)
    callback = DeadlineCallback(3600.0 if not own_clock_expired else 0.0)
    args = _Args(world_size=2, process_index=1)
    state, control = TrainerState(), TrainerControl()
    callback.on_train_begin(args, state, control)
    control = callback.on_step_end(args, state, control)
    assert broadcasts == [0]
    assert control.should_training_stop is process_zero_expired
    assert control.should_save is process_zero_expired


@pytest.mark.parametrize(
    ("hparams", "splits"),
    [
        ({"train_batch_size": 128}, {1: (128, 1), 8: (16, 1), 64: (2, 1)}),
        ({"train_batch_size": 256, "per_device_train_batch_size": 32}, {1: (32, 8), 8: (32, 1), 64: (4, 1)}),
        ({"train_batch_size": 2048, "per_device_train_batch_size": 64}, {1: (64, 32), 8: (64, 4), 64: (32, 1)}),
    ],
    ids=["small", "base-cap-32", "large-cap-64"],
)
def test_the_same_hparams_split_on_1_8_and_64_processes(monkeypatch, hparams, splits):
    """The table of docs/guides/distributed.md: (per-device batch, accumulation steps) for each number of processes;
    a per-device cap larger than a process's share (2048 over 64 processes, cap 64) gives the share."""
    from bioelectra.pretraining.settings import resolve_hparams

    for world, split in splits.items():
        monkeypatch.setenv("WORLD_SIZE", str(world))
        hp = resolve_hparams("large", hparams)
        assert (hp.per_device_train_batch_size, hp.gradient_accumulation_steps) == split, world
        assert hp.per_device_train_batch_size * hp.gradient_accumulation_steps * world == hp.train_batch_size
