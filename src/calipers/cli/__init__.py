"""The ``calipers`` command-line program (also ``python -m calipers``).

Subcommands
-----------
``calipers table [FILE ...]``
    The standard table for one or more prediction files (one row per file),
    or, with no file, for the three models of the embedded default
    (:func:`calipers.datasets.load_default_predictions`, all rows): accuracy,
    NLL, Brier score, ECE, ACE, SCE, TACE, MCE, RMSCE, class-wise ECE and
    bin-averaged ECE, as text, Markdown, JSON or CSV.
``calipers demo [--out DIR]``
    The table of the embedded default; with ``--out DIR`` also writes
    ``DIR/table.md`` and ``DIR/table.json``.
``calipers report FILE [FILE ...]``
    The standard report (:func:`calipers.report`), optionally with
    recalibration methods fitted on ``--calibration`` files or on a split.
``calipers diagram KIND FILE``
    One diagram of one prediction file, as PNG, SVG or PDF.

The program is thin: files are read by :func:`calipers.io.read_predictions`,
validated once by :func:`calipers.check_predictions`, and every number comes
from calipers' public metric functions.

One module per subcommand (:mod:`calipers.cli.table`, :mod:`~calipers.cli.demo`,
:mod:`~calipers.cli.report`, :mod:`~calipers.cli.diagram`); the input options they
share, and the reading of files through them, are in :mod:`calipers.cli.inputs`;
the parser and :func:`main` in :mod:`calipers.cli.program`.

Exit status: 0 success; 1 unexpected error (including an output file that
cannot be written); 2 usage error; 3 bad input file or invalid predictions
(the message is printed as ``calipers: error: ...``, without a traceback).
"""

from __future__ import annotations

# main, build_parser and the exit statuses, and (with "as") the other names this
# module held before it became a package, still importable from here
from .exit_status import EXIT_INPUT, EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE
from .formatting import FORMATS as FORMATS
from .methods import DEFAULT_METHODS as DEFAULT_METHODS
from .methods import METHOD_ALIASES as METHOD_ALIASES
from .options import EPILOG as EPILOG
from .outputs import _OutputError as _OutputError
from .outputs import write_atomic as write_atomic
from .program import build_parser, main
from .report import REPORT_DESCRIPTION as REPORT_DESCRIPTION
from .table import TABLE_DESCRIPTION as TABLE_DESCRIPTION

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_UNEXPECTED", "EXIT_USAGE", "EXIT_INPUT"]

# The public names keep ``calipers.cli`` as their module, as before this module
# became a package (``calipers = "calipers.cli:main"`` names it so).
main.__module__ = __name__
build_parser.__module__ = __name__
