"""Graft parts of a pre-trained discriminator onto its untrained twin: which part of the pre-training helps
fine-tuning, and which part hurts.

The twin is ``bioelectra.presets.build_untrained_twin`` of the pre-trained checkpoint (its configuration and
tokenizer, ``ElectraForPreTraining``'s initialisation under ``--seed``: the twin that ``finetune-eval``
compares with). The output is that twin with every tensor of the named parts replaced, whole, by the
pre-trained one, in float32: a ``save_pretrained`` directory that ``finetune --ckpt`` takes as it is.

Parts (``PARTS``; tensor names of ``ElectraForPreTraining``):

- ``word_embeddings``: ``electra.embeddings.word_embeddings.weight`` alone, the matrix the generator shares
  as its input and output layer under ELECTRA's ties;
- ``embeddings``: the whole embedding block (word, position and token-type embeddings, their LayerNorm,
  and ``embeddings_project`` where the embedding size differs from the hidden size);
- ``encoder``: every Transformer layer;
- ``head``: the replaced-token-detection head (``discriminator_predictions``), which fine-tuning discards.

docs/results/pretraining-findings.md ("Where the loss to the twin sits") used it on a CPU-pre-trained model that fine-tuned below its
twin: the word embeddings alone cost 6.3 development F1 on NCBI-disease, the encoder 3.9. Prints one JSON
object, also written to ``<output-dir>/grafted.json``: the pre-trained source, the seed, the parts, and the
tensors taken from each side.

    python recipes/bioelectra-small/graft.py --pretrained work/bioelectra-small/results/export/discriminator \\
        --take word_embeddings --output-dir work/graft/word
    bioelectra finetune --loader ner --dataset ncbi-disease --protocol bio-electra --ckpt work/graft/word
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

#: Each part: the prefixes of its tensor names in ``ElectraForPreTraining``'s state dict.
PARTS: dict[str, tuple[str, ...]] = {
    "word_embeddings": ("electra.embeddings.word_embeddings.",),
    "embeddings": ("electra.embeddings.", "electra.embeddings_project."),
    "encoder": ("electra.encoder.",),
    "head": ("discriminator_predictions.",),
}

WEIGHTS = "model.safetensors"
REPORT = "grafted.json"


def in_parts(name: str, parts: list[str]) -> bool:
    """Whether the tensor ``name`` belongs to one of ``parts``."""
    return any(name.startswith(prefix) for part in parts for prefix in PARTS[part])


def graft(pretrained: str | Path, output_dir: str | Path, parts: list[str], *, seed: int = 0) -> dict:
    """Write the untrained twin of ``pretrained`` with ``parts`` taken from ``pretrained``.

    Args:
        pretrained: a ``save_pretrained`` directory of an ELECTRA discriminator (``ElectraForPreTraining``,
            as ``pretrain export`` writes it) with its tokenizer, in any floating dtype.
        output_dir: target directory, written under a temporary name and renamed (replacing what is there).
        parts: names from ``PARTS``, at least one.
        seed: seed of the twin's initialisation (``build_untrained_twin``'s, 0 as ``finetune-eval``'s).

    Returns:
        The report written to ``grafted.json``: ``{"pretrained", "seed", "parts", "from_pretrained",
        "from_twin"}`` (the last two: tensor counts).

    Raises:
        ValueError: an unknown part, none given, a part that matches no tensor, or a tensor whose shape differs
            between the checkpoint and its twin (a checkpoint that is not an ``ElectraForPreTraining``).
        FileNotFoundError: ``pretrained`` has no ``config.json`` or no ``model.safetensors``.
    """
    import torch
    from safetensors.torch import load_file, save_file

    from bioelectra.presets import STAMP_FILE, build_untrained_twin
    from bioelectra.textio import replace_dir

    pretrained, output_dir = Path(pretrained), Path(output_dir)
    unknown = sorted(set(parts) - set(PARTS))
    if not parts or unknown:
        raise ValueError(f"parts: expected one or more of {sorted(PARTS)}, got {parts}")
    if not (pretrained / WEIGHTS).is_file():
        raise FileNotFoundError(
            f"{pretrained}: no {WEIGHTS} (expected a save_pretrained checkpoint directory)"
        )
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.", dir=output_dir.parent))
    try:
        twin_dir = build_untrained_twin(pretrained, tmp / "twin", seed=seed)
        twin, donor = load_file(twin_dir / WEIGHTS), load_file(pretrained / WEIGHTS)
        missing = sorted(set(twin) ^ set(donor))
        if missing:
            raise ValueError(f"{pretrained / WEIGHTS}: tensors differ from its twin's: {missing[:5]}")
        for part in parts:
            if not any(in_parts(name, [part]) for name in twin):
                raise ValueError(f"{pretrained}: part {part!r} matches no tensor ({PARTS[part]})")
        out: dict[str, torch.Tensor] = {}
        for name, tensor in twin.items():
            if in_parts(name, parts):
                if donor[name].shape != tensor.shape:
                    raise ValueError(
                        f"{pretrained / WEIGHTS}: {name} has shape {tuple(donor[name].shape)}, "
                        f"its twin {tuple(tensor.shape)}"
                    )
                tensor = donor[name].to(torch.float32)
            out[name] = tensor.contiguous()
        taken = sum(in_parts(name, parts) for name in out)
        report = {"pretrained": str(pretrained), "seed": seed, "parts": list(parts),
                  "from_pretrained": taken, "from_twin": len(out) - taken}  # fmt: skip
        built = tmp / "out"
        built.mkdir()
        for item in twin_dir.iterdir():  # configuration and tokenizer; not the twin's stamp nor its weights
            if item.name not in (WEIGHTS, STAMP_FILE) and item.is_file():
                shutil.copy2(item, built / item.name)
        save_file(out, built / WEIGHTS, metadata={"format": "pt"})
        (built / REPORT).write_text(json.dumps(report, indent=1) + "\n")
        replace_dir(built, output_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pretrained", required=True, help="pre-trained discriminator (save_pretrained dir)")
    parser.add_argument(
        "--take",
        action="append",
        required=True,
        choices=sorted(PARTS),
        help="part taken from the pre-trained checkpoint (repeat for several)",
    )
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--seed", type=int, default=0, help="seed of the untrained twin (default 0)")
    args = parser.parse_args(argv)
    try:
        report = graft(args.pretrained, args.output_dir, args.take, seed=args.seed)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
