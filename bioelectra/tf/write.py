"""The output of a conversion (:func:`bioelectra.tf.convert.convert_tf_checkpoint`): the ``save_pretrained``
folders of the converted models (and, for ``export="both"``, the joint pre-training model) with their
tokenizer files and ``conversion_report.json``, written under a temporary name and renamed, so no partial
conversion is ever left."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from bioelectra.textio import replace_dir


def _write_model(directory: Path, config, state: dict, tokenizer, *, architecture: str) -> None:
    from safetensors.torch import save_file

    directory.mkdir(parents=True)
    config.architectures = [architecture]
    config.save_pretrained(directory)
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_pretrained(directory)


def _write_pretraining_model(tmp: Path, tokenizer, *, untied: bool) -> None:
    """``tmp/pretraining/``: the joint ``ElectraPretrainingModel`` built from the converted pair.

    Pre-training continues from it (``pretrain train --init-from``) with the original's sharing: the
    generator reads the discriminator's embeddings unless the checkpoint had untied generator embeddings.
    """
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    from bioelectra.modeling import ElectraPretrainingModel

    discriminator = ElectraForPreTraining.from_pretrained(tmp / "discriminator")
    generator = ElectraForMaskedLM.from_pretrained(tmp / "generator")
    joint = ElectraPretrainingModel.from_pair(discriminator, generator, untied_generator_embeddings=untied)
    joint.save_pretrained(tmp / "pretraining")
    tokenizer.save_pretrained(tmp / "pretraining")


def _write_outputs(
    output_dir: Path,
    *,
    export: str,
    wanted: list,
    states: dict,
    tokenizer,
    untied: bool,
    report,
    started: float,
) -> None:
    """Write the converted models and ``report`` (a ``ConversionReport``; its ``outputs`` and ``seconds`` are
    filled here) as ``conversion_report.json`` under a temporary sibling of ``output_dir``, then rename it to
    ``output_dir`` (no partial conversion is ever left)."""
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.tmp-", dir=output_dir.parent))
    try:
        arch = {"discriminator": "ElectraForPreTraining", "generator": "ElectraForMaskedLM"}
        for part, cfg, _, _ in wanted:
            target = tmp / part if export == "both" else tmp
            if export == "both":
                report.outputs[part] = str(output_dir / part)
            else:
                report.outputs[part] = str(output_dir)
            if export != "both":
                target.rmdir()  # recreated by _write_model
            _write_model(target, cfg, states[part], tokenizer, architecture=arch[part])
        if export == "both":
            _write_pretraining_model(tmp, tokenizer, untied=untied)
            report.outputs["pretraining"] = str(output_dir / "pretraining")
        report.seconds = round(time.perf_counter() - started, 3)
        (tmp / "conversion_report.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        replace_dir(tmp, output_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
