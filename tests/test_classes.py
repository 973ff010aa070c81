"""``classes=``: labels as users have them, at every public entry point.

Every entry point that takes labels accepts ``classes`` (the class of each column of
``probs``, or a fitted scikit-learn classifier) and must give exactly what it gives for
the same rows labelled with column indices. The expected values are computed from the
integer labels, without ``classes``; the classes are given in an unsorted order
(``["dog", "cat", "emu"]``), so a mapping that sorted them, or ignored them, would
change the numbers.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.validation import CalibrationInputError
from entry_points import call, entry_points

pytest.importorskip("matplotlib")

N = 48
RNG = np.random.default_rng(7)
P3 = RNG.dirichlet(np.ones(3), N)
#: labels drawn from the predictions sharpened, so that every metric has something to measure
Y3 = np.array([RNG.choice(3, p=q) for q in P3**2 / (P3**2).sum(1, keepdims=True)])
C3 = np.array(["dog", "cat", "emu"])  # column 0 is "dog": not the sorted order
P1 = RNG.uniform(0.02, 0.98, N)
Y1 = (RNG.uniform(size=N) < P1**1.5).astype(np.int64)
C1 = np.array(["no", "yes"])  # [negative, positive]

ENTRY = entry_points()
NAMES = [name for name, _ in ENTRY]
FUNCS = dict(ENTRY)


# ----------------------------------------------------------------------------- comparing results


def _figure_numbers(fig: Any) -> list[Any]:
    """What a figure shows, as numbers and texts: geometry of every artist, every text.

    Axes titles are left out (with ``classes`` a class-wise panel is titled by its class);
    :func:`test_classwise_grid_titles_are_the_classes` checks them.
    """
    out: list[Any] = []
    for ax in fig.axes:
        for p in ax.patches:
            out.append(
                ("patch", p.get_gid(), p.get_patch_transform().transform(p.get_path().vertices))
            )
        for line in ax.lines:
            out.append(("line", line.get_gid(), np.asarray(line.get_xydata(), dtype=float)))
        for c in ax.collections:
            out.append(("collection", c.get_gid(), np.asarray(c.get_offsets(), dtype=float)))
            out.extend(("path", c.get_gid(), np.asarray(q.vertices)) for q in c.get_paths())
            out.append(("widths", np.asarray(c.get_linewidths(), dtype=float)))
        out.extend(("text", t.get_text()) for t in ax.texts)
        for a in ax.artists:  # the metrics notes: title-only legends
            title = getattr(a, "get_title", None)
            out.append(("note", title().get_text() if title else repr(a)))
        out.append(("ticks", [t.get_text() for t in ax.get_xticklabels()]))
        out.append(("labels", ax.get_xlabel(), ax.get_ylabel()))
    for legend in fig.legends:
        out.append(("legend", [t.get_text() for t in legend.get_texts()]))
    return out


def _numbers(r: Any) -> Any:
    """A result reduced to plain numbers, arrays, strings and containers of them."""
    from matplotlib.figure import Figure

    if isinstance(r, Figure):
        return _figure_numbers(r)
    if hasattr(r, "to_dict") and hasattr(r, "columns"):  # a pandas DataFrame
        return {str(c): np.asarray(r[c]) for c in r.columns}
    if dataclasses.is_dataclass(r) and not isinstance(r, type):
        return {f.name: _numbers(getattr(r, f.name)) for f in dataclasses.fields(r)}
    if isinstance(r, dict):
        return {k: _numbers(v) for k, v in r.items()}
    if getattr(type(r), "__slots__", ()) and type(r).__module__.startswith("calipers"):
        return {s: _numbers(getattr(r, s)) for s in type(r).__slots__}
    if isinstance(r, (list, tuple)):
        return [_numbers(v) for v in r]
    if isinstance(r, np.ndarray) and r.dtype.names:  # a record array
        return {n: np.asarray(r[n]) for n in r.dtype.names}
    if isinstance(r, (np.ndarray, np.generic, float, int, bool)):
        return np.asarray(r)
    return r


def _assert_same(got: Any, want: Any, where: str = "") -> None:
    """Exact equality (NaN equal to NaN) of two results reduced by :func:`_numbers`."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), where
        for k in want:
            _assert_same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, np.ndarray):
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=where, strict=True)
    elif callable(want):
        assert callable(got), where
    else:
        assert got == want, where


def _outcome(name: str, probs: Any, labels: Any, **kw: Any) -> tuple[str, Any]:
    """``("value", numbers)`` of the call, or ``("error", message)`` when it is refused."""
    try:
        return "value", _numbers(call(name, FUNCS[name], probs, labels, kw))
    except CalibrationInputError as exc:
        return "error", str(exc)


@functools.cache
def _expected(name: str, case: str) -> tuple[str, Any]:
    """The outcome with integer labels (column indices) and no ``classes``."""
    if case == "multiclass":
        return _outcome(name, P3, Y3)
    if case == "binary":
        return _outcome(name, P1, Y1)
    if case == "classifier-multiclass":
        return _outcome(name, *_classifier_data(3)[:2])
    return _outcome(name, *_classifier_data(2)[:2])


def _check(name: str, case: str, probs: Any, labels: Any, classes: Any) -> None:
    kind, want = _expected(name, case)
    got_kind, got = _outcome(name, probs, labels, classes=classes)
    if kind == "error":  # the entry point does not apply to this case: the same refusal
        assert got_kind == "error" and got == want, (name, got)
        return
    assert got_kind == "value", f"{name}: {got}"
    _assert_same(got, want, name)


def _applies(name: str, case: str) -> bool:
    return _expected(name, case)[0] == "value"


def test_every_entry_point_takes_classes() -> None:
    import inspect

    assert len(ENTRY) >= 45

    def takes(f: Any) -> bool:  # by name, or through **kwargs (ce_kl, ce_squared_l2)
        ps = inspect.signature(f).parameters
        return "classes" in ps or any(p.kind is p.VAR_KEYWORD for p in ps.values())

    assert [n for n, f in ENTRY if not takes(f)] == []


# ----------------------------------------------------------------------------- every entry point


@pytest.mark.parametrize("name", NAMES)
def test_string_labels_with_classes_give_the_integer_result_multiclass(name: str) -> None:
    assert _applies(name, "multiclass"), _expected(name, "multiclass")
    _check(name, "multiclass", P3, C3[Y3], list(C3))


@pytest.mark.parametrize("name", NAMES)
def test_string_labels_with_classes_give_the_integer_result_binary(name: str) -> None:
    _check(name, "binary", P1, C1[Y1], ["no", "yes"])


@pytest.mark.parametrize("name", NAMES)
def test_other_integers_as_classes(name: str) -> None:
    """Labels 1..3 with ``classes=[1, 2, 3]``: column j is class j + 1."""
    _check(name, "multiclass", P3, Y3 + 1, [1, 2, 3])


@pytest.mark.parametrize("name", NAMES)
def test_pandas_series_of_strings(name: str) -> None:
    pd = pytest.importorskip("pandas")
    _check(name, "multiclass", P3, pd.Series(C3[Y3], dtype=object), pd.Series(C3))


@functools.cache
def _classifier_data(k: int) -> tuple[np.ndarray, np.ndarray, Any, np.ndarray]:
    """``(probs, column-index labels, fitted classifier, string labels)`` of a model."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(11 + k)
    names = np.array(["no", "yes"]) if k == 2 else np.array(["emu", "cat", "dog"])
    X = rng.normal(size=(N, 2))
    logit = X @ rng.normal(size=(2, k)) * 1.5
    yi = np.argmax(logit + rng.gumbel(size=(N, k)), axis=1)
    y = names[yi]
    clf = LogisticRegression().fit(X, y)
    probs = clf.predict_proba(X)
    if k == 2:
        probs = probs[:, 1]  # P(y = clf.classes_[1])
    idx = np.searchsorted(clf.classes_, y)  # classes_ is sorted
    return probs, idx, clf, y


@pytest.mark.parametrize("name", NAMES)
def test_fitted_classifier_as_classes(name: str) -> None:
    pytest.importorskip("sklearn")
    probs, _, clf, y = _classifier_data(3)
    assert clf.classes_.tolist() == ["cat", "dog", "emu"]
    _check(name, "classifier-multiclass", probs, y, clf)


@pytest.mark.parametrize("name", NAMES)
def test_fitted_binary_classifier_as_classes(name: str) -> None:
    pytest.importorskip("sklearn")
    probs, _, clf, y = _classifier_data(2)
    _check(name, "classifier-binary", probs, y, clf)


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("name", NAMES)
def test_a_label_outside_classes_is_named(name: str) -> None:
    labels = C3[Y3].astype(object)
    labels[5] = "fox"
    with pytest.raises(CalibrationInputError, match=r"'fox' at row 5.*not one of classes"):
        call(name, FUNCS[name], P3, labels, {"classes": list(C3)})


@pytest.mark.parametrize("name", NAMES)
def test_classes_of_the_wrong_length_are_refused(name: str) -> None:
    with pytest.raises(CalibrationInputError, match=r"classes names 2 classes, but probs has 3"):
        call(name, FUNCS[name], P3, C3[Y3], {"classes": ["dog", "cat"]})
    with pytest.raises(CalibrationInputError, match=r"classes names 3 classes.*need 2"):
        call(name, FUNCS[name], P1, C1[Y1], {"classes": ["no", "yes", "maybe"]})


@pytest.mark.parametrize("name", NAMES)
def test_duplicate_classes_are_refused(name: str) -> None:
    with pytest.raises(
        CalibrationInputError, match=r"distinct; 'dog' appears at positions 0 and 2"
    ):
        call(name, FUNCS[name], P3, C3[Y3], {"classes": ["dog", "cat", "dog"]})


@pytest.mark.parametrize("name", NAMES)
def test_string_labels_without_classes_ask_for_them(name: str) -> None:
    with pytest.raises(CalibrationInputError, match=r"pass classes="):
        call(name, FUNCS[name], P3, C3[Y3], {})


# ----------------------------------------------------------------------------- other entry points


def test_pandas_string_and_category_dtypes() -> None:
    pd = pytest.importorskip("pandas")
    want = cp.ece(P3, Y3)
    for dtype in ("string", "category"):
        assert cp.ece(P3, pd.Series(C3[Y3], dtype=dtype), classes=C3) == want, dtype


def test_confidence_interval_maps_once_and_resamples_the_same_rows() -> None:
    want = cp.confidence_interval(cp.ece, P3, Y3, n_resamples=40, method="bca")
    got = cp.confidence_interval(cp.ece, P3, C3[Y3], classes=C3, n_resamples=40, method="bca")
    assert got == want
    want = cp.confidence_interval(cp.nll, P1, Y1, n_resamples=40)
    assert cp.confidence_interval(cp.nll, P1, C1[Y1], classes=C1, n_resamples=40) == want
    with pytest.raises(CalibrationInputError, match="not one of classes"):
        cp.confidence_interval(cp.ece, P3, C3[Y3], classes=["a", "b", "c"], n_resamples=40)
    P = cp.check_predictions(P3, Y3)
    with pytest.raises(CalibrationInputError, match="already a calipers.Predictions"):
        cp.confidence_interval(cp.ece, P, None, classes=C3, n_resamples=40)


def test_paired_confidence_interval_takes_classes() -> None:
    Q3 = (P3 + 0.1) / 1.3
    want = cp.paired_confidence_interval(cp.brier, P3, Q3, Y3, n_resamples=40)
    got = cp.paired_confidence_interval(cp.brier, P3, Q3, C3[Y3], classes=C3, n_resamples=40)
    assert got == want


def test_recalibration_improvement_takes_classes() -> None:
    Q3 = (P3 + 0.1) / 1.3
    want = cp.recalibration_improvement(P3, Q3, Y3)
    assert cp.recalibration_improvement(P3, Q3, C3[Y3], classes=C3) == want


def _report_numbers(rep: Any) -> list[Any]:
    return [(r.model, r.method, r.n, _numbers(r.metrics), r.flags) for r in rep.rows]


def test_report_takes_classes_for_every_model_and_its_calibration_split() -> None:
    half = N // 2
    kw = {"null_resamples": 20, "recalibrators": [cp.TemperatureScaling()]}
    want = cp.report(
        {"a": (P3[half:], Y3[half:]), "b": (P1[half:], Y1[half:])},
        calibration={"a": (P3[:half], Y3[:half]), "b": (P1[:half], Y1[:half])},
        **kw,
    )
    got = cp.report(
        {"a": (P3[half:], C3[Y3[half:]]), "b": (P1[half:], C1[Y1[half:]])},
        calibration={"a": (P3[:half], C3[Y3[:half]]), "b": (P1[:half], C1[Y1[:half]])},
        classes={"a": C3, "b": C1},
        **kw,
    )
    assert len(got.rows) == 4  # two models, each uncalibrated and temperature-scaled
    _assert_same_report(got, want)
    # one classes for every model
    one = cp.report({"a": (P3, C3[Y3])}, classes=C3, null_resamples=20)
    _assert_same_report(one, cp.report({"a": (P3, Y3)}, null_resamples=20))
    with pytest.raises(CalibrationInputError, match="pass classes="):
        cp.report({"a": (P3, C3[Y3])}, null_resamples=0)


def _assert_same_report(got: Any, want: Any) -> None:
    g, w = _report_numbers(got), _report_numbers(want)
    assert len(g) == len(w)
    for a, b in zip(g, w, strict=True):
        assert a[:3] == b[:3] and a[4] == b[4]
        _assert_same(a[3], b[3], f"{a[0]}/{a[1]}")


def test_classwise_grid_titles_are_the_classes() -> None:
    import matplotlib.pyplot as plt

    fig = cp.classwise_reliability_grid(P3, C3[Y3], classes=C3)
    assert [a.get_title() for a in fig.axes if a.get_visible()] == ["dog", "cat", "emu"]
    fig = cp.classwise_reliability_grid(P3, C3[Y3], classes=C3, panels=["emu", "dog"])
    assert [a.get_title() for a in fig.axes if a.get_visible()] == ["emu", "dog"]
    # the "emu" panel is column 2's: what the integer-labelled panel of column 2 shows
    emu = cp.classwise_reliability_grid(P3, C3[Y3], classes=C3, panels=["emu"])
    ref = cp.classwise_reliability_grid(P3, Y3, panels=[2])
    _assert_same(_figure_numbers(emu), _figure_numbers(ref))
    assert _figure_numbers(emu) != [] and ref.axes[0].get_title() == "class 2"
    with pytest.raises(CalibrationInputError, match=r"panels must name members of classes"):
        cp.classwise_reliability_grid(P3, C3[Y3], classes=C3, panels=["fox"])
    plt.close("all")


def test_integer_classes_are_not_read_as_column_indices() -> None:
    """``classes=[2, 0, 1]``: label 2 is column 0, not column 2."""
    perm = np.array([2, 0, 1])
    assert cp.brier(P3, perm[Y3], classes=perm) == cp.brier(P3, Y3)
    assert cp.brier(P3, perm[Y3]) != cp.brier(P3, Y3)  # without classes: other columns


def test_classes_are_kept_on_the_predictions() -> None:
    P = cp.check_predictions(P3, C3[Y3], classes=C3)
    assert P.classes is not None and P.classes.tolist() == C3.tolist()
    assert P.labels.tolist() == Y3.tolist()
