"""The command line interface."""

import os

# The server answers requests on parallel threads, so a BLAS thread pool inside each request
# only oversubscribes the cores: on 2 cores it cost the dense search twice the CPU time and
# halved throughput under 8 clients (docs/design/bench.md). OpenBLAS reads this once, when
# numpy loads, which is after this line for every command. An explicit setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
