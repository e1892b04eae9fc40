"""Run by ``test_pretrain_ddp.py`` under ``accelerate launch`` with two CPU processes (gloo).

Usage: ``ddp_pretrain_script.py DATA_DIR OUTPUT_DIR``. Each rank writes its final weights to
``OUTPUT_DIR/rank<R>.pt`` and its view of the run to ``OUTPUT_DIR/rank<R>.json``.
"""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pretrain_fixture import tiny_hparams  # noqa: E402

from bioelectra.pretraining import prepare_pretraining  # noqa: E402
from bioelectra.pretraining.callbacks import close_process_group  # noqa: E402


def main() -> None:
    data_dir, output_dir = Path(sys.argv[1]), Path(sys.argv[2])
    hp = tiny_hparams(max_steps=3, save_steps=100, num_eval_steps=2)
    hp.pop("per_device_train_batch_size", None)
    hp["train_batch_size"] = 8  # the original's meaning: the global batch, 4 per device on 2 processes
    trainer, _ = prepare_pretraining(data_dir=data_dir, output_dir=output_dir / "run", hparams=hp)
    args = trainer.args
    if args.process_index == 0:
        torch.save(
            {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}, output_dir / "init.pt"
        )
    trainer.train()
    metrics = trainer.evaluate()
    rank = args.process_index
    state = {k: v.detach().cpu().clone() for k, v in trainer.model.state_dict().items()}
    torch.save(state, output_dir / f"rank{rank}.pt")
    info = {
        "world_size": args.world_size,
        "process_index": rank,
        "global_step": trainer.state.global_step,
        "device": str(args.device),
        "eval_disc_accuracy": metrics["eval_disc_accuracy"],
        "shared": trainer.model.embeddings_are_shared(),
        "record": json.loads((output_dir / "run" / "hparams.json").read_text()),
        "trainer_batch": [args.per_device_train_batch_size, args.gradient_accumulation_steps],
    }
    (output_dir / f"rank{rank}.json").write_text(json.dumps(info))
    close_process_group()


if __name__ == "__main__":
    main()
