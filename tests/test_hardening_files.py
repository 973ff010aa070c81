"""Bad files (issue 25, items 1 and 8): declared sizes, one-line errors, rows of the file.

* A zip-bomb ``.npz`` (a few MB of deflated zeros declaring gigabytes) drove
  ``calipers table`` to 16.6 GB resident: the "stream above 2 GiB" rule looked at the
  size on disk. It now looks at the declared sizes (:func:`calipers.io.declared.declared_size`)
  and the test runs the command in a child process whose peak resident memory
  (``ru_maxrss`` from ``os.wait4``) must stay under 1.5 GB, with an address-space
  limit as a safety net.
* Declarations a file cannot hold (an ``.npy`` header claiming shape (10**15, 10), an
  ``.npz`` member whose header disagrees with its zip entry, a deflated member
  declaring more than deflate can expand to) are refused with a message naming the
  file and the member, never a ``MemoryError``.
* CSV: a late byte that is not UTF-8, a field over the csv module's 131 072
  characters; Dask: parts with different columns, truncated or empty data sets.
* A bad row found in a later chunk (``--chunk-rows``) or a later Dask partition is
  named as the whole-file read names it (``row 4320``, not ``row 320`` of the chunk).

Oracles: the whole-file read of the same file (its row), the row planted by the test,
and the sizes computed here from the shapes written.
"""

from __future__ import annotations

import io
import os
import re
import resource
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calipers.io import PredictionFileError, read_prediction_chunks, read_predictions
from calipers.io.declared import DEFLATE_MAX_RATIO, declared_size
from calipers.validation import CalibrationInputError

# ----------------------------------------------------------------------------- crafted files


def _npy_header(shape: tuple[int, ...], descr: str, fortran: bool = False) -> bytes:
    h = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        h, {"descr": descr, "fortran_order": fortran, "shape": shape}
    )
    return h.getvalue()


def _crc_of_zeros(crc: int, n: int) -> int:
    block = bytes(1 << 24)
    while n > 0:
        m = min(n, len(block))
        crc = zlib.crc32(block if m == len(block) else block[:m], crc)
        n -= m
    return crc


def _deflated_zeros_member(
    shape: tuple[int, ...], descr: str, declare: int | None = None, fortran: bool = False
) -> tuple[bytes, int, int]:
    """An ``.npy`` member of zeros, deflated: (compressed bytes, CRC-32, uncompressed size).

    One MiB of zeros is deflated once and its (full-flushed, so self-contained) blocks
    are repeated: a member declaring gigabytes is written in about a second.
    ``declare`` replaces the declared uncompressed size (a lying zip entry).
    """
    head = _npy_header(shape, descr, fortran)
    n = int(np.prod(shape)) * np.dtype(descr).itemsize
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = 1 << 20
    first = co.compress(head) + co.flush(zlib.Z_FULL_FLUSH)
    one = co.compress(bytes(block)) + co.flush(zlib.Z_FULL_FLUSH)
    k, rem = divmod(n, block)
    body = one * (k - 1) if k else b""
    last = co.compress(bytes(rem + (block if k else 0))) + co.flush()
    size = len(head) + n
    return (
        first + body + last,
        _crc_of_zeros(zlib.crc32(head), n),
        (size if declare is None else declare),
    )


def _write_zip(path: Path, members: dict[str, tuple[bytes, int, int]]) -> Path:
    """A zip archive of deflated members written as given (sizes below 4 GiB)."""
    cd = []
    with open(path, "wb") as f:
        for name, (data, crc, size) in members.items():
            nb = name.encode()
            off = f.tell()
            f.write(
                struct.pack(
                    "<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), size, len(nb), 0
                )
                + nb
            )
            f.write(data)
            cd.append(
                struct.pack(
                    "<IHHHHHHIIIHHHHHII",
                    0x02014B50,
                    20,
                    20,
                    0,
                    8,
                    0,
                    0x21,
                    crc,
                    len(data),
                    size,
                    len(nb),
                    0,
                    0,
                    0,
                    0,
                    0,
                    off,
                )  # fmt: skip
                + nb
            )
        start = f.tell()
        blob = b"".join(cd)
        f.write(blob)
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(cd), len(cd), len(blob), start, 0))
    return path


BOMB_ROWS = 140_000_000  # (n, 2) float64: 2.24 GB declared, above the 2 GiB streaming rule


def _bomb(folder: Path, fortran: bool = False) -> Path:
    return _write_zip(
        folder / ("fortran_bomb.npz" if fortran else "bomb.npz"),
        {
            "probs.npy": _deflated_zeros_member((BOMB_ROWS, 2), "<f8", fortran=fortran),
            "labels.npy": _deflated_zeros_member((BOMB_ROWS,), "|i1"),
        },
    )


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _bomb(tmp_path_factory.mktemp("bomb"))


def _run_measured(args: list[str], cwd: Path, limit_bytes: int) -> tuple[int, str, float]:
    """``python -m calipers ARGS``: exit status, stderr, peak resident memory in bytes."""

    def limit() -> None:  # a safety net: the old code would otherwise take 16 GB
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    err_path = cwd / "stderr.txt"
    with open(err_path, "wb") as err, open(os.devnull, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "calipers", *args],
            cwd=cwd,
            stdout=out,
            stderr=err,
            preexec_fn=limit,
            env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return proc.returncode, err_path.read_text(), usage.ru_maxrss * 1024.0  # KiB on Linux


def _main(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """``calipers ARGS`` in this process: exit status and stderr."""
    import contextlib

    from calipers.cli import main

    monkeypatch.chdir(cwd)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(args)
    return status, err.getvalue()


# ----------------------------------------------------------------------------- item 1: zip-bomb


def test_bomb_is_small_on_disk_and_declares_gigabytes(bomb: Path) -> None:
    assert bomb.stat().st_size < 5_000_000
    with zipfile.ZipFile(bomb) as zf:
        assert zf.getinfo("probs.npy").file_size > 2 * 1024**3
    d = declared_size(bomb)
    header = len(_npy_header((BOMB_ROWS, 2), "<f8"))
    assert header == len(_npy_header((BOMB_ROWS,), "|i1"))
    assert d.nbytes == BOMB_ROWS * 2 * 8 + BOMB_ROWS  # the arrays, headers excluded
    assert d.rows == BOMB_ROWS


def test_zip_bomb_is_streamed_by_its_declared_size(bomb: Path) -> None:
    from calipers.cli import streaming

    assert streaming.wants_streaming(bomb, None) == streaming.DEFAULT_CHUNK_ROWS


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB and RLIMIT_AS: Linux")
def test_zip_bomb_table_stays_in_bounded_memory(bomb: Path) -> None:
    # before: read whole (4 MB on disk is below 2 GiB), 16.6 GB resident, or a
    # MemoryError traceback (exit 1) under the address-space limit below
    status, err, peak = _run_measured(["table", str(bomb)], bomb.parent, 6 * 1024**3)
    assert peak < 1.5e9, f"peak resident memory {peak / 1e9:.2f} GB; stderr: {err[-2000:]}"
    # the zeros are not probabilities: a clear refusal of the first chunk, one line
    assert status == 3, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("calipers: error: "), err
    assert "bomb.npz" in lines[0] and "row 0 of probs sums to 0" in lines[0]


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB and RLIMIT_AS: Linux")
def test_fortran_ordered_zip_bomb_is_read_by_rows_too(tmp_path: Path) -> None:
    # a Fortran-ordered member used to be read whole even when streamed
    path = _bomb(tmp_path, fortran=True)
    status, err, peak = _run_measured(["table", str(path)], tmp_path, 6 * 1024**3)
    assert peak < 1.5e9, f"peak resident memory {peak / 1e9:.2f} GB; stderr: {err[-2000:]}"
    assert status == 3 and "row 0 of probs sums to 0" in err, err


def test_fortran_ordered_npz_chunks_equal_the_whole_read(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    p = np.asfortranarray(rng.dirichlet([1.0, 2.0, 3.0], size=1001))
    y = rng.integers(0, 3, 1001)
    for save in (np.savez, np.savez_compressed):
        save(tmp_path / "f.npz", probs=p, labels=y)
        chunks = list(read_prediction_chunks(tmp_path / "f.npz", 100))
        assert [c.n_rows for c in chunks] == [100] * 10 + [1]
        np.testing.assert_array_equal(np.concatenate([c.array for c in chunks]), p)
        np.testing.assert_array_equal(np.concatenate([c.labels for c in chunks]), y)


# ----------------------------------------------------------------------------- huge declarations


def _huge_npy(path: Path) -> Path:
    path.write_bytes(_npy_header((10**15, 10), "<f8") + bytes(800))
    return path


def test_npy_header_claiming_a_huge_shape_is_refused(tmp_path: Path) -> None:
    p = _huge_npy(tmp_path / "huge.npy")
    np.save(tmp_path / "y.npy", np.zeros(10, dtype=int))
    pattern = r"huge\.npy'.*declares shape \(1000000000000000, 10\) of float64.*800 bytes"
    with pytest.raises(PredictionFileError, match=pattern):
        declared_size(p)
    with pytest.raises(PredictionFileError, match=pattern):
        read_predictions(p, labels_path=tmp_path / "y.npy")
    with pytest.raises(PredictionFileError, match=pattern):
        read_prediction_chunks(p, 10, labels_path=tmp_path / "y.npy")
    # as a labels file
    np.save(tmp_path / "p.npy", np.full((10, 2), 0.5))
    with pytest.raises(PredictionFileError, match=r"huge\.npy'.*declares shape"):
        read_predictions(tmp_path / "p.npy", labels_path=p)


def test_npz_member_whose_header_disagrees_with_its_entry_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "huge.npz"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("probs.npy", _npy_header((10**15, 10), "<f8") + bytes(800))
        zf.writestr("labels.npy", _npy_header((100,), "<i8") + bytes(800))
    pattern = r"huge\.npz': array 'probs': its header declares shape \(1000000000000000, 10\)"
    for read in (
        lambda: declared_size(p),
        lambda: read_predictions(p),
        lambda: read_prediction_chunks(p, 10),
    ):
        with pytest.raises(PredictionFileError, match=pattern):
            read()


def test_npz_entry_declaring_more_than_deflate_expands_to_is_refused(tmp_path: Path) -> None:
    # the header and the zip entry agree on a huge array (the entry says 4 GiB, the
    # most a plain entry can), but the member holds a hundred compressed bytes
    n = (0xFFFFFFFE - 128) // 8
    head = _npy_header((n,), "<f8")
    assert len(head) == 128
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = co.compress(head + bytes(80)) + co.flush()
    assert 0xFFFFFFFE > DEFLATE_MAX_RATIO * len(data) + (1 << 16)
    p = _write_zip(
        tmp_path / "lie.npz",
        {"probs.npy": (data, 0, 128 + 8 * n), "labels.npy": _deflated_zeros_member((10,), "<i8")},
    )
    pattern = r"lie\.npz': array 'probs'.*more than its \d+ compressed bytes.*deflate expands"
    with pytest.raises(PredictionFileError, match=pattern):
        read_predictions(p)
    with pytest.raises(PredictionFileError, match=pattern):
        read_prediction_chunks(p, 10)


def test_cli_refuses_huge_declarations_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _huge_npy(tmp_path / "huge.npy")
    np.save(tmp_path / "y.npy", np.zeros(10, dtype=int))
    for extra in ([], ["--chunk-rows", "10"]):
        status, err = _main(["table", str(p), "--labels", "y.npy", *extra], tmp_path, monkeypatch)
        assert status == 3, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "huge.npy" in lines[0] and "declares shape" in lines[0]


# ----------------------------------------------------------------------------- CSV


def _late_non_utf8_csv(path: Path) -> Path:
    with open(path, "wb") as f:
        f.write(b"label,p0,p1\n")
        f.write(b"0,0.5,0.5\n" * 3000)
        f.write(b"0,0.5\xff,0.5\n")  # line 3002, byte 6
        f.write(b"1,0.25,0.75\n" * 10)
    return path


def test_late_non_utf8_byte_names_the_file_and_line(tmp_path: Path) -> None:
    p = _late_non_utf8_csv(tmp_path / "late.csv")
    pattern = r"late\.csv' line 3002, byte 6: .*not UTF-8"
    with pytest.raises(PredictionFileError, match=pattern):
        read_predictions(p)
    with pytest.raises(PredictionFileError, match=pattern):
        list(read_prediction_chunks(p, 1000))
    r = subprocess.run(
        [sys.executable, "-m", "calipers", "table", "late.csv", "--chunk-rows", "1000"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 3, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "line 3002" in r.stderr


def test_utf8_sequence_cut_by_a_block_is_not_an_error(tmp_path: Path) -> None:
    from calipers.io.csv import _first_bad_utf8

    p = tmp_path / "cut.csv"
    body = b"a" * ((1 << 20) - 1) + "é".encode() + b"\n\xfe\n"  # é spans the block border
    p.write_bytes(body)
    assert _first_bad_utf8(p) == (2, 1)


def test_csv_field_over_the_csv_module_limit_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "long.csv"
    # class names as labels: the csv module reads the file (not np.loadtxt)
    p.write_text("label,p0,p1\np0,0.5,0.5\np1,0.5" + "0" * 140_000 + ",0.5\n")
    pattern = r"long\.csv' line 3 cannot be read as CSV \(field larger than field limit"
    with pytest.raises(PredictionFileError, match=pattern):
        read_predictions(p)
    with pytest.raises(PredictionFileError, match=pattern):
        list(read_prediction_chunks(p, 1))
    h = tmp_path / "longhead.csv"
    h.write_text("p" * 200_000 + ",label\n0.5,0\n")
    with pytest.raises(PredictionFileError, match=r"longhead\.csv' cannot be read as text"):
        read_predictions(h)


# ----------------------------------------------------------------------------- rows of the file


N, BAD = 5000, 4320  # the bad row (index from 0), in the fifth chunk of 1000 rows


def _bad_data(kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    p = rng.dirichlet([1.0, 1.0, 1.0], size=N)
    y = rng.integers(0, 3, N)
    if kind == "sum":
        p[BAD] = [0.5, 0.6, 0.1]
    elif kind == "range":
        p[BAD] = [1.5, -0.25, -0.25]
    elif kind == "nan":
        p[BAD, 1] = np.nan
    elif kind == "label":
        y[BAD] = 7
    return p, y


def _write(fmt: str, tmp: Path, p: np.ndarray, y: np.ndarray) -> tuple[Path, dict[str, Any]]:
    import pandas as pd

    cols = {"p0": p[:, 0], "p1": p[:, 1], "p2": p[:, 2], "label": y}
    if fmt == "npy":
        np.save(tmp / "y.npy", y)
        np.save(tmp / "b.npy", p)
        return tmp / "b.npy", {"labels_path": tmp / "y.npy"}
    if fmt == "npz":
        np.savez(tmp / "b.npz", probs=p, labels=y)
        return tmp / "b.npz", {}
    if fmt == "csv":
        pd.DataFrame(cols).to_csv(tmp / "b.csv", index=False, float_format="%.17g")
        return tmp / "b.csv", {}
    pytest.importorskip("pyarrow")
    pd.DataFrame(cols).to_parquet(tmp / "b.parquet", row_group_size=700)
    return tmp / "b.parquet", {}


def _rows_named(message: str) -> list[int]:
    return [int(m) for m in re.findall(r"\brow (\d+)", message)]


def _positions(message: str) -> list[int]:
    return [int(m) for m in re.findall(r"\b(?:row|line) (\d+)", message)]


@pytest.mark.parametrize("kind", ["sum", "range", "nan", "label"])
@pytest.mark.parametrize("fmt", ["npy", "npz", "csv", "parquet"])
def test_later_chunk_names_the_row_of_the_whole_file_read(
    tmp_path: Path, fmt: str, kind: str
) -> None:
    p, y = _bad_data(kind)
    path, kw = _write(fmt, tmp_path, p, y)
    # a NaN is an empty CSV field or a Parquet null: the reader's error, which names the
    # line (CSV, 4322) or data row (Parquet, 4321); every other error is the validation
    # layer's, which names the row index (4320)
    with pytest.raises(ValueError) as whole:
        read_predictions(path, **kw).check()
    expected = {"csv": BAD + 2, "parquet": BAD + 1}.get(fmt, BAD) if kind == "nan" else BAD
    assert _positions(str(whole.value)) == [expected], whole.value
    with pytest.raises(ValueError) as chunked:
        for c in read_prediction_chunks(path, 1000, **kw):
            c.check()
    msg = str(chunked.value)
    assert type(chunked.value) is type(whole.value)
    assert _positions(msg) == _positions(str(whole.value)), msg
    # the chunk's rows, then the whole-file read's message
    assert msg.endswith(str(whole.value))
    if isinstance(whole.value, CalibrationInputError):
        assert "data rows 4001..5000" in msg


def test_cli_later_chunk_names_the_row_of_the_whole_file_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p, y = _bad_data("sum")
    _write("csv", tmp_path, p, y)
    out = []
    for extra in ([], ["--chunk-rows", "1000"]):
        status, err = _main(["table", "b.csv", *extra], tmp_path, monkeypatch)
        assert status == 3, err
        out.append(err)
    assert _rows_named(out[0]) == _rows_named(out[1]) == [BAD]


# ----------------------------------------------------------------------------- Dask


def _parts(tmp: Path, name: str, p: np.ndarray, y: Any, n_parts: int = 5) -> Path:
    import pandas as pd

    folder = tmp / name
    folder.mkdir()
    size = len(y) // n_parts
    for i in range(n_parts):
        sl = slice(size * i, size * (i + 1))
        frame = {f"p{j}": p[sl, j] for j in range(p.shape[1])}
        pd.DataFrame({**frame, "label": np.asarray(y)[sl]}).to_parquet(folder / f"part.{i}.parquet")
    return folder


@pytest.fixture
def dask_parquet() -> Any:
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    from calipers.stream import dask as cpd

    return cpd


def test_dask_partition_names_the_row_of_the_whole_file_read(
    tmp_path: Path, dask_parquet: Any
) -> None:
    import pandas as pd

    p, y = _bad_data("sum")
    folder = _parts(tmp_path, "parts", p, y)
    whole = tmp_path / "whole.parquet"
    pd.DataFrame({"p0": p[:, 0], "p1": p[:, 1], "p2": p[:, 2], "label": y}).to_parquet(whole)
    with pytest.raises(CalibrationInputError) as w:
        read_predictions(whole).check()
    with pytest.raises(CalibrationInputError) as d:
        dask_parquet.read_parquet_states(folder, ["ece"], scheduler="synchronous")
    assert "partition 4" in str(d.value)
    assert _rows_named(str(d.value)) == _rows_named(str(w.value)) == [BAD]


def test_dask_missing_value_names_the_data_row_of_the_whole_file_read(
    tmp_path: Path, dask_parquet: Any
) -> None:
    import pandas as pd

    p, y = _bad_data("none")
    labels = y.astype(float)
    labels[4500] = np.nan
    folder = _parts(tmp_path, "parts", p, labels)
    whole = tmp_path / "whole.parquet"
    pd.DataFrame({"p0": p[:, 0], "p1": p[:, 1], "p2": p[:, 2], "label": labels}).to_parquet(whole)
    with pytest.raises(PredictionFileError, match=r"data row 4501"):
        read_predictions(whole)
    with pytest.raises(CalibrationInputError, match=r"partition 4, column 'label'.*data row 4501"):
        dask_parquet.read_parquet_states(folder, ["ece"], scheduler="synchronous")


def test_dask_array_chunk_names_the_row_of_the_whole_array(dask_parquet: Any) -> None:
    import dask.array as da

    import calipers as cp

    p, y = _bad_data("sum")
    with pytest.raises(CalibrationInputError) as whole:
        cp.check_predictions(p, y)
    with pytest.raises(CalibrationInputError) as d:
        dask_parquet.calibration_states(
            da.from_array(p, chunks=(1000, 3)), da.from_array(y, chunks=1000), ["ece"],
            scheduler="synchronous",
        )  # fmt: skip
    assert "chunk 4 (rows 4000..4999)" in str(d.value)
    assert _rows_named(str(d.value).split(":", 1)[1]) == _rows_named(str(whole.value)) == [BAD]


def test_dask_parts_with_different_columns_name_the_file(tmp_path: Path, dask_parquet: Any) -> None:
    import pandas as pd

    folder = tmp_path / "mixed"
    folder.mkdir()
    pd.DataFrame({"p0": [0.2, 0.7], "p1": [0.8, 0.3], "label": [1, 0]}).to_parquet(
        folder / "a.parquet"
    )
    pd.DataFrame({"q0": [0.2, 0.7], "q1": [0.8, 0.3], "label": [1, 0]}).to_parquet(
        folder / "b.parquet"
    )
    with pytest.raises(
        CalibrationInputError, match=r"b\.parquet' has no column\(s\) \['p0', 'p1'\]"
    ):
        dask_parquet.read_parquet_states(folder, ["ece"], scheduler="synchronous")


def test_dask_truncated_empty_and_rowless_data_sets(tmp_path: Path, dask_parquet: Any) -> None:
    import pandas as pd

    trunc = tmp_path / "trunc"
    trunc.mkdir()
    pd.DataFrame({"p0": [0.2, 0.7], "p1": [0.8, 0.3], "label": [1, 0]}).to_parquet(
        trunc / "a.parquet"
    )
    data = (trunc / "a.parquet").read_bytes()
    (trunc / "b.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(CalibrationInputError, match=r"b\.parquet' is damaged or not a Parquet"):
        dask_parquet.read_parquet_states(trunc, ["ece"], scheduler="synchronous")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CalibrationInputError, match=r"'.*empty' holds no Parquet files"):
        dask_parquet.read_parquet_states(empty, ["ece"], scheduler="synchronous")
    rowless = tmp_path / "rowless.parquet"
    pd.DataFrame({"p0": [], "p1": [], "label": []}).astype({"label": int}).to_parquet(rowless)
    with pytest.raises(CalibrationInputError, match=r"rowless\.parquet' has columns but no data"):
        dask_parquet.read_parquet_states(rowless, ["ece"], scheduler="synchronous")


def test_cli_dask_bad_data_sets_exit_3_in_one_line(
    tmp_path: Path, dask_parquet: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pandas as pd

    folder = tmp_path / "mixed"
    folder.mkdir()
    pd.DataFrame({"p0": [0.2, 0.7], "p1": [0.8, 0.3], "label": [1, 0]}).to_parquet(
        folder / "a.parquet"
    )
    pd.DataFrame({"q0": [0.2], "q1": [0.8], "label": [1]}).to_parquet(folder / "b.parquet")
    (tmp_path / "empty").mkdir()
    for target in ("mixed", "empty"):
        status, err = _main(["table", target, "--scheduler", "synchronous"], tmp_path, monkeypatch)
        assert status == 3, err
        assert len(err.strip().splitlines()) == 1, err


# ----------------------------------------------------------------------------- declared sizes


def test_declared_size_of_plain_files_is_their_arrays_nbytes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    p = rng.dirichlet([1.0] * 4, size=1000).astype(np.float32)
    y = rng.integers(0, 4, 1000)
    np.save(tmp_path / "p.npy", p)
    np.savez_compressed(tmp_path / "p.npz", probs=p, labels=y)
    assert declared_size(tmp_path / "p.npy").nbytes == p.nbytes
    assert declared_size(tmp_path / "p.npy").rows == 1000
    assert declared_size(tmp_path / "p.npz").nbytes == p.nbytes + y.nbytes
    csv = tmp_path / "p.csv"
    csv.write_text("label,p0,p1\n0,0.5,0.5\n")
    assert declared_size(csv).nbytes == csv.stat().st_size and declared_size(csv).rows is None
    assert declared_size(tmp_path / "missing.npz").nbytes == 0  # the reader says it is missing


def test_declared_size_of_parquet_counts_every_value(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    n = 10**6  # a constant column and a list column: a few KB on disk once encoded
    table = pa.table(
        {
            "probs": pa.array([[0.25, 0.75]] * n, type=pa.list_(pa.float64())),
            "label": pa.array(np.ones(n, dtype=np.int64)),
        }
    )
    path = tmp_path / "c.parquet"
    pq.write_table(table, path)
    assert path.stat().st_size < 200_000
    d = declared_size(path)
    assert d.rows == n
    assert d.nbytes >= 8 * (2 * n + n)  # two list elements and a label per row


def test_parquet_list_column_later_batch_names_the_row_of_the_whole_file_read(
    tmp_path: Path,
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    p, y = _bad_data("none")
    rows: list[Any] = p.tolist()
    rows[BAD] = [rows[BAD][0], None, rows[BAD][2]]  # a null element
    path = tmp_path / "nulls.parquet"
    table = pa.table({"probs": pa.array(rows, type=pa.list_(pa.float64())), "label": y})
    pq.write_table(table, path, row_group_size=700)
    with pytest.raises(PredictionFileError) as whole:
        read_predictions(path)
    with pytest.raises(PredictionFileError) as chunked:
        list(read_prediction_chunks(path, 1000))
    assert str(chunked.value) == str(whole.value)
    assert f"data row {BAD + 1}: value 1 is missing" in str(whole.value)
    # a bare list column whose kind is detected from the values: one row off the simplex
    p[BAD] = [0.5, 0.6, 0.1]
    path = tmp_path / "bare.parquet"
    pq.write_table(pa.table({"v": pa.array(p.tolist()), "label": y}), path, row_group_size=700)
    with pytest.raises(PredictionFileError) as whole:
        read_predictions(path)
    with pytest.raises(PredictionFileError) as chunked:
        list(read_prediction_chunks(path, 1000))
    assert _rows_named(str(chunked.value)) == _rows_named(str(whole.value)) == [BAD]


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB and RLIMIT_AS: Linux")
def test_labels_bomb_is_refused_by_its_declared_count(tmp_path: Path) -> None:
    # 10 rows of predictions and a 2 MB labels archive declaring 2.2 billion labels:
    # the count is compared before the labels are read (they used to be read whole)
    np.save(tmp_path / "p.npy", np.full((10, 2), 0.5))
    n = 2_200_000_000
    _write_zip(tmp_path / "y.npz", {"labels.npy": _deflated_zeros_member((n,), "|i1")})
    expected = f"{n} labels for 10 rows of predictions"
    with pytest.raises(PredictionFileError, match=expected):
        read_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.npz")
    with pytest.raises(PredictionFileError, match=expected):
        read_prediction_chunks(tmp_path / "p.npy", 4, labels_path=tmp_path / "y.npz")
    status, err, peak = _run_measured(
        ["table", "p.npy", "--labels", "y.npz"], tmp_path, 6 * 1024**3
    )
    assert peak < 1.5e9, f"peak resident memory {peak / 1e9:.2f} GB; stderr: {err[-2000:]}"
    assert status == 3 and expected in err, err


def test_labels_file_of_the_right_declared_count_is_read(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    p = rng.dirichlet([1.0, 1.0], size=50)
    y = rng.integers(0, 2, 50)
    np.save(tmp_path / "p.npy", p)
    np.savez(tmp_path / "y.npz", other=np.arange(3), labels=y)
    pf = read_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.npz")
    np.testing.assert_array_equal(pf.labels, y)
    chunks = list(read_prediction_chunks(tmp_path / "p.npy", 20, labels_path=tmp_path / "y.npz"))
    np.testing.assert_array_equal(np.concatenate([c.labels for c in chunks]), y)
    np.save(tmp_path / "y1.npy", y[:49])
    with pytest.raises(PredictionFileError, match="49 labels for 50 rows"):
        read_prediction_chunks(tmp_path / "p.npy", 20, labels_path=tmp_path / "y1.npy")


def test_row_at_the_end_of_a_sentence_is_moved_too(tmp_path: Path) -> None:
    # "found 1.5 at row 4320." (a binary P(y = 1) column): the position ends a sentence
    rng = np.random.default_rng(6)
    p = rng.uniform(size=N)
    p[BAD] = 1.5
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "y.npy", rng.integers(0, 2, N))
    with pytest.raises(CalibrationInputError) as whole:
        read_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.npy").check()
    with pytest.raises(CalibrationInputError) as chunked:
        for c in read_prediction_chunks(tmp_path / "p.npy", 1000, labels_path=tmp_path / "y.npy"):
            c.check()
    assert f"at row {BAD}." in str(whole.value)
    assert str(chunked.value).endswith(str(whole.value))
