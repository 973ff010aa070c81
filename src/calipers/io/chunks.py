"""Prediction files read in chunks of rows, for files larger than memory.

:func:`read_prediction_chunks` finds the arrays of a file exactly as
:func:`~calipers.io.read_predictions` does (the same keys, columns, kind rules and
messages) but hands them out as :class:`PredictionChunk` objects of at most
``chunk_rows`` rows, so that the memory used does not grow with the file:

* ``.npy``: the array is memory-mapped (``np.load(mmap_mode="r")``, never
  ``allow_pickle``) and sliced;
* ``.npz``: each array is read from its archive member as a stream of rows
  (stored or deflated members alike); a Fortran-ordered ``(n, k)`` member from
  ``k`` streams, one per column (read whole when it has more than 64 columns,
  up to 2 GiB);
* ``.parquet``: record batches of at most ``chunk_rows`` rows
  (``pyarrow.parquet.ParquetFile.iter_batches``), one row group at a time;
* ``.csv``: the :mod:`csv` module, ``chunk_rows`` rows at a time, with the
  parsing rules of the whole-file reader (its slow path, which gives the same
  numbers as its fast path); line numbers in messages are those of the file;
* ``.pt``/``.pth``: read whole (``torch.load`` has no row access) and then cut
  into chunks, so they are not out of core.

A separate labels file is memory-mapped (``.npy``), streamed (``.npz``) or read
whole (other formats, which hold one small integer per row).

The kind of a bare array (an unnamed Parquet list column) is detected from the
values of each chunk by the rule of :mod:`calipers.io.kind`; every chunk must
be read the same way as the first, otherwise the error asks for ``--logits``
or ``--probs``. The whole-file rule looks at all rows at once, so a file whose
chunks disagree (a rare case: some chunks of logits that all lie on the simplex)
can be read whole but not in chunks.
"""

from __future__ import annotations

import contextlib
import mmap
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .checks import _PICKLE_HINT, _check_numeric, _shape_error
from .columns import _assemble_columns, _labels_from_strings
from .csv import _csv_data_rows, _csv_header, _parse_float_column
from .declared import declared_size
from .labels_file import _check_declared_labels, _read_labels_file
from .npy import _np_load
from .parquet import _import_pyarrow, _Parquet, _read_parquet_table
from .prediction_file import Kind, KindBasis, PredictionFileError, _err, _Read
from .read import read_predictions

__all__ = ["PredictionChunk", "PredictionChunks", "read_prediction_chunks"]


@dataclass(frozen=True, eq=False)
class PredictionChunk:
    """Consecutive rows of a prediction file, read by :func:`read_prediction_chunks`.

    Attributes
    ----------
    array : numpy.ndarray
        ``(m, k)`` (or ``(m,)``) probabilities or logits of rows
        ``start .. start + m - 1`` (for ``.npy`` files, copied from a memory map).
    labels : numpy.ndarray or None
        ``(m,)`` labels of the same rows, or None when the file holds none.
    start : int
        Index (from 0) of the chunk's first row in the file.
    source : str
        The file (and the labels file), for messages.
    kind : {"probs", "logits"}
        What :attr:`array` holds.

    Examples
    --------
    >>> import numpy as np
    >>> c = PredictionChunk(np.array([0.2, 0.9]), np.array([0, 1]), 10, "x.npy", "probs")
    >>> c.n_rows, c.stop, c.rows
    (2, 12, 'data rows 11..12')
    """

    array: np.ndarray
    labels: np.ndarray | None
    start: int
    source: str
    kind: Kind

    @property
    def n_rows(self) -> int:
        """Number of rows in the chunk."""
        return int(self.array.shape[0])

    @property
    def stop(self) -> int:
        """Index (from 0) one past the chunk's last row."""
        return self.start + self.n_rows

    @property
    def rows(self) -> str:
        """The chunk's rows counted from 1, as messages name them (``"data rows 11..12"``)."""
        return f"data rows {self.start + 1}..{self.stop}"

    def check(self, **kwargs: Any) -> Any:
        """Validate with :func:`calipers.check_predictions`; an error names the file and rows.

        Parameters
        ----------
        **kwargs
            Passed on to :func:`~calipers.check_predictions` (``renormalize``,
            ``clip``, ``sum_tol``, ...); ``logits`` comes from :attr:`kind`.

        Returns
        -------
        calipers.Predictions

        Raises
        ------
        PredictionFileError
            If the chunk holds no labels.
        calipers.CalibrationInputError
            If the values break a rule of the validation layer; the message
            starts with the file and the rows of the chunk, and the rows it
            names are rows of the file, as the whole-file read names them
            (``row 11``: the index, from 0, of the file's twelfth data row).

        Examples
        --------
        >>> import numpy as np
        >>> c = PredictionChunk(np.array([0.2, 1.5]), np.array([0, 1]), 10, "x.npy", "probs")
        >>> c.check()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: x.npy, data rows 11..12: probs must lie in [0, 1]; found 1.5 at row 11. ...
        """
        from ..validation import CalibrationInputError, check_predictions

        if self.labels is None:
            raise PredictionFileError(
                f"{self.source} holds no labels; give a labels file (labels_path=..., on the "
                "command line --labels FILE) or name the labels array (labels_key=..., "
                "--labels-key KEY)"
            )
        try:
            return check_predictions(
                self.array, self.labels, logits=self.kind == "logits", **kwargs
            )
        except CalibrationInputError as exc:
            raise CalibrationInputError(
                f"{self.source}, {self.rows}: {_file_positions(str(exc), self.start)}"
            ) from None


#: Row positions in the messages of the validation layer and of the readers:
#: ``row 320``, ``data row 321``, ``entry (320, 1)`` (not ``value 1`` of a row).
_POSITION = re.compile(r"\b(row |entry \()(\d+)(?!\d|\.\d)")


def _file_positions(message: str, start: int) -> str:
    """``message`` about rows counted from a chunk's first row, with rows of the file.

    A chunk that starts ``start`` rows into the file names its row ``i`` (from 0,
    or data row ``i`` from 1) as the whole-file read names row ``start + i``
    (``data row start + i``): every position the validation layer or a reader
    writes (``row i``, ``data row i``, ``entry (i, j)``) is moved
    by ``start``, so that chunked reading, Dask partitions and the whole-file
    read name the same row of the same bad file.

    Examples
    --------
    >>> _file_positions("row 320 of probs sums to 1.2", 4000)
    'row 4320 of probs sums to 1.2'
    >>> _file_positions("found 7 at row 5, column 2; entry (5, 2) is 1.5", 100)
    'found 7 at row 105, column 2; entry (105, 2) is 1.5'
    """
    if start == 0:
        return message
    return _POSITION.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + start}", message)


class PredictionChunks:
    """The chunks of one prediction file: what :func:`read_prediction_chunks` returns.

    Iterating yields :class:`PredictionChunk` objects of at most
    :attr:`chunk_rows` rows, in file order; every iteration reads the file
    again. The attributes describe the file as :class:`~calipers.io.PredictionFile`
    does.

    Attributes
    ----------
    source : str
        The file (and the labels file, when one was given).
    kind : {"probs", "logits"}
    kind_basis : {"argument", "name", "default", "values"}
    note : str
        How the arrays were found, as in :attr:`PredictionFile.note`.
    n_samples : int or None
        Number of rows when the format stores it (``.npy``, ``.npz``,
        ``.parquet``, ``.pt``); None for ``.csv`` until the file has been read.
    chunk_rows : int
        The most rows of one chunk.
    access : str
        How the rows are read: ``"memory-mapped"``, ``"streamed"`` or
        ``"read whole"`` (``.pt`` files).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "p.npz")
    >>> np.savez(f, probs=np.linspace(0, 1, 5), labels=np.array([0, 0, 1, 1, 1]))
    >>> chunks = read_prediction_chunks(f, 2)
    >>> chunks.kind, chunks.n_samples, [c.n_rows for c in chunks]
    ('probs', 5, [2, 2, 1])
    """

    def __init__(
        self,
        source: str,
        first: tuple[PredictionChunk, _Read],
        rest: Iterator[tuple[PredictionChunk, _Read]],
        restart: Callable[[], Iterator[tuple[PredictionChunk, _Read]]],
        n_samples: int | None,
        chunk_rows: int,
        access: str,
        labels_note: str = "",
    ) -> None:
        chunk, info = first
        self.source = source
        self.kind: Kind = info.kind
        self.kind_basis: KindBasis = info.basis
        self.note = info.note + labels_note
        self.n_samples = n_samples
        self.chunk_rows = chunk_rows
        self.access = access
        self._first: tuple[PredictionChunk, _Iter] | None = (chunk, rest)
        self._restart = restart

    def __iter__(self) -> Iterator[PredictionChunk]:
        if self._first is not None:
            chunk, rest = self._first
            self._first = None
            yield chunk
        else:
            rest = self._restart()
        for chunk, info in rest:
            if info.kind != self.kind:
                raise _err(
                    f"{self.source}, {chunk.rows}: these rows read as {info.kind} ({info.note}) "
                    f"but the first rows as {self.kind}; pass logits=True or logits=False "
                    "(on the command line --logits or --probs)"
                )
            yield chunk

    def __repr__(self) -> str:
        return (
            f"PredictionChunks(source={self.source!r}, kind={self.kind!r}, "
            f"n_samples={self.n_samples}, chunk_rows={self.chunk_rows}, access={self.access!r})"
        )


_Iter = Iterator[tuple[PredictionChunk, _Read]]


# ----------------------------------------------------------------------------- row sources


class _Rows:
    """Rows of one array handed out in order: ``take(m)`` returns the next ``m`` rows.

    For a memory-mapped array the rows are copied out and the pages read so far
    are handed back to the system (``madvise(MADV_DONTNEED)``: they stay in the
    page cache, the file is unchanged), so the resident memory of a pass over a
    ``.npy`` file stays at one chunk instead of growing to the file's size.
    """

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr
        self.pos = 0
        self.n = int(arr.shape[0])
        base = getattr(arr, "base", None)
        self._map = base if isinstance(base, mmap.mmap) else None

    def take(self, m: int) -> np.ndarray:
        out = self.arr[self.pos : self.pos + m]
        self.pos += int(out.shape[0])
        if self._map is not None and hasattr(self._map, "madvise"):
            out = np.array(out)  # a copy, so the mapped pages can go
            with contextlib.suppress(OSError, ValueError):
                self._map.madvise(mmap.MADV_DONTNEED)
        return out


#: A Fortran-ordered ``(n, k)`` member with at most this many columns is read by
#: rows from one stream per column; a wider one is read whole, up to
#: :data:`_FORTRAN_WHOLE_MAX` bytes.
_FORTRAN_COLUMN_STREAMS = 64

#: Bytes of the largest Fortran-ordered member read whole (2 GiB); a larger and
#: wider one is refused (a crafted header could otherwise make the reader hold
#: whatever it declares).
_FORTRAN_WHOLE_MAX = 1 << 31


class _MemberRows:
    """Rows of one array in an ``.npz`` archive, read from the member as a stream.

    A Fortran-ordered ``(n, k)`` member (stored column by column) is read from
    ``k`` streams of the member, one positioned at each column, so that its rows
    too come a chunk at a time; with more than :data:`_FORTRAN_COLUMN_STREAMS`
    columns it is read whole (at most :data:`_FORTRAN_WHOLE_MAX` bytes).
    """

    def __init__(self, zf: zipfile.ZipFile, key: str, path: Path) -> None:
        self.path = path
        self.fh: BinaryIO = zf.open(key + ".npy")  # type: ignore[assignment]
        try:
            version = np.lib.format.read_magic(self.fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(self.fh)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(self.fh)
        except ValueError as exc:
            raise _err(f"'{path}': array '{key}' cannot be read: {exc}") from None
        if dtype.hasobject:
            raise _err(f"'{path}': array '{key}' contains Python objects; {_PICKLE_HINT}")
        _check_numeric(np.empty(0, dtype=dtype), f"array '{key}'", f"'{path}'")
        self.key, self.shape, self.dtype = key, tuple(shape), dtype
        self.n = int(shape[0]) if shape else 0
        self.row_bytes = int(dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64)))
        self.whole: np.ndarray | None = None
        self.columns: list[BinaryIO] | None = None
        if fortran and len(shape) == 2:  # stored by columns
            k = int(shape[1])
            if k <= _FORTRAN_COLUMN_STREAMS:
                self.columns = [self.fh] + [zf.open(key + ".npy") for _ in range(k - 1)]  # type: ignore[misc]
                header_len = self.fh.tell()
                for j in range(1, k):
                    self._skip(self.columns[j], header_len + j * self.n * dtype.itemsize)
            elif self.n * self.row_bytes > _FORTRAN_WHOLE_MAX:
                raise _err(
                    f"'{path}': array '{key}' {self.shape} is stored in Fortran (column) order, "
                    f"which cannot be read by rows with {k} columns, and it is too large to "
                    "read whole; save it in row order: np.savez(path, "
                    f"{key}=np.ascontiguousarray({key}), ...)"
                )
            else:
                data = self.fh.read()
                if len(data) != self.n * self.row_bytes:
                    raise _err(f"'{path}': array '{key}' is truncated; save the file again")
                self.whole = np.frombuffer(data, dtype=dtype).reshape(shape, order="F")
        self.pos = 0

    def _skip(self, fh: BinaryIO, nbytes: int) -> None:
        """Read past the first ``nbytes`` bytes of a member stream (in blocks)."""
        while nbytes > 0:
            got = len(self._read(fh, min(nbytes, 1 << 22), 1, self.n))
            if got == 0:
                raise _err(
                    f"'{self.path}': array '{self.key}' ends before its last column; the file "
                    "is truncated, save it again"
                )
            nbytes -= got

    def _read(self, fh: BinaryIO, nbytes: int, first: int, last: int) -> bytes:
        try:
            return fh.read(nbytes)
        except (OSError, zipfile.BadZipFile, EOFError) as exc:
            raise _err(
                f"'{self.path}': array '{self.key}', data rows {first}..{last} are damaged "
                f"({exc}); save the file again"
            ) from None

    def take(self, m: int) -> np.ndarray:
        m = min(m, self.n - self.pos)
        if self.whole is not None:
            out = self.whole[self.pos : self.pos + m]
        elif self.columns is not None:
            size = self.dtype.itemsize
            out = np.empty((m, len(self.columns)), dtype=self.dtype)
            for j, fh in enumerate(self.columns):
                data = self._read(fh, m * size, self.pos + 1, self.pos + m)
                if len(data) != m * size:
                    raise _err(
                        f"'{self.path}': array '{self.key}', column {j} ends before data row "
                        f"{self.pos + m}; the file is truncated, save it again"
                    )
                out[:, j] = np.frombuffer(data, dtype=self.dtype)
        else:
            data = self._read(self.fh, m * self.row_bytes, self.pos + 1, self.pos + m)
            if len(data) != m * self.row_bytes:
                raise _err(
                    f"'{self.path}': array '{self.key}' ends before data row {self.pos + m}; "
                    "the file is truncated, save it again"
                )
            out = np.frombuffer(data, dtype=self.dtype).reshape((m,) + self.shape[1:])
        self.pos += m
        return out


def _npz_member_names(path: Path) -> list[str] | None:
    """The arrays of an ``.npz`` archive (None for an ``.npy`` file with an ``.npz`` name)."""
    data = _np_load(path, "prediction file")
    if isinstance(data, np.ndarray):
        return None
    with data:
        return list(data.files)


def _chosen_keys(
    files: list[str], pick: Callable[[Callable[[str], np.ndarray]], _Read]
) -> tuple[_Read, list[str]]:
    """Run a key-choosing reader with a ``get`` that records the keys instead of reading."""
    asked: list[str] = []

    def get(key: str) -> np.ndarray:
        asked.append(key)
        return np.empty(0)

    return pick(get), asked


# ----------------------------------------------------------------------------- per format


def _chunks_of(preds: Any, labels: Any, n: int, chunk_rows: int, source: str, info: _Read) -> _Iter:
    start = 0
    while start < n:
        m = min(chunk_rows, n - start)
        arr = preds.take(m)
        lab = None if labels is None else labels.take(m)
        yield PredictionChunk(arr, lab, start, source, info.kind), info
        start += m


def _npy_iter(
    path: Path, logits: bool | None, chunk_rows: int, source: str, labels: Any
) -> tuple[_Iter, int]:
    arr = np.load(path, mmap_mode="r", allow_pickle=False)
    if not isinstance(arr, np.ndarray):  # an .npz archive with an .npy name
        arr.close()
        read_predictions(path, logits=logits)  # raises the whole-file reader's message
    _check_numeric(arr, "the array", f"'{path}'")
    if arr.ndim not in (1, 2):
        raise _shape_error(f"'{path}'", arr.shape)
    kind: Kind = "logits" if logits else "probs"
    basis: KindBasis = "default" if logits is None else "argument"
    info = _Read(np.empty(0), kind, None, f"one {arr.shape} array read as {kind}", basis)
    n = int(arr.shape[0])
    return _chunks_of(_Rows(arr), labels() if labels else None, n, chunk_rows, source, info), n


def _npz_iter(
    path: Path,
    keys: tuple[str | None, str | None, str | None],
    logits: bool | None,
    read_labels: bool,
    chunk_rows: int,
    source: str,
    labels: Any,
) -> tuple[_Iter, int]:
    from .keys import _from_mapping

    files = _npz_member_names(path)
    if files is None:  # an .npy file with an .npz name
        return _npy_iter(path, logits, chunk_rows, source, labels)
    probs_key, logits_key, labels_key = keys
    info, asked = _chosen_keys(
        files,
        lambda get: _from_mapping(
            files, get, path, probs_key, logits_key, labels_key, logits, read_labels
        ),
    )
    zf = zipfile.ZipFile(path)
    preds = _MemberRows(zf, asked[0], path)
    if len(preds.shape) not in (1, 2):
        raise _shape_error(f"'{path}'", preds.shape)
    lab = _MemberRows(zf, asked[1], path) if len(asked) > 1 else (labels() if labels else None)
    n = preds.n
    if len(asked) > 1 and (lab is None or len(lab.shape) != 1 or lab.n != n):
        got = "a scalar" if lab is None or not lab.shape else f"{lab.n} labels"
        raise _err(f"{source}: {got} for {n} rows of predictions; give exactly one label per row")

    def gen() -> _Iter:
        try:
            yield from _chunks_of(preds, lab, n, chunk_rows, source, info)
        finally:
            zf.close()

    return gen(), n


def _parquet_iter(
    path: Path,
    keys: tuple[str | None, str | None, str | None],
    logits: bool | None,
    has_labels_path: bool,
    chunk_rows: int,
    source: str,
    labels: Any,
) -> tuple[_Iter, int]:
    pa, pq, pc = _import_pyarrow(path)
    if path.is_dir():
        raise _err(f"prediction file '{path}' is a directory, not a file")
    try:
        fh = open(path, "rb")  # a local file object: no URI or data-set discovery
    except FileNotFoundError:
        raise _err(f"prediction file '{path}' does not exist") from None
    except PermissionError:
        raise _err(f"prediction file '{path}' cannot be read (permission denied)") from None
    damaged = (pa.ArrowException, OSError, ValueError, EOFError)
    try:
        # pre_buffer=False: pre-buffered ranges stay cached while the file is open, so
        # the resident memory would grow with every row group read
        pf = pq.ParquetFile(fh, pre_buffer=False)
        n = int(pf.metadata.num_rows)
    except damaged as exc:
        fh.close()
        raise _err(
            f"prediction file '{path}' is damaged or not a Parquet file ({exc}); write it "
            "again, e.g. with pyarrow.parquet.write_table or DataFrame.to_parquet"
        ) from None
    lab = labels() if labels else None

    def gen() -> _Iter:
        start = 0
        try:
            if n == 0:  # the whole-file reader's message for a table without rows
                table = pf.schema_arrow.empty_table()
                _read_parquet_table(
                    _Parquet.of_rows(path, table, 0, (pa, pq, pc)), *keys, logits, has_labels_path
                )
            # one thread: the reader threads' heaps make the resident memory creep up
            batches = pf.iter_batches(batch_size=chunk_rows, use_threads=False)
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    return
                except damaged as exc:
                    raise _err(
                        f"'{path}' is damaged after data row {start} ({exc}); write it again"
                    ) from None
                table = pa.Table.from_batches([batch])
                # rows counted from the batch's first, then moved to the file's rows: the
                # reader's own messages and those of the kind detection of a bare list
                # column name the row the whole-file read names
                try:
                    r = _read_parquet_table(
                        _Parquet.of_rows(path, table, 0, (pa, pq, pc)),
                        *keys,
                        logits,
                        has_labels_path,
                    )
                except PredictionFileError as exc:
                    raise _err(_file_positions(str(exc), start)) from None
                m = int(r.arr.shape[0])
                if start == 0:  # the note names the file's shape, not the chunk's
                    r = r._replace(note=r.note.replace(f"({m} x ", f"({n} x ", 1))
                else:
                    r = r._replace(note=_file_positions(r.note, start))
                labels_m = r.labels if lab is None else lab.take(m)
                yield PredictionChunk(r.arr, labels_m, start, source, r.kind), r
                start += m
        finally:
            fh.close()

    return gen(), n


def _csv_iter(
    path: Path,
    logits: bool | None,
    has_labels_path: bool,
    chunk_rows: int,
    source: str,
    labels: Any,
) -> _Iter:
    names, label_cols, class_cols, kind, basis = _csv_header(path, logits)
    lab = labels() if labels else None
    where_col = f"'{path}' column '{names[label_cols[0]]}'" if label_cols else ""

    def chunk(
        rows: list[list[str]], line_nos: list[int], start: int
    ) -> tuple[PredictionChunk, _Read]:
        cols: dict[int, np.ndarray] = {}
        for j in class_cols:
            values = [r[j] for r in rows]
            try:
                cols[j] = np.array(values, dtype=np.float64)
            except ValueError:  # find the line of the value that is not a number
                cols[j] = _parse_float_column(values, names[j], path, line_nos)
        labels_of = None
        if label_cols:
            raw = [r[label_cols[0]] for r in rows]

            def labels_of(classes: list[str]) -> np.ndarray:
                return _labels_from_strings(raw, classes, where_col, line_nos)

        arr, labels_m, note = _assemble_columns(
            names, label_cols, class_cols, kind, cols, labels_of, has_labels_path
        )
        if lab is not None:
            labels_m = lab.take(len(rows))
        info = _Read(np.empty(0), kind, None, note, basis)
        return PredictionChunk(arr, labels_m, start, source, kind), info

    def gen() -> _Iter:
        rows: list[list[str]] = []
        line_nos: list[int] = []
        start = 0
        for row, line_no in _csv_data_rows(path, len(names)):
            rows.append(row)
            line_nos.append(line_no)
            if len(rows) == chunk_rows:
                yield chunk(rows, line_nos, start)
                start += len(rows)
                rows, line_nos = [], []
        if rows:
            yield chunk(rows, line_nos, start)
        elif start == 0:
            raise _err(f"'{path}' has a header but no data rows")

    return gen()


def _declared_rows(path: Path) -> int | None:
    """Rows of the predictions an ``.npy`` or ``.parquet`` file declares (None: unknown)."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        shape = declared_size(path).shapes.get("")
        return int(shape[0]) if shape is not None and len(shape) in (1, 2) else None
    if suffix == ".parquet" and path.is_file():
        d = declared_size(path)
        return d.rows if d.basis == "parquet footer" else None
    return None


def _labels_rows(path: Path, labels_key: str | None) -> tuple[Any, str]:
    """A separate labels file as rows handed out in order, and how it was read."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            arr = None  # let the whole-file reader say what is wrong
        if isinstance(arr, np.ndarray) and arr.ndim == 1 and arr.dtype.kind in "biuf":
            if arr.dtype.kind == "f":
                return _Rows(_read_labels_file(path, labels_key)[0]), "one array"
            return _Rows(arr), "the array, memory-mapped"
    labels, how = _read_labels_file(path, labels_key)
    return _Rows(labels), how


# ----------------------------------------------------------------------------- entry point


def read_prediction_chunks(
    path: str | Path,
    chunk_rows: int,
    *,
    probs_key: str | None = None,
    logits_key: str | None = None,
    labels_key: str | None = None,
    labels_path: str | Path | None = None,
    logits: bool | None = None,
) -> PredictionChunks:
    """Read a prediction file in chunks of at most ``chunk_rows`` rows.

    The arrays are found as by :func:`~calipers.io.read_predictions` (same keys,
    columns, kind rules, structural checks and messages); the rows are read a
    chunk at a time, so memory stays bounded by about ``chunk_rows`` rows
    whatever the size of the file (``.npy`` memory-mapped, ``.npz`` members
    streamed, ``.parquet`` by record batches, ``.csv`` by rows; ``.pt`` files are
    read whole). This is what ``calipers table --chunk-rows N`` uses; the
    per-chunk statistics are added up by :class:`calipers.CalibrationState`,
    whose binned totals (fixed bins, Kirchenbauer, Oaks & Heim 2022 eq. 3)
    merge exactly across chunks.

    The first chunk is read when this function is called, so that an unreadable
    file, missing keys or an ambiguous kind are reported at once; a problem in
    a later chunk is raised while iterating, naming the file and the rows.

    Parameters
    ----------
    path : str or path-like
        An ``.npy``, ``.npz``, ``.csv``, ``.parquet`` or ``.pt``/``.pth`` file.
    chunk_rows : int
        The most rows of one chunk (at least 1).
    probs_key, logits_key, labels_key, labels_path, logits
        As for :func:`~calipers.io.read_predictions`.

    Returns
    -------
    PredictionChunks
        Iterable of :class:`PredictionChunk`, with ``kind``, ``kind_basis``,
        ``note`` and ``n_samples`` of the file.

    Raises
    ------
    PredictionFileError
        As :func:`~calipers.io.read_predictions`; for a later chunk, the
        message names its rows (or CSV lines).
    ValueError
        If ``chunk_rows`` is not a positive integer.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> f = os.path.join(d, "preds.csv")
    >>> with open(f, "w") as fh:
    ...     _ = fh.write("label,p0,p1\\n0,0.9,0.1\\n1,0.3,0.7\\n1,0.2,0.8\\n")
    >>> chunks = read_prediction_chunks(f, 2)
    >>> [(c.start, c.array.tolist(), c.labels.tolist()) for c in chunks]
    [(0, [[0.9, 0.1], [0.3, 0.7]], [0, 1]), (2, [[0.2, 0.8]], [1])]
    >>> import calipers as cp
    >>> state = cp.CalibrationState.for_metric("ece", n_bins=5)
    >>> for c in read_prediction_chunks(f, 2):
    ...     state.update(c.check(), None)
    >>> from calipers.io import read_predictions
    >>> P = read_predictions(f).check()
    >>> bool(np.isclose(state.compute(), cp.ece(P, None, n_bins=5)))
    True
    """
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)):
        raise TypeError(f"chunk_rows must be a positive integer; got {chunk_rows!r}")
    chunk_rows = int(chunk_rows)
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be a positive integer; got {chunk_rows}")
    p = Path(path)
    suffix = p.suffix.lower()
    source = str(p)
    labels_note = ""
    labels: Callable[[], Any] | None = None
    if labels_path is not None:
        lp = Path(labels_path)
        source += f" (labels: {lp})"
        n_declared = _declared_rows(p)
        if n_declared is not None:  # before a labels file of the wrong length is read
            _check_declared_labels(lp, labels_key, n_declared, source)
        lrows, how = _labels_rows(lp, labels_key)
        labels_note = f"; labels from '{lp}' ({how})"

        def labels() -> Any:
            lrows.pos = 0
            return lrows

    keys = (probs_key, logits_key, labels_key if labels_path is None else None)
    if suffix in (".npy", ".csv") and (probs_key is not None or logits_key is not None):
        read_predictions(p, probs_key=probs_key, logits_key=logits_key)  # raises its message

    def start() -> tuple[_Iter, int | None, str]:
        if suffix == ".npy":
            try:
                it, n = _npy_iter(p, logits, chunk_rows, source, labels)
            except (OSError, ValueError) as exc:
                if isinstance(exc, PredictionFileError):
                    raise
                read_predictions(p, logits=logits)  # says what is wrong with the file
                raise  # pragma: no cover
            return it, n, "memory-mapped"
        if suffix == ".npz":
            it, n = _npz_iter(p, keys, logits, labels_path is None, chunk_rows, source, labels)
            return it, n, "streamed"
        if suffix == ".parquet":
            it, n = _parquet_iter(
                p, keys, logits, labels_path is not None, chunk_rows, source, labels
            )
            return it, n, "streamed"
        if suffix == ".csv":
            return (
                _csv_iter(p, logits, labels_path is not None, chunk_rows, source, labels),
                None,
                "streamed",
            )
        # .pt/.pth (and unsupported types, whose message read_predictions gives): whole
        pf = read_predictions(
            p,
            probs_key=probs_key,
            logits_key=logits_key,
            labels_key=labels_key,
            labels_path=labels_path,
            logits=logits,
        )
        info = _Read(np.empty(0), pf.kind, None, pf.note, pf.kind_basis)
        lab = None if pf.labels is None else _Rows(pf.labels)
        return (
            _chunks_of(_Rows(pf.array), lab, pf.n_samples, chunk_rows, pf.source, info),
            pf.n_samples,
            "read whole",
        )

    def restart() -> _Iter:
        return start()[0]

    it, n, access = start()
    if labels_path is not None and n is not None and suffix not in (".pt", ".pth"):
        n_labels = lrows.n
        if n_labels != n:
            raise _err(
                f"{source}: {n_labels} labels for {n} rows of predictions; "
                "give exactly one label per row"
            )
    checked = _checked(it, source, labels_path is not None and n is None, lambda: lrows.n)
    try:
        first = next(checked)
    except StopIteration:
        raise _err(f"{source} has no data rows") from None
    if suffix in (".pt", ".pth"):
        labels_note = ""  # read_predictions' note already names the labels file
    return PredictionChunks(
        source,
        first,
        checked,
        lambda: _checked(restart(), source, labels_path is not None and n is None, lambda: lrows.n),
        n,
        chunk_rows,
        access,
        labels_note,
    )


def _checked(it: _Iter, source: str, count_labels: bool, n_labels: Callable[[], int]) -> _Iter:
    """Chunks with their shapes checked; a labels file's length checked at the end (CSV)."""
    total = 0
    for chunk, info in it:
        if chunk.array.ndim not in (1, 2):
            raise _shape_error(f"'{source}'", chunk.array.shape)
        if chunk.labels is not None and chunk.labels.shape[0] != chunk.n_rows:
            raise _err(
                f"{source}: the labels end before {chunk.rows} of the predictions; give "
                "exactly one label per row"
            )
        total += chunk.n_rows
        yield chunk, info
    if count_labels and n_labels() != total:
        raise _err(
            f"{source}: {n_labels()} labels for {total} rows of predictions; "
            "give exactly one label per row"
        )
