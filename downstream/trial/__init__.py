"""What runs trials on any task kind: the Trainer, the seeded trial runner, evaluation, reports, plots, progress and the model card."""
