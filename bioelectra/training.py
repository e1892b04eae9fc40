"""The former module of pre-training, now the package :mod:`bioelectra.pretraining`; this name is kept for
the README, the recipes and users that import it (every name of the package, private helpers included)."""

from bioelectra.optimization import ElectraAdamW  # noqa: F401 - imported from here by earlier code
from bioelectra.pretraining import *  # noqa: F403
from bioelectra.pretraining import __all__  # noqa: F401
