"""The former module of the TensorFlow checkpoint code, now the package :mod:`bioelectra.tf`; this name is
kept for the users and recipes that import it."""

from bioelectra.tf import *  # noqa: F403
from bioelectra.tf import __all__  # noqa: F401
