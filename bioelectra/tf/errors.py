"""The error of the TensorFlow checkpoint modules."""


class TFCheckpointError(ValueError):
    """A checkpoint that cannot be read or converted faithfully (the message names the file and problem)."""
