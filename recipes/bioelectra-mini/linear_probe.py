"""Frozen-encoder linear probe for NER: how much entity information an encoder's features hold before any
fine-tuning moves them.

The encoder is frozen. Each word is represented by the hidden state of its first sub-token: the last layer,
and all layers concatenated (embeddings included). A softmax layer over the IOB2 tags is trained on the
training split (Adam, learning rate 1e-2, 30 epochs of 4,096-word batches, features standardised with the
training split's mean and deviation) and scored on the development split with entity-level F1 (seqeval
strict IOB2, as `finetune`).

Full fine-tuning re-learns the encoder from the task's data, which can hide what pre-training put into it;
the probe cannot. docs/results/pretraining-findings.md uses it to compare pre-training checkpoints with their untrained
twin, and ``recipes/bioelectra-small/campaign.py finetune-eval`` runs it for bioelectra-small and its twin. Prints
one JSON object: ``{"checkpoint", "dataset", "train_words", "dev_words", "f1": {"last_layer", "all_layers"}}``
(F1 in percent), also written to ``--output`` when given (to a temporary name, then renamed).

    python recipes/bioelectra-mini/linear_probe.py --ckpt work/bioelectra-mini/export/discriminator
    python recipes/bioelectra-mini/linear_probe.py --ckpt DIR --data-dir tests/fixtures/ner-tiny
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from downstream.ner.data import read_ner_file  # noqa: E402
from downstream.ner.metrics import ner_metrics  # noqa: E402
from downstream.registry import find_split_files, locate_dataset  # noqa: E402


@torch.no_grad()
def word_features(model, tokenizer, sentences, *, batch_size: int = 64, max_length: int = 256):
    """First-sub-token states of every word.

    Returns:
        ``(features, tags, lengths)``: `(words, layers + 1, hidden)` float32 states (embeddings first),
        the words' gold tags, and the number of words kept per sentence (words past ``max_length``
        sub-tokens are dropped, from features and tags alike).
    """
    features, tags, lengths = [], [], []
    for start in range(0, len(sentences), batch_size):
        batch = sentences[start : start + batch_size]
        enc = tokenizer(
            [list(s.words) for s in batch],
            is_split_into_words=True,
            truncation=True,
            max_length=max_length,
            padding=True,
            return_tensors="pt",
        )
        states = model(**enc, output_hidden_states=True).hidden_states  # layers + 1 x (B, T, H)
        for row, sentence in enumerate(batch):
            first: dict[int, int] = {}
            for position, word in enumerate(enc.word_ids(row)):
                if word is not None and word not in first:
                    first[word] = position
            index = [first[w] for w in range(len(sentence.words)) if w in first]
            features.append(torch.stack([h[row, index] for h in states], dim=1).float())
            tags.extend(sentence.tags[: len(index)])
            lengths.append(len(index))
    return torch.cat(features), tags, lengths


def train_probe(x: torch.Tensor, y: torch.Tensor, num_labels: int, *, epochs: int = 30, seed: int = 0):
    """A softmax layer on standardised features. Returns ``(layer, mean, std)``."""
    mean, std = x.mean(0), x.std(0) + 1e-5
    x = (x - mean) / std
    torch.manual_seed(seed)
    layer = torch.nn.Linear(x.shape[1], num_labels)
    optimizer = torch.optim.Adam(layer.parameters(), lr=1e-2)
    for _ in range(epochs):
        for chunk in torch.randperm(len(x)).split(4096):
            loss = torch.nn.functional.cross_entropy(layer(x[chunk]), y[chunk])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return layer, mean, std


def linear_probe(checkpoint: str, files: dict[str, Path], *, epochs: int = 30, seed: int = 0) -> dict:
    """Probe F1 (percent) of ``checkpoint`` on ``files["train"]`` -> ``files["dev"]``."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModel.from_pretrained(checkpoint, dtype=torch.float32).eval()
    train = read_ner_file(files["train"]).sentences
    dev = read_ner_file(files["dev"]).sentences
    x_train, tags_train, _ = word_features(model, tokenizer, train)
    x_dev, tags_dev, dev_lengths = word_features(model, tokenizer, dev)
    labels = sorted(set(tags_train) | set(tags_dev))
    y_train = torch.tensor([labels.index(t) for t in tags_train])
    result = {"train_words": len(tags_train), "dev_words": len(tags_dev), "f1": {}}
    for name, view in (("last_layer", lambda x: x[:, -1]), ("all_layers", lambda x: x.flatten(1))):
        layer, mean, std = train_probe(view(x_train), y_train, len(labels), epochs=epochs, seed=seed)
        with torch.no_grad():
            predicted = layer((view(x_dev) - mean) / std).argmax(-1).tolist()
        gold, guess, offset = [], [], 0
        for sentence, n in zip(dev, dev_lengths, strict=True):
            gold.append(list(sentence.tags[:n]))
            guess.append([labels[i] for i in predicted[offset : offset + n]])
            offset += n
        result["f1"][name] = round(100 * ner_metrics(gold, guess)["f1"], 2)
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ckpt", required=True, help="a save_pretrained directory (discriminator export)")
    parser.add_argument("--dataset", default="ncbi-disease", help="NER benchmark of the registry")
    parser.add_argument("--data-dir", type=Path, help="a folder with train/devel(dev)/test files instead")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--output", type=Path, help="also write the JSON object to this file")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    files = find_split_files(args.data_dir) if args.data_dir else locate_dataset(args.dataset, task="ner")
    result = {"checkpoint": args.ckpt, "dataset": str(args.data_dir or args.dataset)}
    result.update(linear_probe(args.ckpt, files, epochs=args.epochs, seed=args.seed))
    print(json.dumps(result))
    if args.output:
        from bioelectra.textio import atomic_write_text

        args.output.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.output, json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
