"""nexusbrain: a local-first memory and knowledge server for AI agents."""

import os
from importlib.metadata import PackageNotFoundError, version

# Search multiplies one query vector by the chunk matrix: a small product for which a
# multi-threaded BLAS only adds contention (on 2 shared cores, 0.4 ms became 15-25 ms).
# An explicit setting wins; this only takes effect if numpy is not imported yet.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

try:
    __version__ = version("nexusbrain")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
