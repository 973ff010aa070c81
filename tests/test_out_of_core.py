"""Out-of-core reading: chunked readers and the streamed ``calipers table`` / ``report``.

The oracle everywhere is the in-memory path: :func:`calipers.io.read_predictions`
for the arrays, the metric functions (through the in-memory ``calipers table``) for
the numbers. Real predictions come from ../shared/data (skipped when absent, as in
test_real_data.py) and are written here to Parquet, ``.npy`` and CSV.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.special import softmax

import calipers as cp
from calipers.cli import main
from calipers.io import PredictionFileError, read_prediction_chunks, read_predictions
from calipers.validation import CalibrationInputError
from shared_data import load as _load

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


# ----------------------------------------------------------------------------- writers


def _write_csv(path: Path, arr: np.ndarray, labels: np.ndarray, prefix: str = "p") -> Path:
    cols = [f"{prefix}{j}" for j in range(arr.shape[1])] if arr.ndim == 2 else [f"{prefix}1"]
    a2 = arr if arr.ndim == 2 else arr[:, None]
    lines = ["label," + ",".join(cols)]
    lines += [
        f"{int(y)}," + ",".join(repr(float(v)) for v in row)
        for row, y in zip(a2, labels, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write_parquet(
    path: Path, arr: np.ndarray, labels: np.ndarray, prefix: str = "p", row_group: int = 1000
) -> Path:
    if arr.ndim == 1:
        cols = {f"{prefix}1": arr}
    else:
        cols = {f"{prefix}{j}": arr[:, j] for j in range(arr.shape[1])}
    pq.write_table(pa.table({"label": labels, **cols}), path, row_group_size=row_group)
    return path


def _formats(tmp: Path, arr: np.ndarray, labels: np.ndarray) -> list[tuple[Path, dict[str, Any]]]:
    np.savez(tmp / "a.npz", probs=arr, labels=labels)
    np.savez_compressed(tmp / "z.npz", probs=arr, labels=labels)
    np.save(tmp / "a.npy", arr)
    np.save(tmp / "y.npy", labels)
    pq.write_table(
        pa.table({"label": labels, "v": list(np.atleast_2d(arr.T).T)}),
        tmp / "l.parquet",
        row_group_size=37,
    )
    return [
        (tmp / "a.npz", {}),
        (tmp / "z.npz", {}),
        (tmp / "a.npy", {"labels_path": tmp / "y.npy"}),
        (_write_parquet(tmp / "a.parquet", arr, labels, row_group=41), {}),
        (tmp / "l.parquet", {}),
        (_write_csv(tmp / "a.csv", arr, labels), {}),
        (tmp / "a.csv", {"labels_path": tmp / "y.npy"}),
    ]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(14)
    P = rng.dirichlet(np.ones(4) * 0.7, size=211)
    y = rng.integers(0, 4, size=211)
    return tmp_path_factory.mktemp("ooc"), P, y


# ----------------------------------------------------------------------------- the reader


@pytest.mark.parametrize("chunk_rows", [1, 7, 53, 211, 1000])
def test_chunks_concatenate_to_the_whole_file(synthetic: Any, chunk_rows: int) -> None:
    tmp, P, y = synthetic
    for path, kw in _formats(tmp, P, y):
        whole = read_predictions(path, **kw)
        chunks = read_prediction_chunks(path, chunk_rows, **kw)
        got = list(chunks)
        sizes = [c.n_rows for c in got]
        assert max(sizes) <= chunk_rows, (path, sizes)
        assert [c.start for c in got] == list(np.cumsum([0] + sizes[:-1])), path
        assert np.array_equal(np.concatenate([c.array for c in got]), whole.array), path
        assert np.array_equal(np.concatenate([c.labels for c in got]), whole.labels), path
        assert (chunks.kind, chunks.kind_basis) == (whole.kind, whole.kind_basis), path
        if path.suffix != ".parquet":  # Parquet batches may end early at a row group
            assert sizes[:-1] == [chunk_rows] * (len(sizes) - 1), (path, sizes)
        # a second iteration reads the file again, with the same rows
        assert sum(c.n_rows for c in chunks) == len(y)


def test_note_and_count_match_the_whole_file_reader(synthetic: Any) -> None:
    tmp, P, y = synthetic
    for path, kw in _formats(tmp, P, y):
        whole = read_predictions(path, **kw)
        chunks = read_prediction_chunks(path, 10, **kw)
        if "labels_path" not in kw:
            assert chunks.note == whole.note, path
        assert chunks.n_samples in (None, len(y))


def test_npy_is_memory_mapped_and_never_read_whole(
    synthetic: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp, P, y = synthetic
    np.save(tmp / "m.npy", P)
    np.save(tmp / "my.npy", y)
    loads: list[Any] = []
    real_load = np.load

    def load(*a: Any, **k: Any) -> Any:
        loads.append(k.get("mmap_mode"))
        return real_load(*a, **k)

    monkeypatch.setattr(np, "load", load)
    chunks = read_prediction_chunks(tmp / "m.npy", 13, labels_path=tmp / "my.npy")
    assert chunks.access == "memory-mapped"
    got = list(chunks)
    assert loads and set(loads) == {"r"}  # both files mapped, never loaded whole
    # each chunk is copied out of the map, whose pages are then handed back
    # (tests/test_hardening_chunk_memory.py measures the resident memory)
    assert all(c.n_rows <= 13 and not isinstance(c.array, np.memmap) for c in got)
    np.testing.assert_array_equal(np.concatenate([c.array for c in got]), P)
    np.testing.assert_array_equal(np.concatenate([c.labels for c in got]), y)


def test_parquet_is_read_by_batches_never_whole(
    synthetic: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp, P, y = synthetic
    path = _write_parquet(tmp / "b.parquet", P, y, row_group=50)

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("the whole table was read")

    monkeypatch.setattr(pq.ParquetFile, "read", refuse)
    monkeypatch.setattr(pq, "read_table", refuse)
    sizes = [c.n_rows for c in read_prediction_chunks(path, 17)]
    assert max(sizes) <= 17 and sum(sizes) == len(y)


def test_npz_members_are_streamed(synthetic: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp, P, y = synthetic
    np.savez_compressed(tmp / "s.npz", probs=P, labels=y)
    from calipers.io import chunks as mod

    reads: list[int] = []
    take = mod._MemberRows.take

    def spy(self: Any, m: int) -> np.ndarray:
        out = take(self, m)
        reads.append(int(out.shape[0]))
        return out

    monkeypatch.setattr(mod._MemberRows, "take", spy)
    assert sum(c.n_rows for c in read_prediction_chunks(tmp / "s.npz", 19)) == len(y)
    assert max(reads) <= 19 and sum(reads) == 2 * len(y)  # predictions and labels


# ----------------------------------------------------------------------------- errors


def test_bad_value_in_a_later_chunk_names_the_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    p = rng.uniform(size=300)
    p[250] = 1.5
    y = (rng.uniform(size=300) < p).astype(int)
    np.savez(tmp_path / "b.npz", p=p, y=y)
    chunks = read_prediction_chunks(tmp_path / "b.npz", 97)
    with pytest.raises(CalibrationInputError, match=r"b\.npz, data rows 195\.\.291"):
        for c in chunks:
            c.check()


def test_bad_label_in_a_later_parquet_batch_names_the_row(tmp_path: Path) -> None:
    y = np.zeros(100)
    y[77] = 0.5  # not a class index
    path = _write_parquet(tmp_path / "b.parquet", np.full(100, 0.3), y, row_group=10)
    with pytest.raises(PredictionFileError, match=r"data row 78, column 'label'"):
        list(read_prediction_chunks(path, 16))
    with pytest.raises(PredictionFileError, match=r"data row 78, column 'label'"):
        read_predictions(path)


def test_bad_number_in_a_later_csv_chunk_names_the_line(tmp_path: Path) -> None:
    path = _write_csv(tmp_path / "b.csv", np.full(50, 0.25), np.zeros(50))
    lines = path.read_text().splitlines()
    lines[41] = "0,zero"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PredictionFileError, match=r"line 42, column 'p1': 'zero' is not a number"):
        list(read_prediction_chunks(path, 8))
    with pytest.raises(PredictionFileError, match=r"line 42, column 'p1': 'zero' is not a number"):
        read_predictions(path)


def test_labels_file_of_the_wrong_length(tmp_path: Path) -> None:
    np.save(tmp_path / "p.npy", np.full(10, 0.5))
    np.save(tmp_path / "y.npy", np.zeros(9, dtype=int))
    with pytest.raises(PredictionFileError, match="9 labels for 10 rows"):
        read_prediction_chunks(tmp_path / "p.npy", 4, labels_path=tmp_path / "y.npy")
    _write_csv(tmp_path / "p.csv", np.full(10, 0.5), np.zeros(10))
    with pytest.raises(PredictionFileError, match=r"labels end before data rows 9\.\.10"):
        list(read_prediction_chunks(tmp_path / "p.csv", 4, labels_path=tmp_path / "y.npy"))
    np.save(tmp_path / "y11.npy", np.zeros(11, dtype=int))
    with pytest.raises(PredictionFileError, match="11 labels for 10 rows"):
        list(read_prediction_chunks(tmp_path / "p.csv", 4, labels_path=tmp_path / "y11.npy"))


def test_bare_list_column_whose_chunks_disagree_on_the_kind(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), size=20)
    logits = 3 * rng.standard_normal((20, 3))
    vecs = list(np.concatenate([probs, logits]))
    pq.write_table(pa.table({"v": vecs, "label": np.zeros(40, dtype=int)}), tmp_path / "m.parquet")
    assert read_predictions(tmp_path / "m.parquet").kind == "logits"  # whole: logits
    with pytest.raises(PredictionFileError, match=r"data rows 21\.\.30.*--logits or --probs"):
        list(read_prediction_chunks(tmp_path / "m.parquet", 10))
    # an explicit kind reads every chunk alike
    got = list(read_prediction_chunks(tmp_path / "m.parquet", 10, logits=True))
    assert sum(c.n_rows for c in got) == 40


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_chunk_rows_must_be_a_positive_integer(tmp_path: Path, bad: Any) -> None:
    np.save(tmp_path / "p.npy", np.full(3, 0.5))
    with pytest.raises((ValueError, TypeError), match="chunk_rows must be a positive integer"):
        read_prediction_chunks(tmp_path / "p.npy", bad)


def test_missing_file_and_pickle_refused_as_the_whole_reader(tmp_path: Path) -> None:
    for name in ("missing.npy", "missing.parquet", "missing.csv", "missing.npz"):
        with pytest.raises(PredictionFileError, match="does not exist"):
            read_prediction_chunks(tmp_path / name, 5)
    # an object-array .npy header (what np.save writes before a pickle stream), written
    # by hand: the reader must refuse it from the header alone
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|O", "fortran_order": False, "shape": (1,)}
    )
    (tmp_path / "obj.npy").write_bytes(header.getvalue() + b"not a pickle stream")
    with pytest.raises(PredictionFileError, match="never unpickles"):
        read_prediction_chunks(tmp_path / "obj.npy", 5)


# ----------------------------------------------------------------------------- streamed table


def _table_json(args: list[str], out: Path) -> dict[str, Any]:
    with contextlib.redirect_stderr(io.StringIO()):
        assert main(["table", *args, "--out", str(out), "--force", "--nll-clip", "1e-15"]) == 0
    return json.loads(out.read_text())


_EXACT_EQUAL_MASS = ("ace", "tace", "rmsce")
_EXACT = (
    "accuracy",
    "nll",
    "nll_clipped",
    "brier",
    "ece",
    "sce",
    "mce",
    "classwise_ece",
    "bin_averaged_ece",
)


def _compare(streamed: dict[str, Any], whole: dict[str, Any], equal_mass: bool = True) -> None:
    for s, w in zip(streamed["models"], whole["models"], strict=True):
        assert s["n"] == w["n"]
        for key in _EXACT:
            if w[key] == "inf":
                assert s[key] == "inf", key
            else:
                assert math.isclose(s[key], w[key], rel_tol=1e-12, abs_tol=1e-15), (
                    key,
                    s[key],
                    w[key],
                )
        for key in _EXACT_EQUAL_MASS:
            if equal_mass:  # two passes over the file (the default)
                assert math.isclose(s[key], w[key], rel_tol=1e-12, abs_tol=1e-15), key
            else:  # --equal-mass skip: not computed, and never silently dropped
                assert s[key] is None, key
    if not equal_mass:
        assert any("not computed (n/a)" in n and "equal-mass" in n for n in streamed["notes"])


def test_streamed_table_equals_in_memory_on_synthetic_files(synthetic: Any) -> None:
    tmp, P, y = synthetic
    for path, kw in _formats(tmp, P, y):
        extra = ["--labels", str(kw["labels_path"])] if kw else []
        whole = _table_json([str(path), *extra], tmp / "w.json")
        # fixed bins: one pass, chunks of an awkward (prime) size
        args = [str(path), *extra, "--chunk-rows", "23", "--equal-mass", "skip"]
        _compare(_table_json(args, tmp / "s.json"), whole, equal_mass=False)
        # equal-mass bins: exact after a second pass
        _compare(_table_json([str(path), *extra, "--chunk-rows", "53"], tmp / "s.json"), whole)


def test_streamed_table_in_chunks_of_one_row(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(3), size=25)
    y = rng.integers(0, 3, size=25)
    for path, kw in _formats(tmp_path, P, y)[::3]:  # .npz, .parquet, .csv with a labels file
        extra = ["--labels", str(kw["labels_path"])] if kw else []
        whole = _table_json([str(path), *extra], tmp_path / "w.json")
        streamed = _table_json([str(path), *extra, "--chunk-rows", "1"], tmp_path / "s.json")
        _compare(streamed, whole)


@pytest.mark.parametrize(
    "name,key",
    [
        ("labelerrors_cifar10.npz", "probs"),
        ("labelerrors_20news.npz", "probs"),
        ("densenet40_c10_test.npz", "logits"),
        ("niamey2016_EMOS.npz", "p"),
    ],
)
def test_streamed_table_equals_in_memory_on_real_data(tmp_path: Path, name: str, key: str) -> None:
    d = _load(name)
    arr = d[key]
    labels = d["labels"] if "labels" in d else d["y"].astype(np.int64)
    prefix = "logit_" if key == "logits" else "p"
    files = [
        _write_parquet(tmp_path / "r.parquet", arr, labels, prefix=prefix, row_group=997),
        _write_csv(tmp_path / "r.csv", arr, labels, prefix=prefix),
    ]
    np.save(tmp_path / "r.npy", arr)
    np.save(tmp_path / "ry.npy", labels)
    runs = [([str(f)], f) for f in files]
    npy_args = [str(tmp_path / "r.npy"), "--labels", str(tmp_path / "ry.npy")]
    runs.append((npy_args + (["--logits"] if key == "logits" else []), tmp_path / "r.npy"))
    for args, _ in runs:
        whole = _table_json(args, tmp_path / "w.json")
        skip = [*args, "--chunk-rows", "1009", "--equal-mass", "skip"]  # a prime
        _compare(_table_json(skip, tmp_path / "s.json"), whole, equal_mass=False)
        two = [*args, "--chunk-rows", "4096"]  # a power of two; equal-mass: two passes
        _compare(_table_json(two, tmp_path / "s.json"), whole)
    if name == "labelerrors_20news.npz":  # exactly 0 for the true class in 61 rows
        streamed = _table_json(
            [str(files[0]), "--chunk-rows", "1009", "--equal-mass", "skip"], tmp_path / "s.json"
        )
        assert any("61 of 7532 rows" in n for n in streamed["notes"])


def test_streamed_rows_agree_with_the_metric_functions(tmp_path: Path) -> None:
    """The in-memory oracle is the library itself, not only the in-memory table."""
    rng = np.random.default_rng(5)
    z = 3 * rng.standard_normal((500, 5))
    y = np.array([rng.choice(5, p=softmax(r)) for r in z])
    P = softmax(1.5 * z, axis=1)
    np.savez(tmp_path / "m.npz", probs=P, labels=y)
    row = _table_json([str(tmp_path / "m.npz"), "--chunk-rows", "31"], tmp_path / "s.json")[
        "models"
    ][0]
    for key, fn in [
        ("ece", cp.ece),
        ("sce", cp.sce),
        ("mce", cp.mce),
        ("classwise_ece", cp.classwise_ece),
        ("bin_averaged_ece", cp.bin_averaged_ece),
    ]:
        assert math.isclose(row[key], fn(P, y), rel_tol=1e-12), key
    assert math.isclose(row["nll"], cp.nll(P, y), rel_tol=1e-12)
    assert math.isclose(row["brier"], cp.brier(P, y), rel_tol=1e-12)
    assert row["accuracy"] == cp.accuracy(P, y)


def test_table_text_and_csv_mark_columns_not_computed(synthetic: Any) -> None:
    tmp, P, y = synthetic
    np.savez(tmp / "t.npz", probs=P, labels=y)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        args = ["table", str(tmp / "t.npz"), "--chunk-rows", "50", "--equal-mass", "skip"]
        assert main(args) == 0
    text = out.getvalue()
    assert "n/a" in text and "read in" in text and "chunks of at most 50 rows" in text
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main([*args, "--format", "csv"]) == 0
    header, row = out.getvalue().splitlines()
    cells = dict(zip(header.split(","), row.split(","), strict=True))
    assert cells["ace"] == "" and cells["tace"] == "" and float(cells["ece"]) > 0


def test_large_files_are_streamed_without_the_option(
    synthetic: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calipers.cli import streaming

    tmp, P, y = synthetic
    np.savez(tmp / "big.npz", probs=P, labels=y)
    monkeypatch.setattr(streaming, "STREAM_ABOVE_BYTES", 1000)
    monkeypatch.setattr(streaming, "DEFAULT_CHUNK_ROWS", 64)
    doc = _table_json([str(tmp / "big.npz"), "--equal-mass", "skip"], tmp / "auto.json")
    assert doc["models"][0]["ace"] is None
    assert "chunks of at most 64 rows" in doc["sources"][0]
    assert streaming.wants_streaming(tmp / "big.npz", None) == 64
    assert streaming.wants_streaming(tmp / "big.npz", 5) == 5
    monkeypatch.setattr(streaming, "STREAM_ABOVE_BYTES", 10**12)
    assert streaming.wants_streaming(tmp / "big.npz", None) is None


def test_bad_later_chunk_exit_status_and_message(tmp_path: Path) -> None:
    p = np.full(100, 0.5)
    p[90] = np.nan
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "y.npy", np.zeros(100, dtype=int))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(
            [
                "table",
                str(tmp_path / "p.npy"),
                "--labels",
                str(tmp_path / "y.npy"),
                "--chunk-rows",
                "30",
            ]
        )
    assert status == 3
    assert "data rows 91..100" in err.getvalue()


def test_stream_states_is_a_plain_function_of_chunks(synthetic: Any) -> None:
    from calipers.cli.streaming import stream_states

    tmp, P, y = synthetic
    np.savez(tmp / "f.npz", probs=P, labels=y)
    states = stream_states(read_prediction_chunks(tmp / "f.npz", 29), ["ece", "sce"], 10)
    assert math.isclose(states["ece"].compute(), cp.ece(P, y, n_bins=10), rel_tol=1e-12)
    assert math.isclose(states["sce"].compute(), cp.sce(P, y, n_bins=10), rel_tol=1e-12)


# ----------------------------------------------------------------------------- streamed report


def test_streamed_report_json(synthetic: Any) -> None:
    tmp, P, y = synthetic
    np.savez(tmp / "r.npz", probs=P, labels=y)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(
            [
                "report",
                str(tmp / "r.npz"),
                "--chunk-rows",
                "40",
                "--recalibrate",
                "ts",
                "--format",
                "json",
                "--out",
                str(tmp / "rep"),
            ]
        )
    assert status == 0
    doc = json.loads(out.getvalue())
    row = doc["rows"][0]
    assert doc["streamed"] and row["n"] == len(y)
    assert math.isclose(row["ece"], cp.ece(P, y), rel_tol=1e-12)
    assert math.isclose(row["nll"], cp.nll(P, y), rel_tol=1e-12)
    # the reliability table is the in-memory one
    table = cp.reliability_table(P, y, as_frame=False)
    bins = doc["reliability"]["r"]
    assert [b["count"] for b in bins] == [int(c) for c in table["count"]]
    assert np.allclose([b["observed"] for b in bins], table["observed"], rtol=1e-12)
    assert any("Recalibration was not run" in n for n in doc["notes"])
    # the HTML too, with a reliability diagram from the per-bin totals (needs matplotlib)
    import importlib.util

    figures = ["figures"] if importlib.util.find_spec("matplotlib") else []
    assert sorted(os.listdir(tmp / "rep")) == [
        ".calipers-report",
        *figures,
        "report.html",
        "report.json",
        "report.md",
    ]


def test_streamed_report_refuses_latex(synthetic: Any) -> None:
    tmp, P, y = synthetic
    np.savez(tmp / "r.npz", probs=P, labels=y)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(["report", str(tmp / "r.npz"), "--chunk-rows", "40", "--format", "latex"])
    assert status == 3 and "markdown, json or html, not latex" in err.getvalue()


def test_one_pass_equal_mass_within_the_printed_bound(synthetic: Any) -> None:
    tmp, P, y = synthetic
    np.savez(tmp / "o.npz", probs=P, labels=y)
    args = [str(tmp / "o.npz"), "--chunk-rows", "60", "--equal-mass", "one-pass"]
    doc = _table_json(args, tmp / "o.json")
    row = doc["models"][0]
    note = next(n for n in doc["notes"] if "one pass" in n)
    bounds = dict(re.findall(r"(ACE|TACE) within ([0-9.e+-]+)", note))
    assert set(bounds) == {"ACE", "TACE"} and row["rmsce"] is None
    assert abs(row["ace"] - cp.ace(P, y)) <= float(bounds["ACE"]) * 1.01
    assert abs(row["tace"] - cp.tace(P, y)) <= float(bounds["TACE"]) * 1.01
