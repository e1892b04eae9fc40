"""Errors raised by the downstream package (the CLI turns them into exit code 2 with the message)."""


class DownstreamError(Exception):
    """Base class: a problem with a benchmark, its files or a fine-tuning run that the user can fix."""


class DataFormatError(DownstreamError, ValueError):
    """A data file does not follow its format; the message names the file, the line and what was expected."""


class DatasetUnavailableError(DownstreamError, FileNotFoundError):
    """A registered dataset is neither shipped, cached nor downloadable (offline); says where to put the files."""
