"""Two CPU processes under ``accelerate launch`` (DDP, gloo) train the same weights.

Measured here: ``accelerate launch --cpu --num_processes 2`` silently runs one process; ``--multi_gpu`` with
``TrainingArguments(use_cpu=True)`` runs two ranks on CPU.
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from pretrain_fixture import make_data_dir

SCRIPT = Path(__file__).resolve().parent / "ddp_pretrain_script.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_train_identical_weights(tmp_path):
    data_dir = make_data_dir(tmp_path / "data")
    out = tmp_path / "out"
    out.mkdir()
    cmd = [
        sys.executable, "-m", "accelerate.commands.launch",
        "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no",
        "--main_process_port", str(_free_port()),
        str(SCRIPT), str(data_dir), str(out),
    ]  # fmt: skip
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    infos = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    assert [i["world_size"] for i in infos] == [2, 2]
    assert sorted(i["process_index"] for i in infos) == [0, 1]
    assert all(i["global_step"] == 3 and i["shared"] for i in infos)
    # train_batch_size is the global batch: 4 per device x 1 accumulation step x 2 processes = 8
    record = infos[0]["record"]
    assert (record["world_size"], record["train_batch_size"]) == (2, 8)
    assert record["per_device_train_batch_size"] * record["gradient_accumulation_steps"] * 2 == 8
    assert infos[0]["trainer_batch"] == [4, 1]
    # metrics are gathered over both ranks: the same numbers on each
    assert infos[0]["eval_disc_accuracy"] == infos[1]["eval_disc_accuracy"]
    w0, w1 = (torch.load(out / f"rank{r}.pt") for r in range(2))
    assert w0.keys() == w1.keys()
    for key in w0:
        assert torch.equal(w0[key], w1[key]), key
    # and training moved them away from the initialisation
    init = torch.load(out / "init.pt")
    assert any(not torch.equal(init[k], w0[k]) for k in w0)
