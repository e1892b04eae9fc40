"""A saved fine-tuned model on raw text: sentence splitting, input and output formats, the predictor."""
