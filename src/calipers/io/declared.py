"""What a file says it holds, read without reading the data: rows and bytes once in memory.

A file's size on disk says little about the memory its arrays take once read: a
deflated ``.npz`` member of zeros expands about a thousandfold, and a ``.npy``
header can claim any shape. :func:`declared_size` reads only the declarations of
a file, never its data:

* ``.npy``: the header (shape and dtype); the file must hold the bytes it declares;
* ``.npz``: the zip central directory (each member's declared uncompressed size)
  and each member's ``.npy`` header (a few decompressed bytes); the two must
  agree, and a deflated member cannot declare more than deflate can expand to
  (1032 bytes per compressed byte);
* ``.parquet``: the footer's row count, value counts and uncompressed page sizes
  (a float64 per value at least: run-length encoding stores a constant column in
  a few bytes);
* ``.csv``, ``.pt``/``.pth`` and anything else: the size on disk (a CSV file
  declares nothing; a PyTorch archive stores its tensors uncompressed).

A declaration that the file cannot hold (a truncated ``.npy`` file, a member
whose header and zip entry disagree, a shape whose byte count overflows) raises
:class:`~calipers.io.PredictionFileError` naming the file and the member: the
readers call :func:`declared_size` before they allocate anything, so such a
file gives that message, never a ``MemoryError``. The command line uses the
declared bytes to decide whether a file is read whole or in chunks.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from .prediction_file import PredictionFileError, _err

__all__ = ["DeclaredSize", "declared_size"]

#: Most bytes one compressed byte of a deflate stream expands to (RFC 1951: a
#: 258-byte match in at least two bits, so 258 * 4 = 1032).
DEFLATE_MAX_RATIO = 1032

#: Slack for the deflate bound: block headers, and the stream's first bytes.
_DEFLATE_SLACK = 1 << 16

#: Largest byte count NumPy can index (``np.intp``): a declaration above it cannot be read.
_MAX_BYTES = int(np.iinfo(np.intp).max)


@dataclass(frozen=True)
class DeclaredSize:
    """The rows and bytes a file declares (:func:`declared_size`).

    Attributes
    ----------
    nbytes : int
        Bytes of the arrays once read into memory (for ``.npz`` the sum over its
        members; for formats without declarations, the size on disk).
    rows : int or None
        Rows of the largest array (``.npy``, ``.npz``) or of the table
        (``.parquet``); None when the format does not declare them.
    basis : str
        Where the numbers come from, for messages (``"npy header"``,
        ``"zip directory and npy headers"``, ``"parquet footer"``, ``"size on disk"``).
    shapes : dict of str to tuple of int
        The declared shape of every array: ``{"": shape}`` for an ``.npy`` file,
        one entry per array for an ``.npz`` archive whose members all have
        ``.npy`` headers (empty otherwise, and for other formats).

    Examples
    --------
    >>> DeclaredSize(nbytes=800, rows=100, basis="npy header").nbytes
    800
    """

    nbytes: int
    rows: int | None
    basis: str
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)


def _header(fh: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype] | None:
    """Shape, Fortran order and dtype of an ``.npy`` header; None if it is not one."""
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, SyntaxError, TypeError):
        return None
    return tuple(int(s) for s in shape), bool(fortran), np.dtype(dtype)


def _shape_text(shape: tuple[int, ...], dtype: np.dtype) -> str:
    return f"shape {shape} of {dtype} ({_bytes_text(_nbytes(shape, dtype))})"


def _bytes_text(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def _nbytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    """Bytes of an array of ``shape`` and ``dtype`` (a Python int: it cannot overflow)."""
    n = int(dtype.itemsize)
    for s in shape:
        n *= int(s)
    return n


def _refuse_overflow(where: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
    if _nbytes(shape, dtype) > _MAX_BYTES:
        raise _err(
            f"{where} declares {_shape_text(shape, dtype)}, more than any array can hold; "
            "the file is damaged, save it again"
        )


def _npy_declared(path: Path, size: int) -> DeclaredSize:
    with open(path, "rb") as fh:
        found = _header(fh)
        data_start = fh.tell()
    if found is None or found[2].hasobject:
        return DeclaredSize(size, None, "size on disk")  # the reader says what it is
    shape, _, dtype = found
    where = f"'{path}'"
    _refuse_overflow(where, shape, dtype)
    need = _nbytes(shape, dtype)
    if data_start + need > size:
        raise _err(
            f"{where}: its header declares {_shape_text(shape, dtype)} but the file holds "
            f"{max(size - data_start, 0)} bytes of data; the file is truncated or damaged, "
            "save it again with np.save"
        )
    return DeclaredSize(need, int(shape[0]) if shape else 1, "npy header", {"": shape})


def _npz_declared(path: Path, size: int) -> DeclaredSize:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return DeclaredSize(size, None, "size on disk")  # not an archive: the reader says so
    total, rows = 0, None
    shapes: dict[str, tuple[int, ...]] = {}
    complete = True  # every member has an .npy header
    with zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                complete = False
                continue
            key = info.filename[: -len(".npy")]
            where = f"'{path}': array '{key}'"
            if info.compress_type == zipfile.ZIP_STORED and info.file_size > info.compress_size:
                raise _err(
                    f"{where} is stored uncompressed in {info.compress_size} bytes but its "
                    f"archive entry declares {info.file_size}; the file is damaged, save it again"
                )
            if (
                info.compress_type == zipfile.ZIP_DEFLATED
                and info.file_size > DEFLATE_MAX_RATIO * info.compress_size + _DEFLATE_SLACK
            ):
                raise _err(
                    f"{where}: its archive entry declares {_bytes_text(info.file_size)} once "
                    f"decompressed, more than its {info.compress_size} compressed bytes can "
                    f"hold (deflate expands at most {DEFLATE_MAX_RATIO}-fold); the file is "
                    "damaged or crafted, save it again"
                )
            try:
                with zf.open(info) as fh:
                    found = _header(fh)  # decompresses the header's bytes only
                    header_len = fh.tell()
            except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError):
                found = None
            if found is None or found[2].hasobject:
                total += info.file_size  # the reader says what is wrong with it
                complete = False
                continue
            shape, _, dtype = found
            _refuse_overflow(where, shape, dtype)
            need = _nbytes(shape, dtype)
            if header_len + need != info.file_size:
                raise _err(
                    f"{where}: its header declares {_shape_text(shape, dtype)} but its archive "
                    f"entry holds {max(info.file_size - header_len, 0)} bytes of data; the file "
                    "is damaged or crafted, save it again with np.savez"
                )
            total += need
            shapes[key] = shape
            n = int(shape[0]) if shape else 1
            rows = n if rows is None else max(rows, n)
    return DeclaredSize(total, rows, "zip directory and npy headers", shapes if complete else {})


def _parquet_declared(path: Path, size: int) -> DeclaredSize:
    from .parquet import _import_pyarrow

    pa, pq, _ = _import_pyarrow(path)
    try:
        with open(path, "rb") as fh:
            meta = pq.ParquetFile(fh, pre_buffer=False).metadata
            rows = int(meta.num_rows)
            encoded = values = 0
            for i in range(meta.num_row_groups):
                group = meta.row_group(i)
                encoded += int(group.total_byte_size)
                values += sum(int(group.column(j).num_values) for j in range(group.num_columns))
    except (pa.ArrowException, OSError, ValueError, EOFError):
        return DeclaredSize(size, None, "size on disk")  # the reader says it is damaged
    # total_byte_size is the size of the encoded pages: a dictionary- or run-length-
    # encoded column of a million equal numbers takes a few bytes there. Once read,
    # every value (list columns: every element) is a float64 at least
    return DeclaredSize(max(encoded, 8 * values, 8 * rows), rows, "parquet footer")


def declared_size(path: str | os.PathLike[str]) -> DeclaredSize:
    """The rows and bytes a file declares, read without reading its data.

    For ``.npy`` the header, for ``.npz`` the zip directory and the members'
    headers, for ``.parquet`` the footer; for other formats the size on disk.
    The declarations are checked against what the file can hold, so that a
    crafted or damaged file is refused before any array is allocated.

    Parameters
    ----------
    path : str or path-like
        A prediction, labels or regression file.

    Returns
    -------
    DeclaredSize
        ``nbytes`` (bytes of the arrays once read), ``rows`` (None when the
        format declares none) and ``basis``.

    Raises
    ------
    PredictionFileError
        When a declaration cannot be true: an ``.npy`` header declaring more
        bytes than the file holds, an ``.npz`` member whose header disagrees
        with its archive entry or which declares more than its compressed
        bytes can expand to, or a shape of more bytes than any array can hold.
        The message names the file and the member. A file that is missing or
        unreadable is not refused here (its reader says what is wrong): its
        size is then 0.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "p.npz")
    >>> np.savez_compressed(f, probs=np.zeros((1000, 4)), labels=np.zeros(1000, int))
    >>> d = declared_size(f)
    >>> d.nbytes, d.rows, os.path.getsize(f) < d.nbytes
    (40000, 1000, True)
    """
    p = Path(path)
    try:
        size = p.stat().st_size if p.is_file() else 0
    except OSError:
        size = 0
    if size == 0:
        return DeclaredSize(0, None, "size on disk")
    suffix = p.suffix.lower()
    try:
        if suffix == ".npy":
            return _npy_declared(p, size)
        if suffix == ".npz":
            if not zipfile.is_zipfile(p):  # an .npy file with an .npz name
                return _npy_declared(p, size)
            return _npz_declared(p, size)
        if suffix == ".parquet":
            return _parquet_declared(p, size)
    except PredictionFileError:
        raise
    except OSError:
        return DeclaredSize(size, None, "size on disk")
    return DeclaredSize(size, None, "size on disk")
