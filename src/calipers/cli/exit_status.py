"""Exit statuses of the ``calipers`` program.

0 success; 1 unexpected error (including an output file that cannot be
written); 2 usage error (including an output that exists, without
``--force``); 3 bad input file or invalid predictions.
"""

from __future__ import annotations

EXIT_OK = 0

EXIT_UNEXPECTED = 1

EXIT_USAGE = 2

EXIT_INPUT = 3
