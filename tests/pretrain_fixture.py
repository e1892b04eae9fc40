"""A tiny ``build-data`` directory for the pre-training tests (the layout ``pretrain build-data`` writes).

``DATA_DIR/examples/`` (DatasetDict: train / validation, ``input_ids`` int32 and ``token_type_ids`` int8,
``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``, unpadded), ``DATA_DIR/tokenizer/`` and ``build_info.json``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from transformers import TrainerCallback

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [f"w{i}" for i in range(95)]

#: A tiny model: hidden 32, 2 layers, generator hidden 16 (0.5), embedding 32.
TINY_HPARAMS = {
    "model_hparam_overrides": {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 64,
    },
    "embedding_size": 32,
    "generator_hidden_size": 0.5,
    "per_device_train_batch_size": 8,
    "per_device_eval_batch_size": 8,
    "learning_rate": 1e-3,
    "warmup_steps": 2,
    "max_steps": 6,
    "save_steps": 3,
    "eval_steps": 0,
    "num_eval_steps": 4,
    "logging_steps": 1,
    "attn_implementation": "eager",
}


def make_data_dir(
    root: Path, *, n_train: int = 64, n_validation: int = 16, max_seq_length: int = 32, seed: int = 0
) -> Path:
    """Write the fixture under ``root`` and return it. Sequences use a learnable pattern (word i is followed
    by word i+1), so a few training steps lower the generator's loss."""
    import datasets

    from bioelectra.presets import load_wordpiece_tokenizer

    root.mkdir(parents=True, exist_ok=True)
    vocab_file = root / "vocab.txt"
    vocab_file.write_text("\n".join(SPECIALS + WORDS) + "\n", encoding="utf-8")
    tokenizer = load_wordpiece_tokenizer(vocab_file, do_lower_case=False)
    tokenizer.save_pretrained(str(root / "tokenizer"))
    rng = random.Random(seed)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    first_word = len(SPECIALS)

    def segment(n: int) -> list[int]:
        start = rng.randrange(len(WORDS))
        return [first_word + (start + i) % len(WORDS) for i in range(n)]

    def examples(n: int) -> dict[str, list[list[int]]]:
        ids, types = [], []
        for _ in range(n):
            length = rng.randint(6, max_seq_length)
            if rng.random() < 0.5 or length < 8:
                a = segment(length - 2)
                seq, tt = [cls, *a, sep], [0] * length
            else:
                la = rng.randint(2, length - 5)
                lb = length - 3 - la
                seq = [cls, *segment(la), sep, *segment(lb), sep]
                tt = [0] * (la + 2) + [1] * (lb + 1)
            ids.append(seq)
            types.append(tt)
        return {"input_ids": ids, "token_type_ids": types}

    features = datasets.Features(
        {
            "input_ids": datasets.Sequence(datasets.Value("int32")),
            "token_type_ids": datasets.Sequence(datasets.Value("int8")),
        }
    )
    train = datasets.Dataset.from_dict(examples(n_train), features=features)
    validation = datasets.Dataset.from_dict(examples(max(n_validation, 1)), features=features)
    dd = datasets.DatasetDict({"train": train, "validation": validation})
    dd.save_to_disk(str(root / "examples"))
    if n_validation == 0:
        _empty_split(root / "examples" / "validation", features.arrow_schema)
    info = {"max_seq_length": max_seq_length, "do_lower_case": False, "vocab_size": len(tokenizer)}
    (root / "build_info.json").write_text(json.dumps(info), encoding="utf-8")
    return root


def tiny_hparams(**overrides) -> dict:
    """:data:`TINY_HPARAMS` updated with ``overrides``."""
    hp = json.loads(json.dumps(TINY_HPARAMS))
    hp.update(overrides)
    return hp


def _empty_split(split_dir: Path, schema) -> None:
    """Make a saved split empty, as ``build-data`` writes it (one Arrow stream file with no rows):
    ``save_to_disk`` of a 0-row dataset writes no data file and ``load_from_disk`` then fails."""
    import pyarrow as pa

    for old in split_dir.glob("data-*.arrow"):
        old.unlink()
    name = "data-00000-of-00001.arrow"
    with pa.OSFile(str(split_dir / name), "wb") as sink, pa.ipc.new_stream(sink, schema):
        pass
    state_file = split_dir / "state.json"
    state = json.loads(state_file.read_text())
    state["_data_files"] = [{"filename": name}]
    state_file.write_text(json.dumps(state))



class Crash(TrainerCallback):
    """Simulates a killed run: raises ``KeyboardInterrupt`` after ``at`` optimizer steps."""

    def __init__(self, at: int):
        self.at = at

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.at:
            raise KeyboardInterrupt("simulated kill")
