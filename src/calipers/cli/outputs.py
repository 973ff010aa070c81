"""Where the program writes: standard output, messages on standard error, and files.

Files are written atomically (:func:`calipers.output.write_atomic`): a reader
sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..output import OutputError
from ..output import write_atomic as _write_atomic

#: An output file could not be written (or would replace something without --force).
_OutputError = OutputError


def write_atomic(path: str | Path, text: str | bytes, *, force: bool = True) -> None:
    """Write ``text`` (or bytes) to ``path`` atomically; see :func:`calipers.output.write_atomic`."""
    _write_atomic(path, text, force=force)


def _emit(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _info(text: str) -> None:
    print(text, file=sys.stderr)
