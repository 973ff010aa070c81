"""The estimator contract, checked for EVERY registered recalibrator.

At collection time every module of :mod:`calipers.recalibration` is imported
(so methods register themselves even before they are exported) and the tests
are parametrised over ``base._REGISTRY``. Each method is exercised on
synthetic multi-class logits and on binary ``(n,)`` logits; a method that does
not handle one of the two problems must say so with its own
``CalibrationInputError`` mentioning "binary" / "multiclass", and only then is
that half skipped.

Checked: outputs on the simplex; arg-max kept where ``accuracy_preserving`` is
declared (with exact ties in the input: lowest index on both sides);
distinct outputs where ``injective`` is declared; ``get_params`` /
``set_params``; JSON and file round-trips give identical predictions; clear
errors for unfitted use, a wrong number of classes and exact zeros given to a
logit method; integer ``sample_weight`` equals repeating rows.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from typing import Any

import numpy as np
import pytest

import calipers.recalibration as recal
from calipers.recalibration import _persistence, base
from calipers.validation import CalibrationInputError

# ----------------------------------------------------------------------------- registry

_IMPORT_ERRORS: dict[str, str] = {}
for _mod in pkgutil.iter_modules(recal.__path__):
    try:
        importlib.import_module(f"{recal.__name__}.{_mod.name}")
    except Exception as exc:  # reported by test_every_module_imports, not at collection
        _IMPORT_ERRORS[_mod.name] = f"{type(exc).__name__}: {exc}"

METHODS = sorted(
    name
    for name, cls in base._REGISTRY.items()
    if cls.__module__.startswith("calipers.recalibration")
)
KINDS = ["multiclass", "binary"]
K = 4


def test_every_module_imports() -> None:
    assert _IMPORT_ERRORS == {}


def test_registry_has_the_known_methods() -> None:
    expected = {"TemperatureScaling", "HistogramBinning", "IsotonicRegression", "MeanReplacement"}
    assert expected <= set(METHODS)


# ----------------------------------------------------------------------------- data


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _make(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Over-confident logits: labels drawn from the logits divided by 2."""
    rng = np.random.default_rng(seed)
    if kind == "binary":
        z = 2.5 * rng.standard_normal(n) + 0.3
        y = (rng.random(n) < 1 / (1 + np.exp(-z / 2))).astype(np.int64)
        return z, y
    z = 2.5 * rng.standard_normal((n, K)) + np.array([0.3, 0.0, -0.2, 0.1])
    p = _softmax(z / 2)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1), K - 1)
    return z, y


def _to_probs(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z)) if z.ndim == 1 else _softmax(z)


CAL = {kind: _make(kind, 400, 1) for kind in KINDS}
TEST = {kind: _make(kind, 200, 2)[0] for kind in KINDS}

_UNSUPPORTED = re.compile(r"binary|multi-?class|two classes|\(n,\)|\(n, ?k\)", re.IGNORECASE)


def _fresh(name: str) -> base.Recalibrator:
    return base._REGISTRY[name]()


_FITTED: dict[tuple[str, str], base.Recalibrator | str] = {}


def _fitted(name: str, kind: str) -> base.Recalibrator:
    """A fitted instance on the calibration logits, or skip when the method says it
    does not handle this kind of problem (cached per module run)."""
    key = (name, kind)
    if key not in _FITTED:
        rc = _fresh(name)
        z, y = CAL[kind]
        try:
            rc.fit(z, y, logits=True)
            _FITTED[key] = rc
        except CalibrationInputError as exc:
            if not _UNSUPPORTED.search(str(exc)):
                raise
            _FITTED[key] = f"{name} does not handle {kind} input: {exc}"
    got = _FITTED[key]
    if isinstance(got, str):
        pytest.skip(got)
    return got


_FITTED_PROBS: dict[tuple[str, str], base.Recalibrator] = {}


def _fitted_on_probs(name: str, kind: str) -> base.Recalibrator:
    """The same method fitted on the softmax / sigmoid probabilities (``logits=False``)."""
    _fitted(name, kind)
    key = (name, kind)
    if key not in _FITTED_PROBS:
        z, y = CAL[kind]
        _FITTED_PROBS[key] = _fresh(name).fit(_to_probs(z), y, logits=False)
    return _FITTED_PROBS[key]


def test_each_method_handles_some_problem() -> None:
    for name in METHODS:
        ok = []
        for kind in KINDS:
            try:
                _fitted(name, kind)
                ok.append(kind)
            except pytest.skip.Exception:
                pass
        assert ok, f"{name} fits neither multi-class nor binary scores"


params = pytest.mark.parametrize(("name", "kind"), [(m, k) for m in METHODS for k in KINDS])


# ----------------------------------------------------------------------------- outputs


def _check_simplex(Q: np.ndarray, kind: str, n: int) -> None:
    assert isinstance(Q, np.ndarray) and Q.dtype == np.float64
    assert np.all(np.isfinite(Q))
    assert np.all((Q >= 0) & (Q <= 1))
    if kind == "binary":
        assert Q.shape == (n,)
    else:
        assert Q.shape == (n, K)
        assert np.max(np.abs(Q.sum(axis=1) - 1)) <= 1e-12


@params
def test_outputs_on_simplex(name: str, kind: str) -> None:
    rc = _fitted(name, kind)
    zt = TEST[kind]
    Q = rc.predict_proba(zt)
    _check_simplex(Q, kind, len(zt))
    pred = rc.predict(zt)
    np.testing.assert_array_equal(pred, (Q > 0.5).astype(int) if kind == "binary" else Q.argmax(1))
    assert isinstance(rc.accuracy_preserving, bool) and isinstance(rc.injective, bool)
    # the same method fitted on probabilities (logit methods use log p; exact here since
    # softmax probabilities of these logits have no zeros)
    Qp = _fitted_on_probs(name, kind).predict_proba(_to_probs(zt))
    _check_simplex(Qp, kind, len(zt))


@params
def test_input_not_modified(name: str, kind: str) -> None:
    rc = _fitted(name, kind)
    zt = TEST[kind].copy()
    rc.predict_proba(zt)
    np.testing.assert_array_equal(zt, TEST[kind])


@params
def test_accuracy_preserving_where_declared(name: str, kind: str) -> None:
    rc = _fitted(name, kind)
    if not rc.accuracy_preserving:
        pytest.skip(f"{name} does not declare accuracy_preserving")
    zt = TEST[kind].copy()
    if kind == "binary":
        zt[:10] = 0.0  # p = 0.5: predicted class 0 on both sides
        before = zt > 0
        after = rc.predict_proba(zt) > 0.5
    else:
        order = np.argsort(-zt, axis=1)
        rows = np.arange(40)
        zt[rows, order[rows, 1]] = zt[rows, order[rows, 0]]  # exact tie of the top two
        zt[40:45] = 1.0  # all classes tied
        before = zt.argmax(1)  # ties -> lowest index
        after = rc.predict_proba(zt).argmax(1)
    np.testing.assert_array_equal(after, before)


@params
def test_injective_where_declared(name: str, kind: str) -> None:
    rc = _fitted(name, kind)
    if not rc.injective:
        pytest.skip(f"{name} does not declare injective")
    zt = TEST[kind]
    Q = rc.predict_proba(zt)
    flat = Q.reshape(len(zt), -1)
    u, first, count = np.unique(flat, axis=0, return_index=True, return_counts=True)
    assert u.shape[0] == len(zt), (  # distinct inputs -> distinct outputs
        f"{name}: distinct inputs give identical outputs, e.g. rows "
        f"{np.flatnonzero((flat == u[count > 1][0]).all(axis=1)).tolist()} -> {u[count > 1][0]}"
    )
    # a pair that differs only slightly in one coordinate stays distinct
    z1 = zt[:20].copy()
    z2 = z1.copy()
    if kind == "binary":
        z2 += 1e-6
    else:
        z2[:, 1] += 1e-6
    Q1, Q2 = rc.predict_proba(z1), rc.predict_proba(z2)
    diff = np.abs(Q1 - Q2).reshape(20, -1).max(axis=1)
    assert np.all(diff > 0)


# ----------------------------------------------------------------------------- parameters, JSON


@pytest.mark.parametrize("name", METHODS)
def test_get_set_params_round_trip(name: str) -> None:
    rc = _fresh(name)
    p = rc.get_params()
    assert set(p) == set(type(rc)._param_names())
    rc2 = type(rc)(**p)
    assert json.dumps(_persistence._encode(rc2.get_params())) == json.dumps(_persistence._encode(p))
    assert rc.set_params(**p) is rc
    with pytest.raises(CalibrationInputError, match="no parameter"):
        rc.set_params(no_such_parameter_xyz=1)
    assert repr(rc).startswith(f"{name}(")


@params
def test_json_round_trip(name: str, kind: str) -> None:
    rc = _fitted(name, kind)
    text = rc.to_json()
    doc = json.loads(text)
    assert doc["calipers_recalibrator"] == name
    back = base.load_recalibrator(text)
    assert type(back) is type(rc)
    assert back.to_json() == text
    zt = TEST[kind]
    np.testing.assert_array_equal(back.predict_proba(zt), rc.predict_proba(zt))
    assert type(rc).from_json(text).to_json() == text


@params
def test_save_load(name: str, kind: str, tmp_path: Any) -> None:
    rc = _fitted(name, kind)
    path = tmp_path / f"{name}.json"
    rc.save(path)
    back = base.Recalibrator.load(path)
    zt = TEST[kind]
    np.testing.assert_array_equal(back.predict_proba(zt), rc.predict_proba(zt))


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("name", METHODS)
def test_unfitted_predict_raises(name: str) -> None:
    rc = _fresh(name)
    for kind in KINDS:
        with pytest.raises(CalibrationInputError, match="not fitted"):
            rc.predict_proba(TEST[kind])


@params
def test_wrong_number_of_classes(name: str, kind: str) -> None:
    rc = _fitted(name, kind)
    other = np.zeros((5, 3)) if kind == "binary" else np.zeros((5, K + 1))
    with pytest.raises(CalibrationInputError, match="classes"):
        rc.predict_proba(other)


@params
def test_exact_zero_probability(name: str, kind: str) -> None:
    rc = _fitted(name, kind)
    z, y = CAL[kind]
    p = _to_probs(z).copy()
    if kind == "binary":
        p[3] = 0.0
    else:
        p[3] = [0.0, 0.5, 0.25, 0.25]
    if type(rc).input == "logits":
        with pytest.raises(CalibrationInputError, match="logits"):
            _fresh(name).fit(p, y, logits=False)
        with pytest.raises(CalibrationInputError, match="logits"):
            _fitted_on_probs(name, kind).predict_proba(p)
    else:
        # probability methods either take exact zeros or refuse them with a clear message
        try:
            Q = _fresh(name).fit(p, y, logits=False).predict_proba(p)
        except CalibrationInputError as exc:
            assert re.search(r"\b0(\.0)?\b|strictly", str(exc)), str(exc)
        else:
            _check_simplex(Q, kind, len(p))


@params
def test_integer_weights_equal_repetition(name: str, kind: str) -> None:
    _fitted(name, kind)  # skips unsupported kinds
    z, y = CAL[kind]
    w = np.random.default_rng(3).integers(0, 4, size=len(y))
    try:
        weighted = _fresh(name).fit(z, y, logits=True, sample_weight=w.astype(float))
    except CalibrationInputError as exc:
        if "weight" not in str(exc).lower():
            raise
        pytest.skip(f"{name} does not support sample_weight: {exc}")
    idx = np.repeat(np.arange(len(y)), w)
    repeated = _fresh(name).fit(z[idx], y[idx], logits=True)
    zt = TEST[kind]
    np.testing.assert_allclose(
        weighted.predict_proba(zt), repeated.predict_proba(zt), rtol=0, atol=1e-7
    )
