"""Tests for ``calipers.io.read_predictions``: every format round-trips, every bad file
gives a :class:`PredictionFileError` whose message says what to do, and nothing is
ever unpickled."""

from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers as cp
from calipers.io import PredictionFile, PredictionFileError, read_predictions

P3 = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.25, 0.5, 0.25], [0.2, 0.2, 0.6]])
Y3 = np.array([0, 2, 1, 1])
Z3 = np.log(P3) + 1.5  # logits whose softmax is P3


def _csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _csv_of(path: Path, probs: np.ndarray, labels: np.ndarray, prefix: str = "p") -> Path:
    k = probs.shape[1]
    lines = ["label," + ",".join(f"{prefix}{j}" for j in range(k))]
    lines += [
        f"{y}," + ",".join(repr(float(v)) for v in row)
        for row, y in zip(probs, labels, strict=True)
    ]
    return _csv(path, "\n".join(lines) + "\n")


def test_error_is_a_value_error() -> None:
    assert issubclass(PredictionFileError, ValueError)


# ----------------------------------------------------------------------------- .npz


def test_npz_round_trip(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=P3, labels=Y3)
    pf = read_predictions(f)
    assert isinstance(pf, PredictionFile)
    assert pf.kind == "probs" and pf.logits is None
    np.testing.assert_array_equal(pf.probs, P3)
    np.testing.assert_array_equal(pf.labels, Y3)
    assert pf.source == str(f)
    assert "'probs'" in pf.note and "'labels'" in pf.note
    assert pf.n_samples == 4
    np.testing.assert_array_equal(pf.check().probs, P3)


@pytest.mark.parametrize(
    ("pkey", "lkey"),
    [("probabilities", "y"), ("P", "Y_TRUE"), ("y_prob", "targets"), ("Probs", "Labels")],
)
def test_npz_recognised_keys_any_case(tmp_path: Path, pkey: str, lkey: str) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, **{pkey: P3, lkey: Y3})
    pf = read_predictions(f)
    np.testing.assert_array_equal(pf.probs, P3)
    np.testing.assert_array_equal(pf.labels, Y3)


def test_npz_logits_detected(tmp_path: Path) -> None:
    f = tmp_path / "logits.npz"
    np.savez(f, logits=Z3, labels=Y3)
    pf = read_predictions(f)
    assert pf.kind == "logits" and pf.probs is None
    np.testing.assert_array_equal(pf.logits, Z3)
    P = pf.check()
    np.testing.assert_allclose(P.probs, P3, atol=1e-12)
    # the exact NLL from logits is used
    assert cp.nll(P, None) == pytest.approx(-np.mean(np.log(P3[np.arange(4), Y3])), rel=1e-12)


def test_npz_explicit_keys(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, model_a=P3, truth=Y3, other=np.zeros(3))
    pf = read_predictions(f, probs_key="model_a", labels_key="truth")
    np.testing.assert_array_equal(pf.probs, P3)
    np.testing.assert_array_equal(pf.labels, Y3)
    pf = read_predictions(f, logits_key="model_a", labels_key="truth")
    assert pf.kind == "logits"
    # probs_key with logits=True reads that array as logits
    assert (
        read_predictions(f, probs_key="model_a", labels_key="truth", logits=True).kind == "logits"
    )


def test_npz_missing_predictions_lists_keys(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, model_a=P3, labels=Y3)
    with pytest.raises(PredictionFileError) as exc:
        read_predictions(f)
    msg = str(exc.value)
    assert "'model_a'" in msg and "'labels'" in msg and "probs_key" in msg and "--probs-key" in msg


def test_npz_unknown_explicit_key(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=P3, labels=Y3)
    with pytest.raises(PredictionFileError, match=r"no array named 'nope' \(probs_key\).*'probs'"):
        read_predictions(f, probs_key="nope")


def test_npz_ambiguous_predictions(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=P3, p=P3, labels=Y3)
    with pytest.raises(PredictionFileError, match=r"ambiguous: arrays 'probs', 'p'.*--probs-key"):
        read_predictions(f)
    assert read_predictions(f, probs_key="p").probs is not None


def test_npz_ambiguous_labels(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=P3, labels=Y3, y=Y3)
    with pytest.raises(PredictionFileError, match=r"'labels', 'y' could all be the labels"):
        read_predictions(f)
    np.testing.assert_array_equal(read_predictions(f, labels_key="y").labels, Y3)


def test_npz_probs_and_logits_is_ambiguous(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=P3, logits=Z3, labels=Y3)
    with pytest.raises(PredictionFileError, match=r"both probabilities \('probs'\) and logits"):
        read_predictions(f)
    assert read_predictions(f, logits=True).kind == "logits"
    assert read_predictions(f, logits=False).kind == "probs"
    assert read_predictions(f, probs_key="probs").kind == "probs"


def test_npz_without_labels(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=P3)
    pf = read_predictions(f)
    assert pf.labels is None
    assert "no labels array" in pf.note
    with pytest.raises(PredictionFileError, match=r"holds no labels.*--labels FILE"):
        pf.check()


def test_npz_object_array_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = [0.5, 0.5], [1.0]
    np.savez(f, probs=ragged, labels=np.array([0, 1]))
    with pytest.raises(
        PredictionFileError, match="contains Python objects; calipers never unpickles files"
    ):
        read_predictions(f)


def test_npz_object_labels_are_refused(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=P3, labels=np.array(["a", "b", None, "c"], dtype=object))
    with pytest.raises(PredictionFileError, match="contains Python objects"):
        read_predictions(f)


def test_npz_string_array_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=P3.astype(str), labels=Y3)
    with pytest.raises(PredictionFileError, match="must be numeric"):
        read_predictions(f)


def test_never_unpickles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pickle inside an .npy / .npz is refused before any unpickling happens."""
    called = []

    class Boom:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (called.append, ("unpickled!",))

    arr = np.empty(1, dtype=object)
    arr[0] = Boom()
    # a deliberately malicious file, written byte by byte as NumPy lays out an object
    # array (.npy header, then the array's pickle stream); reading it must not unpickle
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "|O", "fortran_order": False, "shape": (1,)}
    )
    evil = buf.getvalue() + pickle.dumps(arr, protocol=3)
    (tmp_path / "evil.npy").write_bytes(evil)
    with zipfile.ZipFile(tmp_path / "evil.npz", "w") as zf:
        zf.writestr("probs.npy", evil)
        lab = io.BytesIO()
        np.lib.format.write_array(lab, np.array([0]))
        zf.writestr("labels.npy", lab.getvalue())

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("pickle.load was called")

    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(pickle, "loads", forbidden)
    for name in ("evil.npy", "evil.npz"):
        with pytest.raises(PredictionFileError, match="calipers never unpickles files"):
            read_predictions(tmp_path / name, labels_path=None)
    assert called == []


def test_pickle_suffix_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "preds.pkl"
    f.write_bytes(b"not even read")
    with pytest.raises(PredictionFileError, match="looks like a pickle; calipers never unpickles"):
        read_predictions(f)


def test_unsupported_suffix(tmp_path: Path) -> None:
    f = tmp_path / "preds.json"
    f.write_bytes(b"")
    with pytest.raises(PredictionFileError, match=r"unsupported type '.json'.*\.npz.*\.csv"):
        read_predictions(f)


def test_missing_file(tmp_path: Path) -> None:
    for name in ("nope.npz", "nope.npy", "nope.csv"):
        with pytest.raises(PredictionFileError, match="does not exist"):
            read_predictions(tmp_path / name)


def test_damaged_npz(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    f.write_bytes(b"PK\x03\x04 this is not a zip archive")
    with pytest.raises(PredictionFileError, match="save it again with np.save or np.savez"):
        read_predictions(f)


def test_three_dimensional_array(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=np.ones((2, 2, 2)) / 2, labels=[0, 1])
    with pytest.raises(PredictionFileError, match=r"shape \(2, 2, 2\); expected \(n, k\)"):
        read_predictions(f)


def test_labels_length_mismatch(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=P3, labels=Y3[:3])
    with pytest.raises(PredictionFileError, match="3 labels for 4 rows of predictions"):
        read_predictions(f)


def test_binary_npz(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, p=np.array([0.2, 0.9, 0.6]), y=np.array([0, 1, 0]))
    pf = read_predictions(f)
    P = pf.check()
    assert P.binary and P.n_classes == 2


# ----------------------------------------------------------------------------- .npy + labels file


@pytest.mark.parametrize("labels_format", ["npy", "npz", "txt", "csv_header", "npz_two_arrays"])
def test_npy_with_labels_file(tmp_path: Path, labels_format: str) -> None:
    f = tmp_path / "probs.npy"
    np.save(f, P3)
    if labels_format == "npy":
        lp = tmp_path / "y.npy"
        np.save(lp, Y3)
    elif labels_format == "npz":
        lp = tmp_path / "y.npz"
        np.savez(lp, whatever=Y3)
    elif labels_format == "npz_two_arrays":
        lp = tmp_path / "y.npz"
        np.savez(lp, labels=Y3, ids=np.arange(4))
    elif labels_format == "txt":
        lp = _csv(tmp_path / "y.txt", "\n".join(map(str, Y3)) + "\n")
    else:
        lp = _csv(tmp_path / "y.csv", "label\n" + "\n".join(map(str, Y3)) + "\n\n")
    pf = read_predictions(f, labels_path=lp)
    np.testing.assert_array_equal(pf.probs, P3)
    np.testing.assert_array_equal(pf.labels, Y3)
    assert str(lp) in pf.source


def test_npy_logits(tmp_path: Path) -> None:
    f = tmp_path / "z.npy"
    np.save(f, Z3)
    pf = read_predictions(f, logits=True, labels_path=_csv(tmp_path / "y.txt", "0\n2\n1\n1\n"))
    assert pf.kind == "logits"
    np.testing.assert_allclose(pf.check().probs, P3, atol=1e-12)


def test_npy_without_labels(tmp_path: Path) -> None:
    f = tmp_path / "probs.npy"
    np.save(f, P3)
    pf = read_predictions(f)
    assert pf.labels is None
    with pytest.raises(PredictionFileError, match="holds no labels"):
        pf.check()


def test_npy_labels_length_mismatch(tmp_path: Path) -> None:
    f = tmp_path / "probs.npy"
    np.save(f, P3)
    lp = tmp_path / "y.npy"
    np.save(lp, np.array([0, 1, 2]))
    with pytest.raises(PredictionFileError, match="3 labels for 4 rows") as exc:
        read_predictions(f, labels_path=lp)
    assert "one label per row" in str(exc.value)


def test_labels_file_overrides_and_npz_key(tmp_path: Path) -> None:
    f = tmp_path / "preds.npz"
    np.savez(f, probs=P3, labels=np.zeros(4, dtype=int))
    lp = tmp_path / "y.npz"
    np.savez(lp, a=Y3, b=Y3)
    with pytest.raises(PredictionFileError, match="name the labels array"):
        read_predictions(f, labels_path=lp)
    pf = read_predictions(f, labels_path=lp, labels_key="b")
    np.testing.assert_array_equal(pf.labels, Y3)


def test_bad_labels_files(tmp_path: Path) -> None:
    f = tmp_path / "probs.npy"
    np.save(f, P3)
    with pytest.raises(PredictionFileError, match="one label per line"):
        read_predictions(f, labels_path=_csv(tmp_path / "y.csv", "0,1\n1,1\n"))
    with pytest.raises(PredictionFileError, match=r"entry 2: label 'x' is not a class index"):
        read_predictions(f, labels_path=_csv(tmp_path / "y2.csv", "0\n1\nx\n1\n"))
    with pytest.raises(PredictionFileError, match="unsupported type '.json'"):
        read_predictions(f, labels_path=_csv(tmp_path / "y.json", "[0, 1]"))
    with pytest.raises(PredictionFileError, match="does not exist"):
        read_predictions(f, labels_path=tmp_path / "missing.npy")


def test_keys_rejected_for_npy_and_csv(tmp_path: Path) -> None:
    f = tmp_path / "probs.npy"
    np.save(f, P3)
    with pytest.raises(PredictionFileError, match=r"apply to \.npz files only"):
        read_predictions(f, probs_key="probs")


# ----------------------------------------------------------------------------- .csv


def test_csv_round_trip(tmp_path: Path) -> None:
    pf = read_predictions(_csv_of(tmp_path / "preds.csv", P3, Y3))
    assert pf.kind == "probs"
    np.testing.assert_array_equal(pf.probs, P3)
    np.testing.assert_array_equal(pf.labels, Y3)
    assert pf.labels.dtype == np.int64
    assert "p0..p2" in pf.note and "column 'label'" in pf.note


def test_csv_columns_ordered_by_index(tmp_path: Path) -> None:
    f = _csv(tmp_path / "preds.csv", "p1,y,p0\n0.25,0,0.75\n0.6,1,0.4\n")
    pf = read_predictions(f)
    np.testing.assert_array_equal(pf.probs, [[0.75, 0.25], [0.4, 0.6]])
    np.testing.assert_array_equal(pf.labels, [0, 1])


def test_csv_class_names_and_string_labels(tmp_path: Path) -> None:
    f = _csv(tmp_path / "preds.csv", "cat,dog,label\n0.9,0.1,cat\n0.3,0.7,dog\n0.5,0.5,1\n")
    pf = read_predictions(f)
    np.testing.assert_array_equal(pf.probs, [[0.9, 0.1], [0.3, 0.7], [0.5, 0.5]])
    np.testing.assert_array_equal(pf.labels, [0, 1, 1])
    assert "cat, dog" in pf.note


def test_csv_unknown_string_label(tmp_path: Path) -> None:
    f = _csv(tmp_path / "preds.csv", "cat,dog,label\n0.9,0.1,cat\n0.3,0.7,bird\n")
    with pytest.raises(PredictionFileError, match=r"line 3: label 'bird' is not a class index"):
        read_predictions(f)


def test_csv_logit_columns(tmp_path: Path) -> None:
    pf = read_predictions(_csv_of(tmp_path / "z.csv", Z3, Y3, prefix="logit_"))
    assert pf.kind == "logits"
    np.testing.assert_array_equal(pf.logits, Z3)
    with pytest.raises(PredictionFileError, match="logits=False"):
        read_predictions(tmp_path / "z.csv", logits=False)


def test_csv_quoted_fields_and_bom(tmp_path: Path) -> None:
    f = tmp_path / "preds.csv"
    f.write_bytes('\ufefflabel,"p0","p1"\n"0","0.8","0.2"\n1,0.1,0.9\n'.encode())
    pf = read_predictions(f)
    np.testing.assert_array_equal(pf.probs, [[0.8, 0.2], [0.1, 0.9]])
    np.testing.assert_array_equal(pf.labels, [0, 1])


def test_csv_ragged(tmp_path: Path) -> None:
    f = _csv(tmp_path / "preds.csv", "label,p0,p1\n0,0.5,0.5\n1,0.5\n")
    with pytest.raises(PredictionFileError, match="line 3 has 2 fields but the header has 3"):
        read_predictions(f)


def test_csv_not_a_number(tmp_path: Path) -> None:
    f = _csv(tmp_path / "preds.csv", "label,p0,p1\n0,0.5,0.5\n1,abc,0.5\n")
    with pytest.raises(PredictionFileError, match=r"line 3, column 'p0': 'abc' is not a number"):
        read_predictions(f)


def test_csv_without_header(tmp_path: Path) -> None:
    f = _csv(tmp_path / "preds.csv", "0,0.5,0.5\n1,0.2,0.8\n")
    with pytest.raises(PredictionFileError, match="no header row.*label,p0,p1"):
        read_predictions(f)


def test_csv_header_only_and_empty(tmp_path: Path) -> None:
    with pytest.raises(PredictionFileError, match="no data rows"):
        read_predictions(_csv(tmp_path / "a.csv", "label,p0,p1\n"))
    with pytest.raises(PredictionFileError, match="is empty"):
        read_predictions(_csv(tmp_path / "b.csv", ""))


def test_csv_bad_columns(tmp_path: Path) -> None:
    with pytest.raises(PredictionFileError, match="duplicate column names"):
        read_predictions(_csv(tmp_path / "a.csv", "label,p0,p0\n0,0.5,0.5\n"))
    with pytest.raises(PredictionFileError, match="several label columns"):
        read_predictions(_csv(tmp_path / "b.csv", "label,y,p0,p1\n0,0,0.5,0.5\n"))
    with pytest.raises(PredictionFileError, match="mixes logit columns"):
        read_predictions(_csv(tmp_path / "c.csv", "label,logit_0,p1\n0,0.5,0.5\n"))
    with pytest.raises(PredictionFileError, match=r"number the classes 0\.\.1"):
        read_predictions(_csv(tmp_path / "d.csv", "label,p1,p2\n0,0.5,0.5\n"))
    with pytest.raises(PredictionFileError, match="no probability columns"):
        read_predictions(_csv(tmp_path / "e.csv", "label\n0\n"))


def test_csv_single_column_is_binary(tmp_path: Path) -> None:
    pf = read_predictions(_csv(tmp_path / "b.csv", "y,p\n1,0.9\n0,0.2\n0,0.6\n"))
    np.testing.assert_array_equal(pf.probs, [0.9, 0.2, 0.6])
    P = pf.check()
    assert P.binary
    assert cp.accuracy(P, None) == pytest.approx(2 / 3)
    pf = read_predictions(_csv(tmp_path / "z.csv", "label,logit\n1,2.0\n0,-1.0\n"))
    assert pf.kind == "logits" and pf.logits.shape == (2,)


def test_csv_non_integer_label(tmp_path: Path) -> None:
    f = _csv(tmp_path / "preds.csv", "label,p0,p1\n0,0.5,0.5\n0.5,0.5,0.5\n")
    with pytest.raises(
        PredictionFileError, match="data row 2, column 'label': label 0.5 is not a class index"
    ):
        read_predictions(f)


def test_csv_without_label_column_uses_labels_file(tmp_path: Path) -> None:
    f = _csv(tmp_path / "preds.csv", "p0,p1\n0.5,0.5\n0.2,0.8\n")
    assert read_predictions(f).labels is None
    pf = read_predictions(f, labels_path=_csv(tmp_path / "y.txt", "1\n0\n"))
    np.testing.assert_array_equal(pf.labels, [1, 0])


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, 12),
    st.integers(2, 6),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["npz", "csv", "npy"]),
)
def test_round_trip_property(
    tmp_path_factory: pytest.TempPathFactory, n: int, k: int, seed: int, fmt: str
) -> None:
    """Random predictions survive every format exactly, and give the same metrics."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n)
    labels = rng.integers(0, k, size=n)
    d = tmp_path_factory.mktemp("rt")
    if fmt == "npz":
        f = d / "x.npz"
        np.savez(f, probs=probs, labels=labels)
        pf = read_predictions(f)
    elif fmt == "csv":
        pf = read_predictions(_csv_of(d / "x.csv", probs, labels))
    else:
        np.save(d / "x.npy", probs)
        np.save(d / "y.npy", labels)
        pf = read_predictions(d / "x.npy", labels_path=d / "y.npy")
    np.testing.assert_array_equal(pf.probs, probs)
    np.testing.assert_array_equal(pf.labels, labels)
    assert cp.ece(pf.check(), None) == cp.ece(probs, labels)
