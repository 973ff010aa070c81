"""Tests for the ``.parquet`` and ``.pt``/``.pth`` readers of ``calipers.io`` and for how
:func:`read_predictions` tells probabilities from logits (``kind_basis``).

Expected values are written by hand or computed independently (the same data
written as ``.csv``/``.npz``, which the older readers already read); errors must be
:class:`PredictionFileError` with a message that says what to do. The refusal of a
malicious ``.pt`` file is checked with a payload whose pickle calls ``open`` on a
marker path (checked in the raw bytes; the tests never unpickle it)."""

from __future__ import annotations

import pickle
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.io import PredictionFile, PredictionFileError, read_predictions

try:
    import torch
except ImportError:  # the .pt tests need PyTorch; the Parquet and detection-only ones do not
    torch = None  # type: ignore[assignment]

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

P3 = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.25, 0.5, 0.25], [0.2, 0.2, 0.6]])
Y3 = np.array([0, 2, 1, 1])
Z3 = np.log(P3) + 1.5  # logits whose softmax is P3; entries outside [0, 1]


def _csv_text(names: list[str], rows: list[list[Any]]) -> str:
    return "\n".join([",".join(names)] + [",".join(str(v) for v in r) for r in rows]) + "\n"


# =============================================================================== .pt / .pth


def _pt(path: Path, obj: object) -> Path:
    torch.save(obj, path)
    return path


@needs_torch
def test_pt_dict_round_trip(tmp_path: Path) -> None:
    f = _pt(tmp_path / "preds.pt", {"probs": torch.tensor(P3), "labels": torch.tensor(Y3)})
    pf = read_predictions(f)
    assert isinstance(pf, PredictionFile)
    assert pf.kind == "probs" and pf.kind_basis == "name" and pf.logits is None
    assert pf.probs.dtype == np.float64 and pf.labels.dtype == np.int64
    np.testing.assert_array_equal(pf.probs, P3)
    np.testing.assert_array_equal(pf.labels, Y3)
    assert pf.note == "array 'probs' read as probs, labels from 'labels'"
    # the metric is the one computed from the arrays themselves
    assert cp.ece(pf.check(), None) == cp.ece(P3, Y3)


@needs_torch
def test_pt_dict_mirrors_npz(tmp_path: Path) -> None:
    """Same keys, same choices and the same notes and messages as the .npz reader."""
    cases: list[tuple[dict[str, np.ndarray], dict[str, Any]]] = [
        ({"logits": Z3, "y": Y3}, {}),
        ({"Probabilities": P3, "TARGETS": Y3}, {}),
        ({"model_a": P3, "truth": Y3}, {"probs_key": "model_a", "labels_key": "truth"}),
        ({"model_a": Z3, "truth": Y3}, {"logits_key": "model_a", "labels_key": "truth"}),
        ({"probs": P3, "logits": Z3, "labels": Y3}, {"logits": True}),
        ({"probs": P3, "logits": Z3, "labels": Y3}, {"logits": False}),
        ({"probs": P3}, {}),
    ]
    for arrays, kwargs in cases:
        npz, pt = tmp_path / "x.npz", tmp_path / "x.pt"
        np.savez(npz, **arrays)
        torch.save({k: torch.from_numpy(v) for k, v in arrays.items()}, pt)
        a, b = read_predictions(npz, **kwargs), read_predictions(pt, **kwargs)
        assert (a.kind, a.kind_basis, a.note) == (b.kind, b.kind_basis, b.note)
        np.testing.assert_array_equal(a.array, b.array)
        if a.labels is None:
            assert b.labels is None
        else:
            np.testing.assert_array_equal(a.labels, b.labels)
    bad: list[tuple[dict[str, np.ndarray], dict[str, Any]]] = [
        ({"probs": P3, "p": P3, "labels": Y3}, {}),
        ({"probs": P3, "labels": Y3, "y": Y3}, {}),
        ({"probs": P3, "logits": Z3, "labels": Y3}, {}),
        ({"model_a": P3, "labels": Y3}, {}),
        ({"probs": P3, "labels": Y3}, {"probs_key": "nope"}),
    ]
    for arrays, kwargs in bad:
        npz, pt = tmp_path / "x.npz", tmp_path / "x.pt"
        np.savez(npz, **arrays)
        torch.save({k: torch.from_numpy(v) for k, v in arrays.items()}, pt)
        with pytest.raises(PredictionFileError) as ea:
            read_predictions(npz, **kwargs)
        with pytest.raises(PredictionFileError) as eb:
            read_predictions(pt, **kwargs)
        assert str(ea.value).replace(str(npz), "F") == str(eb.value).replace(str(pt), "F")


@needs_torch
def test_pt_logits_dict_gives_softmax(tmp_path: Path) -> None:
    f = _pt(tmp_path / "z.pth", {"logits": torch.tensor(Z3), "labels": torch.tensor(Y3)})
    pf = read_predictions(f)
    assert pf.kind == "logits" and pf.kind_basis == "name"
    np.testing.assert_allclose(pf.check().probs, P3, atol=1e-12)
    assert cp.nll(pf.check(), None) == pytest.approx(
        -np.mean(np.log(P3[np.arange(4), Y3])), rel=1e-12
    )


@pytest.mark.parametrize("container", [tuple, list])
@needs_torch
def test_pt_scores_labels_pair(tmp_path: Path, container: type) -> None:
    f = _pt(tmp_path / "pair.pt", container([torch.tensor(P3), torch.tensor(Y3)]))
    pf = read_predictions(f)
    assert pf.kind == "probs" and pf.kind_basis == "values"
    np.testing.assert_array_equal(pf.probs, P3)
    np.testing.assert_array_equal(pf.labels, Y3)
    assert "the scores tensor (4, 3) detected as probabilities" in pf.note
    assert pf.note.endswith("; labels from the second tensor")
    # logits in a pair are detected too
    g = _pt(tmp_path / "zpair.pt", container([torch.tensor(Z3), torch.tensor(Y3)]))
    assert read_predictions(g).kind == "logits"
    # a labels file replaces the second tensor
    lp = tmp_path / "y.npy"
    np.save(lp, np.array([1, 1, 1, 1]))
    np.testing.assert_array_equal(read_predictions(f, labels_path=lp).labels, [1, 1, 1, 1])


@needs_torch
def test_pt_pair_length_mismatch(tmp_path: Path) -> None:
    f = _pt(tmp_path / "pair.pt", (torch.tensor(P3), torch.tensor(Y3[:3])))
    with pytest.raises(PredictionFileError, match="3 labels for 4 rows of predictions"):
        read_predictions(f)


@pytest.mark.parametrize("labels_format", ["npy", "pt", "pt_dict", "txt"])
@needs_torch
def test_pt_tensor_with_labels_file(tmp_path: Path, labels_format: str) -> None:
    f = _pt(tmp_path / "probs.pt", torch.tensor(P3, dtype=torch.float32))
    if labels_format == "npy":
        lp = tmp_path / "y.npy"
        np.save(lp, Y3)
    elif labels_format == "pt":
        lp = _pt(tmp_path / "y.pt", torch.tensor(Y3))
    elif labels_format == "pt_dict":
        lp = _pt(tmp_path / "y.pt", {"ids": torch.arange(4), "targets": torch.tensor(Y3)})
    else:
        lp = tmp_path / "y.txt"
        lp.write_text("0\n2\n1\n1\n")
    pf = read_predictions(f, labels_path=lp)
    assert pf.kind == "probs" and pf.kind_basis == "values"
    assert pf.probs.dtype == np.float32
    np.testing.assert_array_equal(pf.probs, P3.astype(np.float32))
    np.testing.assert_array_equal(pf.labels, Y3)
    assert str(lp) in pf.source
    assert pf.detected


@needs_torch
def test_pt_tensor_without_labels(tmp_path: Path) -> None:
    pf = read_predictions(_pt(tmp_path / "p.pt", torch.tensor(P3)))
    assert pf.labels is None
    with pytest.raises(PredictionFileError, match=r"holds no labels.*--labels FILE"):
        pf.check()


@needs_torch
def test_pt_tensor_conversions(tmp_path: Path) -> None:
    # requires_grad, bfloat16 (widened exactly to float32), float16 kept, bool labels
    t = torch.tensor(Z3, dtype=torch.float32, requires_grad=True)
    pf = read_predictions(_pt(tmp_path / "g.pt", {"logits": t, "labels": torch.tensor(Y3)}))
    np.testing.assert_array_equal(pf.logits, Z3.astype(np.float32))
    b = torch.tensor([[0.75, 0.25], [0.5, 0.5]], dtype=torch.bfloat16)  # exact in bfloat16
    pf = read_predictions(_pt(tmp_path / "b.pt", (b, torch.tensor([True, False]))))
    assert pf.probs.dtype == np.float32 and pf.kind == "probs"
    np.testing.assert_array_equal(pf.probs, [[0.75, 0.25], [0.5, 0.5]])
    np.testing.assert_array_equal(pf.check().labels, [1, 0])
    h = torch.tensor([[0.75, 0.25]], dtype=torch.float16)
    assert read_predictions(_pt(tmp_path / "h.pt", h)).probs.dtype == np.float16


@needs_torch
def test_pt_bfloat16_detection_uses_its_own_precision(tmp_path: Path) -> None:
    # softmax in bfloat16: rows sum to 1 only within bfloat16 rounding (~1e-2), which
    # is within (log2(10) + 2) * 2**-7 but far outside float32 precision
    z = torch.linspace(-3, 3, 50).reshape(5, 10)
    p = torch.softmax(z, dim=1).to(torch.bfloat16)
    sums = p.float().sum(dim=1)
    assert float((sums - 1).abs().max()) > 1e-4  # the test is meaningful
    pf = read_predictions(_pt(tmp_path / "b.pt", p))
    assert pf.kind == "probs" and pf.kind_basis == "values"


@needs_torch
def test_pt_wrong_contents(tmp_path: Path) -> None:
    cases: list[tuple[object, str]] = [
        (3.5, r"holds a float; expected a tensor of predictions, a dict of tensors"),
        ("hello", r"holds a str; expected"),
        (None, r"holds a NoneType; expected"),
        (
            [torch.zeros(2), torch.zeros(2), torch.zeros(2)],
            r"holds a list of 3 items \(tensor \(2,\), tensor \(2,\), tensor \(2,\)\); expected",
        ),
        ((torch.zeros(2), [0, 1]), r"holds a tuple of 2 items \(tensor \(2,\), list\)"),
        ([torch.zeros(2)], r"holds a list of 1 items"),
        ({1: torch.zeros(2)}, r"keys are not all strings"),
    ]
    for i, (obj, pattern) in enumerate(cases):
        f = _pt(tmp_path / f"w{i}.pt", obj)
        with pytest.raises(PredictionFileError, match=pattern) as exc:
            read_predictions(f)
        assert str(f) in str(exc.value)


@needs_torch
def test_pt_dict_entry_not_a_tensor(tmp_path: Path) -> None:
    f = _pt(tmp_path / "d.pt", {"probs": P3.tolist(), "labels": torch.tensor(Y3)})
    with pytest.raises(
        PredictionFileError,
        match=r"entry 'probs' is a list of 4 items \(list, list, list, list\), not a tensor; store",
    ):
        read_predictions(f)
    f = _pt(tmp_path / "e.pt", {"probs": {"inner": torch.tensor(P3)}})
    with pytest.raises(PredictionFileError, match=r"entry 'probs' is a dict with keys 'inner'"):
        read_predictions(f)


@needs_torch
def test_pt_bad_dtypes_and_shapes(tmp_path: Path) -> None:
    with pytest.raises(PredictionFileError, match=r"dtype torch.complex64; store real numbers"):
        read_predictions(_pt(tmp_path / "c.pt", torch.zeros(3, 2, dtype=torch.complex64)))
    sparse = torch.tensor(P3).to_sparse()
    with pytest.raises(PredictionFileError, match=r"sparse_coo tensor; store a dense tensor"):
        read_predictions(_pt(tmp_path / "s.pt", {"probs": sparse, "labels": torch.tensor(Y3)}))
    with pytest.raises(PredictionFileError, match=r"shape \(2, 2, 2\); expected \(n, k\)"):
        read_predictions(_pt(tmp_path / "3d.pt", torch.ones(2, 2, 2) / 2))
    with pytest.raises(PredictionFileError, match=r"shape \(2, 2, 2\); expected \(n, k\)"):
        read_predictions(_pt(tmp_path / "3dd.pt", {"probs": torch.ones(2, 2, 2) / 2}))
    with pytest.raises(PredictionFileError, match="a scalar for 4 rows"):
        read_predictions(_pt(tmp_path / "l0.pt", {"probs": torch.tensor(P3), "y": torch.tensor(1)}))


@needs_torch
def test_pt_keys_need_a_dict(tmp_path: Path) -> None:
    f = _pt(tmp_path / "t.pt", torch.tensor(P3))
    with pytest.raises(PredictionFileError, match=r"name entries of a dict; .* a tensor of shape"):
        read_predictions(f, probs_key="probs")


class _Evil:
    """Unpickling this creates a file: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("how", ["top", "in_dict", "labels_file", "legacy_format"])
@needs_torch
def test_pt_malicious_pickle_is_refused_without_running(tmp_path: Path, how: str) -> None:
    marker = tmp_path / "PWNED"
    f = tmp_path / "evil.pt"
    if how == "top":
        torch.save(_Evil(marker), f)
    elif how in ("in_dict", "labels_file"):
        torch.save({"probs": torch.tensor(P3), "labels": _Evil(marker)}, f)
    else:
        torch.save(_Evil(marker), f, _use_new_zipfile_serialization=False)
    with pytest.raises(PredictionFileError) as exc:
        if how == "labels_file":
            np.save(tmp_path / "p.npy", P3)
            read_predictions(tmp_path / "p.npy", labels_path=f)
        else:
            read_predictions(f)
    msg = str(exc.value)
    assert str(f) in msg and "was refused" in msg and "calipers never unpickles files" in msg
    assert "weights_only=True" in msg and "weights_only=False" not in msg
    assert not marker.exists()
    # the file is live: its pickle calls open() on the marker path (read as bytes,
    # never unpickled; a zip-format .pt keeps the pickle in a data.pkl member)
    raw = f.read_bytes()
    if zipfile.is_zipfile(f):
        with zipfile.ZipFile(f) as zf:
            raw = b"".join(zf.read(m) for m in zf.namelist() if m.endswith(".pkl"))
    assert str(marker).encode() in raw and b"open" in raw


@needs_torch
def test_pt_does_not_use_the_stock_unpickler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = _pt(tmp_path / "ok.pt", {"probs": torch.tensor(P3), "labels": torch.tensor(Y3)})

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the unrestricted pickle machinery was used")

    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "Unpickler", forbidden)
    np.testing.assert_array_equal(read_predictions(f).probs, P3)


@needs_torch
def test_pt_numpy_inside_is_refused(tmp_path: Path) -> None:
    # numpy arrays are pickled objects to torch.load(weights_only=True): refused
    f = _pt(tmp_path / "np.pt", {"probs": P3, "labels": Y3})
    with pytest.raises(PredictionFileError, match=r"was refused: .*Unsupported global"):
        read_predictions(f)


@needs_torch
def test_pt_damaged_missing_and_directory(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"PK\x03\x04 not a zip archive at all")
    with pytest.raises(PredictionFileError, match=str(junk)):
        read_predictions(junk)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(PredictionFileError, match=r"is damaged or not a PyTorch file"):
        read_predictions(empty)
    with pytest.raises(PredictionFileError, match="does not exist"):
        read_predictions(tmp_path / "nope.pth")
    d = tmp_path / "dir.pt"
    d.mkdir()
    with pytest.raises(PredictionFileError, match="is a directory"):
        read_predictions(d)


@needs_torch
def test_pt_labels_file_errors(tmp_path: Path) -> None:
    np.save(tmp_path / "p.npy", P3)
    lp = _pt(tmp_path / "y.pt", (torch.tensor(Y3), torch.tensor(Y3)))
    with pytest.raises(PredictionFileError, match=r"labels file .* holds a tuple of 2 items"):
        read_predictions(tmp_path / "p.npy", labels_path=lp)
    lp = _pt(tmp_path / "y2.pt", {"a": torch.tensor(Y3), "b": torch.tensor(Y3)})
    with pytest.raises(PredictionFileError, match="name the labels array"):
        read_predictions(tmp_path / "p.npy", labels_path=lp)
    pf = read_predictions(tmp_path / "p.npy", labels_path=lp, labels_key="b")
    np.testing.assert_array_equal(pf.labels, Y3)
    assert "entry 'b'" in pf.note


@needs_torch
def test_pt_without_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = _pt(tmp_path / "p.pt", torch.tensor(P3))
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails
    with pytest.raises(PredictionFileError, match=r"needs PyTorch: pip install torch"):
        read_predictions(f)


# =============================================================================== detection


@needs_torch
def test_detection_rules_by_hand(tmp_path: Path) -> None:
    """The documented rules (the recalibrators' rule) on small arrays whose answer is evident."""
    cases: list[tuple[list[Any], str]] = [
        ([[0.5, 0.5], [1.0, 0.0]], "probs"),  # rows on the simplex
        ([[0.5, 0.5 + 5e-5]], "probs"),  # within the 1e-4 default tolerance
        ([0.2, 0.9, 1.0, 0.0], "probs"),  # 1-D in [0, 1]: P(y = 1)
        ([[2.0, -1.5], [0.3, -0.7]], "logits"),  # below -0.5, rows not summing to 1
        ([0.2, -3.0], "logits"),  # 1-D with a value below -0.5
    ]
    for i, (values, want) in enumerate(cases):
        f = _pt(tmp_path / f"d{i}.pt", torch.tensor(values, dtype=torch.float64))
        pf = read_predictions(f)
        assert (pf.kind, pf.kind_basis) == (want, "values"), values
        word = "probabilities" if want == "probs" else "logits"
        assert f"detected as {word} from the values" in pf.note


@needs_torch
def test_detection_messages(tmp_path: Path) -> None:
    pf = read_predictions(_pt(tmp_path / "a.pt", torch.tensor([[0.5, 0.5], [0.25, 0.75]])))
    assert pf.note == (
        "one (2, 2) tensor detected as probabilities from the values: every row lies on the "
        "probability simplex (within 0.0001); pass logits=True (--logits) if they are logits"
    )
    pf = read_predictions(_pt(tmp_path / "b.pt", torch.tensor([[0.5, 0.5], [0.25, -1.5]])))
    assert pf.note == (
        "one (2, 2) tensor detected as logits from the values: row 1 sums to -1.25, not 1, "
        "and an entry is -1.5; no probability is negative; pass logits=False (--probs) if "
        "they are probabilities"
    )


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        (
            [[0.5, 0.5], [0.25, 0.25]],
            r"every entry lies in \[0, 1\], but row 1 sums to 0\.5, not 1",
        ),
        ([[0.5, 0.5 + 2e-4]], r"row 0 sums to 1\.0002, not 1"),
        ([[0.5, float("nan")]], r"scores must be finite; entry \(0, 1\) is nan"),
        ([0.5, float("nan")], r"value 1 is nan"),
        ([[0.5, float("inf")]], r"entry \(0, 1\) is inf"),
        # probabilities scaled by 1.01 or given as percentages are not read as logits
        ([[0.5, 1.5]], r"every entry is >= 0 as probabilities are, but row 0 sums to 2"),
        ([0.2, 3.0], r"value 1 is 3\.0, outside \[0, 1\], but no value is below -0\.5"),
        ([[0.1, -0.2], [0.3, 0.3]], r"negative, but not below -0\.5"),
    ],
)
@needs_torch
def test_detection_ambiguous_is_an_error(tmp_path: Path, values: list[Any], reason: str) -> None:
    f = _pt(tmp_path / "amb.pt", torch.tensor(values, dtype=torch.float64))
    with pytest.raises(PredictionFileError) as exc:
        read_predictions(f)
    msg = str(exc.value)
    assert "cannot tell whether the" in msg and "holds probabilities or logits" in msg
    assert "logits=True or logits=False (on the command line --logits or --probs)" in msg
    assert str(f) in msg
    assert re.search(reason, msg), msg
    # an explicit flag wins, and then the validation layer judges the values
    assert read_predictions(f, logits=False).kind_basis == "argument"
    assert read_predictions(f, logits=True).kind == "logits"


@needs_torch
def test_explicit_flag_beats_detection(tmp_path: Path) -> None:
    f = _pt(tmp_path / "p.pt", (torch.tensor(P3), torch.tensor(Y3)))
    pf = read_predictions(f, logits=True)  # probabilities read as logits on request
    assert pf.kind == "logits" and pf.kind_basis == "argument"
    assert pf.note.startswith("the scores tensor (4, 3) given as logits")
    pf = read_predictions(_pt(tmp_path / "z.pt", torch.tensor(Z3)), logits=False)
    assert pf.kind == "probs" and pf.kind_basis == "argument"


@needs_torch
def test_unnormalised_probs_need_the_flag(tmp_path: Path) -> None:
    raw = P3 * np.array([[2.0], [1.0], [0.5], [1.0]]) / 2  # rows sum to 1, .5, .25, .5
    f = _pt(tmp_path / "u.pt", (torch.tensor(raw), torch.tensor(Y3)))
    with pytest.raises(PredictionFileError, match="cannot tell"):
        read_predictions(f)
    P = read_predictions(f, logits=False).check(renormalize=True)
    np.testing.assert_allclose(P.probs, P3, rtol=1e-15)


def test_kind_basis_of_the_older_formats(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", probs=P3, labels=Y3)
    assert read_predictions(tmp_path / "a.npz").kind_basis == "name"
    assert read_predictions(tmp_path / "a.npz", logits=False).kind_basis == "argument"
    assert read_predictions(tmp_path / "a.npz", probs_key="probs").kind_basis == "argument"
    np.save(tmp_path / "a.npy", Z3)  # logits in an .npy: the documented default stays probs
    pf = read_predictions(tmp_path / "a.npy")
    assert (pf.kind, pf.kind_basis) == ("probs", "default")
    assert read_predictions(tmp_path / "a.npy", logits=True).kind_basis == "argument"
    (tmp_path / "a.csv").write_text("label,p0,p1\n0,0.5,0.5\n")
    assert read_predictions(tmp_path / "a.csv").kind_basis == "default"
    (tmp_path / "b.csv").write_text("label,logit_0,logit_1\n0,0.5,0.5\n")
    assert read_predictions(tmp_path / "b.csv").kind_basis == "name"
    assert read_predictions(tmp_path / "b.csv", logits=True).kind_basis == "argument"


def test_labels_file_rejects_infinite_label(tmp_path: Path) -> None:
    np.save(tmp_path / "p.npy", P3)
    (tmp_path / "y.txt").write_text("0\n1\ninf\n1\n")
    with pytest.raises(PredictionFileError, match=r"entry 2: label 'inf' is not a class index"):
        read_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.txt")


# =============================================================================== .parquet


def _parquet(path: Path, columns: dict[str, Any], **types: Any) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    arrays = {
        name: pa.array(list(values), type=types.get(name)) for name, values in columns.items()
    }
    pq.write_table(pa.table(arrays), path)
    return path


def _column_dict(names: list[str], rows: list[list[Any]]) -> dict[str, list[Any]]:
    return {n: [r[j] for r in rows] for j, n in enumerate(names)}


def test_parquet_without_pyarrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "p.parquet"
    f.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    with pytest.raises(PredictionFileError) as exc:
        read_predictions(f)
    assert str(exc.value) == f"'{f}': reading .parquet needs pyarrow: pip install pyarrow"
    np.save(tmp_path / "p.npy", P3)
    with pytest.raises(PredictionFileError, match="reading .parquet needs pyarrow"):
        read_predictions(tmp_path / "p.npy", labels_path=f)


def test_parquet_old_pyarrow_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pa = pytest.importorskip("pyarrow")
    f = _parquet(tmp_path / "p.parquet", {"label": [0], "p0": [0.5], "p1": [0.5]})
    monkeypatch.setattr(pa, "__version__", "13.0.0")
    with pytest.raises(PredictionFileError, match=r"CVE-2023-47248.*pyarrow>=14\.0\.1"):
        read_predictions(f)


def test_parquet_columns_round_trip(tmp_path: Path) -> None:
    cols = {"label": Y3.tolist(), **{f"p{j}": P3[:, j].tolist() for j in range(3)}}
    pf = read_predictions(_parquet(tmp_path / "p.parquet", cols))
    assert pf.kind == "probs" and pf.kind_basis == "default"
    np.testing.assert_array_equal(pf.probs, P3)
    np.testing.assert_array_equal(pf.labels, Y3)
    assert pf.labels.dtype == np.int64 and pf.probs.dtype == np.float64
    assert pf.note == "probs from columns p0..p2 by class index; labels from column 'label'"
    assert cp.ece(pf.check(), None) == cp.ece(P3, Y3)


@pytest.mark.parametrize(
    ("names", "rows"),
    [
        (["p1", "y", "p0"], [[0.25, 0, 0.75], [0.6, 1, 0.4]]),  # ordered by index
        (["cat", "dog", "label"], [[0.9, 0.1, "cat"], [0.3, 0.7, "dog"], [0.5, 0.5, "1"]]),
        (["label", "logit_0", "logit_1"], [[0, 2.0, -1.0], [1, 0.5, 3.0]]),
        (["y", "p"], [[1, 0.9], [0, 0.2], [0, 0.6]]),  # binary P(y = 1)
        (["label", "logit"], [[1, 2.0], [0, -1.0]]),  # binary logit
        (["0", "1", "label"], [[0.3, 0.7, 1], [0.6, 0.4, 0]]),  # pandas-style names
        (["p0", "p1"], [[0.5, 0.5], [0.2, 0.8]]),  # no label column
        (["label", "p0", "p1"], [[0.0, 0.5, 0.5], [1.0, 0.2, 0.8]]),  # float labels
    ],
)
def test_parquet_columns_mirror_csv(
    tmp_path: Path, names: list[str], rows: list[list[Any]]
) -> None:
    """The same table as .csv and .parquet reads to the same arrays, kind and note."""
    c = tmp_path / "x.csv"
    c.write_text(_csv_text(names, rows))
    q = _parquet(tmp_path / "x.parquet", _column_dict(names, rows))
    a, b = read_predictions(c), read_predictions(q)
    assert (a.kind, a.kind_basis, a.note) == (b.kind, b.kind_basis, b.note)
    np.testing.assert_array_equal(a.array, b.array)
    assert a.array.dtype == b.array.dtype == np.float64
    if a.labels is None:
        assert b.labels is None
    else:
        np.testing.assert_array_equal(a.labels, b.labels)
        assert b.labels.dtype == np.int64


@pytest.mark.parametrize(
    ("names", "rows", "kwargs"),
    [
        (["label", "y", "p0", "p1"], [[0, 0, 0.5, 0.5]], {}),
        (["label", "logit_0", "p1"], [[0, 0.5, 0.5]], {}),
        (["label", "p1", "p2"], [[0, 0.5, 0.5]], {}),
        (["label"], [[0]], {}),
        (["label", "logit_0", "logit_1"], [[0, 0.5, 0.5]], {"logits": False}),
        (["label", "p0", "p1"], [[0.5, 0.5, 0.5]], {}),  # non-integer label
        (["cat", "dog", "label"], [[0.9, 0.1, "cat"], [0.3, 0.7, "bird"]], {}),
    ],
)
def test_parquet_column_errors_mirror_csv(
    tmp_path: Path, names: list[str], rows: list[list[Any]], kwargs: dict[str, Any]
) -> None:
    c = tmp_path / "x.csv"
    c.write_text(_csv_text(names, rows))
    q = _parquet(tmp_path / "x.parquet", _column_dict(names, rows))
    with pytest.raises(PredictionFileError) as ea:
        read_predictions(c, **kwargs)
    with pytest.raises(PredictionFileError) as eb:
        read_predictions(q, **kwargs)
    # identical messages, except that a CSV counts text lines where Parquet counts data rows
    want = str(ea.value).replace(str(c), "F").replace("line 3", "data row 2")
    assert want == str(eb.value).replace(str(q), "F")


def test_parquet_duplicate_columns(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    t = pa.Table.from_arrays(
        [pa.array([0]), pa.array([0.5]), pa.array([0.5])], names=["label", "p0", "p0"]
    )
    pq.write_table(t, tmp_path / "d.parquet")
    with pytest.raises(PredictionFileError, match=r"duplicate column names \['p0'\]"):
        read_predictions(tmp_path / "d.parquet")


def test_parquet_column_type_errors(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    f = _parquet(tmp_path / "s.parquet", {"label": [0, 1], "p0": ["a", "b"], "p1": [0.5, 0.5]})
    with pytest.raises(
        PredictionFileError, match=r"column 'p0' has type string; probability columns must hold"
    ):
        read_predictions(f)
    f = _parquet(tmp_path / "c.parquet", {"class": ["a", "b"], "p0": [0.5, 0.5]})
    with pytest.raises(PredictionFileError, match=r"label column must be named one of labels"):
        read_predictions(f)
    f = _parquet(
        tmp_path / "n.parquet", {"label": [0, 1, 1], "p0": [0.5, None, 0.2], "p1": [0.5, 0.5, 0.8]}
    )
    with pytest.raises(
        PredictionFileError,
        match=r"column 'p0' has 1 missing values \(null\), the first in data row 2",
    ):
        read_predictions(f)
    f = _parquet(tmp_path / "ln.parquet", {"label": [0, None], "p0": [0.5, 0.5], "p1": [0.5, 0.5]})
    with pytest.raises(PredictionFileError, match=r"column 'label' has 1 missing values"):
        read_predictions(f)
    f = _parquet(
        tmp_path / "ts.parquet",
        {"label": [0, 1], "p0": [0.5, 0.5], "p1": [0.5, 0.5]},
        label=pa.timestamp("s"),
    )
    with pytest.raises(
        PredictionFileError, match=r"column 'label' has type timestamp\[\w+\]; labels"
    ):
        read_predictions(f)


def test_parquet_dictionary_and_int32_columns(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    labels = pa.array(["dog", "cat", "dog"]).dictionary_encode()
    t = pa.table(
        {
            "cat": pa.array([0.1, 0.8, 0.4], type=pa.float32()),
            "dog": pa.array([0.9, 0.2, 0.6], type=pa.float32()),
            "label": labels,
            "target2": pa.array([1, 0, 1], type=pa.int32()),
        }
    )
    pq.write_table(t.drop_columns(["target2"]), tmp_path / "d.parquet")
    pf = read_predictions(tmp_path / "d.parquet")
    np.testing.assert_array_equal(pf.labels, [1, 0, 1])
    # float32 columns are read as float64, as the CSV reader does (exact widening)
    np.testing.assert_array_equal(
        pf.probs, np.array([[0.1, 0.9], [0.8, 0.2], [0.4, 0.6]], dtype=np.float32).astype(float)
    )


def test_parquet_pandas_index_is_ignored(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    df = pd.DataFrame({"label": Y3, "p0": P3[:, 0], "p1": P3[:, 1], "p2": P3[:, 2]})
    df.index = pd.Index([10, 11, 12, 13], name="sample_id")
    df.to_parquet(tmp_path / "pd.parquet")  # writes the index as a column
    pf = read_predictions(tmp_path / "pd.parquet")
    np.testing.assert_array_equal(pf.probs, P3)
    np.testing.assert_array_equal(pf.labels, Y3)
    assert "sample_id" not in pf.note


def test_parquet_list_column(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    # a recognised name decides the kind
    f = _parquet(tmp_path / "l.parquet", {"probs": P3.tolist(), "label": Y3.tolist()})
    pf = read_predictions(f)
    assert (pf.kind, pf.kind_basis) == ("probs", "name")
    np.testing.assert_array_equal(pf.probs, P3)
    np.testing.assert_array_equal(pf.labels, Y3)
    assert pf.note == "array 'probs' read as probs, labels from 'label'"
    f = _parquet(tmp_path / "z.parquet", {"logits": Z3.tolist(), "y": Y3.tolist()})
    pf = read_predictions(f)
    assert (pf.kind, pf.kind_basis) == ("logits", "name")
    np.testing.assert_allclose(pf.check().probs, P3, atol=1e-12)
    # fixed-size lists and float32 values (kept as stored, like .npz)
    f = _parquet(
        tmp_path / "fs.parquet",
        {"output": P3.astype(np.float32).tolist(), "label": Y3.tolist()},
        output=pa.list_(pa.float32(), 3),
    )
    pf = read_predictions(f)
    assert pf.probs.dtype == np.float32 and pf.probs.shape == (4, 3)
    np.testing.assert_array_equal(pf.probs, P3.astype(np.float32))


def test_parquet_unnamed_list_column_is_detected(tmp_path: Path) -> None:
    f = _parquet(tmp_path / "o.parquet", {"output": Z3.tolist(), "label": Y3.tolist()})
    pf = read_predictions(f)
    assert (pf.kind, pf.kind_basis) == ("logits", "values")
    assert pf.note.startswith("list column 'output' (4 x 3) detected as logits from the values")
    assert pf.note.endswith("; labels from 'label'")
    f = _parquet(tmp_path / "q.parquet", {"output": P3.tolist()})
    pf = read_predictions(f)
    assert (pf.kind, pf.kind_basis) == ("probs", "values") and pf.labels is None
    assert "no labels array" in pf.note
    f = _parquet(tmp_path / "r.parquet", {"output": (P3 / 2).tolist()})
    with pytest.raises(PredictionFileError, match=r"cannot tell whether the \(4, 3\) array"):
        read_predictions(f)
    assert read_predictions(f, logits=False).kind_basis == "argument"
    # a 'logit...' name says logits, as in the CSV rules
    f = _parquet(tmp_path / "s.parquet", {"logit_vec": P3.tolist(), "label": Y3.tolist()})
    assert read_predictions(f).kind_basis == "name"
    assert read_predictions(f).kind == "logits"


def test_parquet_list_column_errors(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    f = _parquet(tmp_path / "r.parquet", {"probs": [[0.5, 0.5], [1.0]], "label": [0, 0]})
    with pytest.raises(
        PredictionFileError, match=r"data row 2 holds 1 values but data row 1 holds 2"
    ):
        read_predictions(f)
    f = _parquet(tmp_path / "n.parquet", {"probs": [[0.5, 0.5], None], "label": [0, 0]})
    with pytest.raises(PredictionFileError, match=r"column 'probs' has 1 missing values"):
        read_predictions(f)
    f = _parquet(tmp_path / "v.parquet", {"probs": [[0.5, 0.5], [0.5, None]], "label": [0, 0]})
    with pytest.raises(PredictionFileError, match=r"data row 2: value 1 is missing"):
        read_predictions(f)
    f = _parquet(tmp_path / "s.parquet", {"probs": [["a", "b"]], "label": [0]})
    with pytest.raises(PredictionFileError, match=r"holds lists of string; it must hold lists"):
        read_predictions(f)
    f = _parquet(tmp_path / "nn.parquet", {"probs": [[[0.5], [0.5]]], "label": [0]})
    with pytest.raises(PredictionFileError, match=r"holds lists of list<\w+: double>"):
        read_predictions(f)
    f = _parquet(
        tmp_path / "x.parquet", {"probs": P3.tolist(), "label": Y3.tolist(), "id": [1, 2, 3, 4]}
    )
    with pytest.raises(PredictionFileError, match=r"the column\(s\) \['id'\], which are neither"):
        read_predictions(f)
    f = _parquet(
        tmp_path / "two.parquet",
        {"probs": P3.tolist(), "logits": Z3.tolist(), "label": Y3.tolist()},
    )
    with pytest.raises(PredictionFileError, match=r"holds both probabilities \('probs'\) and"):
        read_predictions(f)
    assert read_predictions(f, logits_key="logits").kind == "logits"
    assert read_predictions(f, probs_key="probs").kind == "probs"
    f = _parquet(tmp_path / "lab.parquet", {"probs": P3.tolist(), "label": [0.0, 2.0, 1.5, 1.0]})
    with pytest.raises(PredictionFileError, match=r"data row 3, column 'label': label 1.5"):
        read_predictions(f)
    f = _parquet(tmp_path / "e.parquet", {"probs": [], "label": []}, probs=pa.list_(pa.float64()))
    with pytest.raises(PredictionFileError, match="no data rows"):
        read_predictions(f)


def test_parquet_keys_for_the_column_layout_are_refused(tmp_path: Path) -> None:
    f = _parquet(tmp_path / "c.parquet", {"label": [0], "p0": [0.5], "p1": [0.5]})
    with pytest.raises(PredictionFileError, match=r"probs_key/logits_key name a list column"):
        read_predictions(f, probs_key="p0")


def test_parquet_labels_files(tmp_path: Path) -> None:
    np.save(tmp_path / "p.npy", P3)
    lp = _parquet(tmp_path / "y.parquet", {"whatever": Y3.tolist()})
    pf = read_predictions(tmp_path / "p.npy", labels_path=lp)
    np.testing.assert_array_equal(pf.labels, Y3)
    assert "column 'whatever'" in pf.note
    lp = _parquet(tmp_path / "y2.parquet", {"id": [5, 6, 7, 8], "target": Y3.tolist()})
    np.testing.assert_array_equal(read_predictions(tmp_path / "p.npy", labels_path=lp).labels, Y3)
    lp = _parquet(tmp_path / "y3.parquet", {"a": Y3.tolist(), "b": Y3.tolist()})
    with pytest.raises(PredictionFileError, match="name the labels array"):
        read_predictions(tmp_path / "p.npy", labels_path=lp)
    lp = _parquet(tmp_path / "y4.parquet", {"label": ["0", "2", "x", "1"]})
    with pytest.raises(PredictionFileError, match=r"data row 3: label 'x' is not a class index"):
        read_predictions(tmp_path / "p.npy", labels_path=lp)
    # a parquet prediction file with a separate labels file
    q = _parquet(tmp_path / "q.parquet", {f"p{j}": P3[:, j].tolist() for j in range(3)})
    pf = read_predictions(q, labels_path=tmp_path / "y.parquet")
    np.testing.assert_array_equal(pf.labels, Y3)


def test_parquet_damaged_missing_and_directory(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"this is not parquet")
    with pytest.raises(PredictionFileError, match=r"is damaged or not a Parquet file"):
        read_predictions(junk)
    with pytest.raises(PredictionFileError, match="does not exist"):
        read_predictions(tmp_path / "nope.parquet")
    d = tmp_path / "dir.parquet"
    d.mkdir()
    with pytest.raises(PredictionFileError, match="is a directory"):
        read_predictions(d)


@pytest.mark.parametrize("seed", range(6))
@needs_torch
def test_round_trip_random(tmp_path: Path, seed: int) -> None:
    """Random predictions survive .pt and .parquet exactly and give the metric of the arrays."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 30)), int(rng.integers(2, 7))
    probs = rng.dirichlet(np.ones(k), size=n)
    labels = rng.integers(0, k, size=n)
    want = cp.ece(probs, labels)
    files = [
        _pt(tmp_path / "a.pt", {"probs": torch.tensor(probs), "labels": torch.tensor(labels)}),
        _pt(tmp_path / "b.pt", (torch.tensor(probs), torch.tensor(labels))),
    ]
    if sys.modules.get("pyarrow") is not None or _has("pyarrow"):
        files.append(
            _parquet(
                tmp_path / "c.parquet",
                {"label": labels.tolist(), **{f"p{j}": probs[:, j].tolist() for j in range(k)}},
            )
        )
        files.append(
            _parquet(tmp_path / "d.parquet", {"probs": probs.tolist(), "label": labels.tolist()})
        )
    for f in files:
        pf = read_predictions(f)
        np.testing.assert_array_equal(pf.probs, probs)
        np.testing.assert_array_equal(pf.labels, labels)
        assert cp.ece(pf.check(), None) == want


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True
