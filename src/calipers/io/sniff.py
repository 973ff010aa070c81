"""What a file looks like from its first bytes, for error messages only.

When NumPy refuses a file, the first bytes say whether it is a pickle (refused:
calipers never unpickles) or a file of another format under the wrong suffix
(CSV, text, Parquet, empty), so the message can say which.
"""

from __future__ import annotations

from pathlib import Path


def _sniff(path: Path) -> str:
    """What a non-NumPy file looks like from its first bytes (for messages only).

    Returns ``"pickle"`` for a pickle stream (protocol 2 or later starts with
    0x80) or a NumPy file or zip archive (which NumPy refused for its pickled
    objects), otherwise a phrase such as ``": it looks like CSV (first line ...)"``.
    Nothing is parsed or unpickled.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return ""
    if head[:1] == b"\x80" or head[:6] == b"\x93NUMPY" or head[:2] == b"PK":
        # a pickle stream, or a NumPy file / zip archive holding pickled objects
        return "pickle"
    if head[:4] == b"PAR1":
        return ": it is a Parquet file"
    if not head:
        return ": it is empty"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    first = text.splitlines()[0] if text.splitlines() else ""
    sep = "CSV" if "," in first else "text"
    return f": it looks like {sep} (first line {first[:60]!r})"
