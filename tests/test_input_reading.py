"""No silent misreading of what the user passed.

1. Recalibrators read logits and probabilities from the values only where that
   is unambiguous (``logits=None``), say what they read (``input_kind_``), and
   refuse everything else with a message naming ``logits=``; ``predict_proba``
   refuses scores of the other kind than ``fit`` read.
2. Every option an error message of the validation layer suggests exists and
   works, for every public metric and for the recalibrators.
3. Probabilities printed with few decimals are accepted (values unchanged)
   when their row sums are within what rounding can explain.

Expected values are computed independently: the temperature by SciPy's scalar
minimiser on the NLL written out here, the rounding bounds by hand.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import warnings
from typing import Any

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_softmax

import calipers as cp
import calipers.recalibration as recal
from calipers.recalibration import base
from calipers.validation import CalibrationInputError, check_predictions

for _mod in pkgutil.iter_modules(recal.__path__):  # every method registers itself
    importlib.import_module(f"{recal.__name__}.{_mod.name}")

METHODS = sorted(
    name
    for name, cls in base._REGISTRY.items()
    if cls.__module__.startswith("calipers.recalibration")
)
K = 4


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _to_probs(z: np.ndarray) -> np.ndarray:
    return expit(z) if z.ndim == 1 else _softmax(z)


def _labels(q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label per row drawn from the probabilities q (inverse CDF)."""
    if q.ndim == 1:
        return (rng.random(q.shape[0]) < q).astype(np.int64)
    u = rng.random(q.shape[0])
    return np.minimum((u[:, None] > np.cumsum(q, axis=1)).sum(axis=1), q.shape[1] - 1)


def _data(n: int, k: int, seed: int, scale: float, truth: float) -> tuple[np.ndarray, np.ndarray]:
    """Logits ``scale * N(0, 1)``, labels drawn from ``softmax(z / truth)``."""
    rng = np.random.default_rng(seed)
    z = scale * rng.standard_normal((n, k))
    return z, _labels(_softmax(z / truth), rng)


def _nll_at(z: np.ndarray, y: np.ndarray, t: float) -> float:
    return float(-np.mean(log_softmax(z / t, axis=1)[np.arange(len(y)), y]))


def _optimal_temperature(z: np.ndarray, y: np.ndarray) -> float:
    """The NLL-optimal temperature by SciPy's bounded scalar minimiser (not calipers)."""
    res = minimize_scalar(
        lambda lt: _nll_at(z, y, float(np.exp(lt))),
        bounds=(np.log(0.05), np.log(20.0)),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(np.exp(res.x))


# ============================================================================ 1. recalibrators


@pytest.mark.parametrize(("scale", "truth"), [(3.0, 2.6), (1.0, 0.5)])
def test_temperature_scaling_reads_probabilities_as_probabilities(
    scale: float, truth: float
) -> None:
    """Over-confident (T ~ 2.6) and under-confident (T ~ 0.5) models, fitted on p."""
    z, y = _data(5000, 10, 0, scale, truth)
    zt, yt = _data(5000, 10, 1, scale, truth)
    p, pt = _softmax(z), _softmax(zt)
    expected = _optimal_temperature(z, y)
    assert abs(expected - truth) < 0.25 * truth  # the data say what they were drawn from

    ts = cp.TemperatureScaling().fit(p, y)  # no logits=: read from the values
    assert ts.input_kind_ == "probs" and ts.input_detected_ is True
    assert ts.temperature_ == pytest.approx(expected, rel=1e-6)
    on_logits = cp.TemperatureScaling().fit(z, y, logits=True).temperature_
    on_log_probs = cp.TemperatureScaling().fit(np.log(p), y, logits=True).temperature_
    assert ts.temperature_ == pytest.approx(on_logits, rel=1e-6)
    assert ts.temperature_ == pytest.approx(on_log_probs, rel=1e-6)

    # what 0.1 did: the probabilities fitted as if they were logits
    misread = cp.TemperatureScaling().fit(p, y, logits=True)
    assert abs(misread.temperature_ - expected) > 0.3 * expected
    q = ts.predict_proba(pt)  # read as probabilities again
    q_bad = misread.predict_proba(pt, logits=True)
    np.testing.assert_allclose(q, _softmax(zt / expected), rtol=0, atol=1e-6)
    assert cp.nll(q, yt) < cp.nll(q_bad, yt)
    assert cp.nll(q, yt) == pytest.approx(_nll_at(zt, yt, expected), abs=1e-6)


_CAL: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def _cal(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Calibration logits (over-confident) and labels: (n, 4) or binary (n,)."""
    if kind not in _CAL:
        rng = np.random.default_rng(7)
        if kind == "binary":
            z = 2.5 * rng.standard_normal(300) + 0.3
            _CAL[kind] = z, _labels(expit(z / 2), rng)
        else:
            z = 2.5 * rng.standard_normal((300, K)) + np.array([0.3, 0.0, -0.2, 0.1])
            _CAL[kind] = z, _labels(_softmax(z / 2), rng)
    return _CAL[kind]


def _supported(name: str, kind: str) -> base.Recalibrator:
    """A fresh method, or skip where it refuses this kind of problem (binary / multiclass)."""
    z, y = _cal(kind)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            base._REGISTRY[name]().fit(z, y, logits=True)
    except CalibrationInputError as exc:
        if re.search(r"binary|multi-?class|two classes", str(exc), re.IGNORECASE):
            pytest.skip(f"{name} does not handle {kind} input")
        raise
    return base._REGISTRY[name]()


def _fit(name: str, scores: Any, y: Any, **kw: Any) -> base.Recalibrator:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return base._REGISTRY[name]().fit(scores, y, **kw)


params = pytest.mark.parametrize(
    ("name", "kind"), [(m, k) for m in METHODS for k in ("multiclass", "binary")]
)


@params
def test_every_method_reads_logits_and_probabilities(name: str, kind: str) -> None:
    _supported(name, kind)
    z, y = _cal(kind)
    p = _to_probs(z)
    zt = _cal(kind)[0][::-1].copy() * 0.9
    pt = _to_probs(zt)

    auto_z = _fit(name, z, y)
    told_z = _fit(name, z, y, logits=True)
    assert (auto_z.input_kind_, auto_z.input_detected_) == ("logits", True)
    assert (told_z.input_kind_, told_z.input_detected_) == ("logits", False)
    np.testing.assert_array_equal(auto_z.predict_proba(zt), told_z.predict_proba(zt, logits=True))

    auto_p = _fit(name, p, y)
    told_p = _fit(name, p, y, logits=False)
    assert (auto_p.input_kind_, auto_p.input_detected_) == ("probs", True)
    np.testing.assert_array_equal(auto_p.predict_proba(pt), told_p.predict_proba(pt, logits=False))

    # predict_proba refuses the other kind unless told, and then reads it as told
    with pytest.raises(CalibrationInputError, match=r"fitted on logits.*look like probabilities"):
        auto_z.predict_proba(pt)
    with pytest.raises(CalibrationInputError, match=r"fitted on probabilities.*look like logits"):
        auto_p.predict_proba(zt)
    with pytest.raises(
        CalibrationInputError, match=r"told logits=True.*logits=True or logits=False"
    ):
        told_z.predict_proba(pt)
    np.testing.assert_array_equal(
        auto_z.predict_proba(pt, logits=False), told_z.predict_proba(pt, logits=False)
    )

    # the reading survives JSON
    back = base.load_recalibrator(auto_p.to_json())
    assert (back.input_kind_, back.input_detected_) == ("probs", True)
    np.testing.assert_array_equal(back.predict_proba(pt), auto_p.predict_proba(pt))


def _ambiguous(kind: str) -> dict[str, np.ndarray]:
    """Scores that could be logits or (mis-encoded) probabilities."""
    z, _ = _cal(kind)
    p = _to_probs(z)
    if kind == "binary":
        return {
            "percentages": 100 * p,
            "slightly out of [0, 1]": 1.6 * p - 0.3,
        }
    sentinel = p.copy()
    sentinel[:5] = -1.0  # rows marked missing with -1: most rows are still probabilities
    sums_one = p.copy()
    sums_one[0] = [1.2, -0.2, 0.0, 0.0]
    return {
        "percentages": 100 * p,
        "one-vs-rest": expit(z),
        "logits in [0, 1]": (z - z.min()) / (z.max() - z.min()),
        "slightly negative": p - 0.01,
        "sentinel rows": sentinel,
        "rows sum to 1, entries outside [0, 1]": sums_one,
    }


@params
def test_every_method_refuses_ambiguous_scores(name: str, kind: str) -> None:
    _supported(name, kind)
    z, y = _cal(kind)
    fitted = _fit(name, z, y)
    for what, s in _ambiguous(kind).items():
        with pytest.raises(CalibrationInputError, match=r"cannot tell") as fit_err:
            _fit(name, s, y)
        with pytest.raises(CalibrationInputError, match=r"cannot tell") as predict_err:
            fitted.predict_proba(s)
        for err in (fit_err, predict_err):
            msg = str(err.value)
            assert "logits=True" in msg and "logits=False" in msg, (what, msg)
    # being told settles it (a method may still refuse the values for its own reasons,
    # e.g. beta calibration the probabilities that sigmoid(100 p) rounds to 1)
    for s in _ambiguous(kind).values():
        try:
            _fit(name, s, y, logits=True).predict_proba(s, logits=True)
        except CalibrationInputError as exc:
            assert "cannot tell" not in str(exc)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # tiny fits: T and Platt at bounds
def test_reading_rule_on_the_boundaries() -> None:
    y = np.array([0, 1, 1, 0])
    # log-probabilities are logits (every row has an entry <= -log 2)
    lp = np.log(np.array([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1], [0.6, 0.4]]))
    assert cp.TemperatureScaling().fit(lp, y).input_kind_ == "logits"
    # binary: values in [0, 1] are P(y = 1); a value below -0.5 makes logits
    assert cp.PlattScaling().fit(np.array([0.2, 0.7, 0.9, 0.4]), y).input_kind_ == "probs"
    assert cp.PlattScaling().fit(np.array([-0.6, 0.7, 3.0, 0.4]), y).input_kind_ == "logits"
    with pytest.raises(CalibrationInputError, match="cannot tell"):
        cp.PlattScaling().fit(np.array([-0.4, 0.7, 3.0, 0.4]), y)
    # rows of probabilities exported with 4 decimals are still probabilities
    rng = np.random.default_rng(3)
    p4 = np.round(_softmax(rng.standard_normal((500, 10))), 4)
    assert np.abs(p4.sum(1) - 1).max() > 1e-4
    yy = rng.integers(0, 10, 500)
    assert cp.HistogramBinning().fit(p4, yy).input_kind_ == "probs"


def test_logits_flag_must_be_a_bool() -> None:
    z, y = _cal("multiclass")
    for bad in ("yes", 1, 0.0):
        with pytest.raises(CalibrationInputError, match=r"logits must be True, False or None"):
            cp.TemperatureScaling().fit(z, y, logits=bad)  # type: ignore[arg-type]


def test_files_of_calipers_0_1_still_load() -> None:
    z, y = _cal("multiclass")
    ts = cp.TemperatureScaling().fit(z, y)
    doc = json.loads(ts.to_json())
    del doc["state"]["input_kind_"], doc["state"]["input_detected_"]
    doc["state"]["logits_"] = True  # how 0.1 stored the kind
    doc["format"] = 1  # what 0.1 wrote (format 2 has no 'logits_')
    old = base.load_recalibrator(json.dumps(doc))
    assert old.input_kind_ == "logits" and not hasattr(old, "logits_")
    np.testing.assert_array_equal(old.predict_proba(z), ts.predict_proba(z))


def test_recalibrators_accept_predictions() -> None:
    z, y = _cal("multiclass")
    p = _softmax(z)
    raw = 1.3 * p  # rows sum to 1.3: refused as probabilities, fixed by renormalize=True
    with pytest.raises(CalibrationInputError, match=r"renormalize=True"):
        cp.TemperatureScaling().fit(raw, y, logits=False)
    P = check_predictions(raw, y, renormalize=True)
    ts = cp.TemperatureScaling().fit(P, None)
    assert ts.input_kind_ == "probs" and ts.input_detected_ is False
    expected = _optimal_temperature(np.log(raw / raw.sum(1, keepdims=True)), y)
    assert ts.temperature_ == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(ts.predict_proba(P), _softmax(np.log(p) / expected), atol=1e-6)
    # a Predictions that kept logits is read as logits; weights come with it
    w = np.random.default_rng(0).integers(1, 3, len(y)).astype(float)
    Pz = check_predictions(z, y, logits=True, sample_weight=w)
    ts_w = cp.TemperatureScaling().fit(Pz, None)
    assert ts_w.input_kind_ == "logits"
    assert ts_w.temperature_ == pytest.approx(
        cp.TemperatureScaling().fit(z, y, logits=True, sample_weight=w).temperature_, rel=1e-12
    )
    with pytest.raises(CalibrationInputError, match="contradicts"):
        cp.TemperatureScaling().fit(Pz, None, logits=False)
    with pytest.raises(CalibrationInputError, match="labels must be None"):
        cp.TemperatureScaling().fit(Pz, y)


# ============================================================================ 2. suggested options

N, KM = 60, 6
_RNG = np.random.default_rng(11)
_Z = 1.5 * _RNG.standard_normal((N, KM))
_P = _softmax(_Z)
_Y = _labels(_P, _RNG)
_EXTRA: dict[str, dict[str, Any]] = {
    "group_ece": {"groups": [[0, 1, 2], [3, 4, 5]]},
    "group_bar_chart": {"groups": [[0, 1, 2], [3, 4, 5]]},
}


def _public_metrics() -> list[str]:
    names = []
    for name in cp.__all__:
        f = getattr(cp, name)
        if name == "check_predictions" or not inspect.isfunction(f):
            continue
        if list(inspect.signature(f).parameters)[:2] == ["probs", "labels"]:
            names.append(name)
    return names


def _bad_inputs() -> dict[str, np.ndarray]:
    sums = _P * 1.01  # every row sums to 1.01, every entry inside [0, 1]
    assert sums.max() < 1
    over = _P.copy()
    over[2] = [1.003, -0.003, 0, 0, 0, 0]  # rows sum to 1; one entry beyond [0, 1]
    both = _P * 1.01
    both[4] = [1.01, 0, 0, 0, 0, 0]  # clipping leaves rows summing to 1.01
    return {"row sums": sums, "range": over, "range and row sums": both}


_CHECK = re.compile(r"calipers\.check_predictions\(probs, labels, ([^)]*)\)")


def _suggestions(msg: str) -> list[dict[str, Any]]:
    """The keyword arguments of every ``calipers.check_predictions(...)`` in a message."""
    out = []
    for m in _CHECK.finditer(msg):
        kw: dict[str, Any] = {}
        for part in m.group(1).split(", "):
            key, value = part.split("=")
            kw[key] = {"True": True, "False": False, "TOL": 0.02}[value]
        out.append(kw)
    return out


def _call(f: Any, *args: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = f(*args, **kw)
    if type(out).__name__ == "Figure":
        import matplotlib.pyplot as plt

        plt.close(out)
    return out


@pytest.mark.parametrize("name", _public_metrics())
def test_every_option_a_message_suggests_works(name: str) -> None:
    if name.endswith(("diagram", "chart", "grid")):
        pytest.importorskip("matplotlib")
        import matplotlib

        matplotlib.use("Agg")
    f = getattr(cp, name)
    extra = _EXTRA.get(name, {})
    for what, bad in _bad_inputs().items():
        with pytest.raises(CalibrationInputError) as err:
            _call(f, bad, _Y, **extra)
        msg = str(err.value)
        suggested = _suggestions(msg)
        assert suggested, (what, msg)
        for kw in suggested:  # each suggested validation, passed on as a Predictions
            P = check_predictions(bad, _Y, **kw)
            _call(f, P, None, **extra)
        assert ("clip=True" in msg) == (what != "row sums"), msg
        if what == "range and row sums":
            assert {"clip": True, "renormalize": True} in suggested
        # "pass logits=True": an option of the function itself
        if "pass logits=True" in msg:
            _call(f, bad, _Y, logits=True, **extra)
        # nothing else is suggested as a keyword of the function
        for opt in re.findall(r"pass (\w+)=", msg):
            assert opt == "logits", msg


def test_suggested_options_work_for_recalibrators() -> None:
    for what, bad in _bad_inputs().items():
        with pytest.raises(CalibrationInputError) as err:
            cp.TemperatureScaling().fit(bad, _Y, logits=False)
        suggested = _suggestions(str(err.value))
        assert suggested, str(err.value)
        for kw in suggested:
            P = check_predictions(bad, _Y, **kw)
            rc = cp.HistogramBinning().fit(P, None)
            assert rc.predict_proba(P).shape == (N, KM), what


# ============================================================================ 3. rounded exports


def _rounded_softmax(n: int, k: int, decimals: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.round(_softmax(1.5 * rng.standard_normal((n, k))), decimals)


def test_four_decimal_rows_accepted_unchanged() -> None:
    p = _rounded_softmax(2000, 10, 4, 0)
    dev = np.abs(p.sum(1) - 1)
    assert dev.max() > 1e-4  # the old rule refused this file
    assert dev.max() <= 10 * 0.5e-4 + 1e-12  # ... though rounding explains every row
    bits = p.copy()
    P = check_predictions(p, np.zeros(2000, dtype=int))
    assert P.probs is p
    np.testing.assert_array_equal(p.view(np.int64), bits.view(np.int64))
    # float32 values printed with 4 decimals as well, kept in float32
    p32 = p.astype(np.float32)
    P32 = check_predictions(p32, np.zeros(2000, dtype=int))
    assert P32.probs is p32 and P32.probs.dtype == np.float32
    # metrics read the same numbers as with an explicit, wider tolerance
    y = np.random.default_rng(1).integers(0, 10, 2000)
    assert cp.ece(p, y) == cp.ece(check_predictions(p, y, sum_tol=1e-3), None)


def test_rounding_allowance_is_the_worst_case_of_honest_rounding() -> None:
    y = [0, 1]
    base_row = [0.1] * 10
    # 4 decimals, k = 10: |sum - 1| <= 5e-4 can be rounding (each 0.09995 -> 0.1, one 0.1005)
    ok = np.array([base_row, [0.1005] + [0.1] * 9])
    assert check_predictions(ok, y).probs is ok
    off = np.array([base_row, [0.1006] + [0.1] * 9])  # 6e-4: more than rounding can do
    with pytest.raises(CalibrationInputError, match=r"row 1 of probs sums to 1\.0006.*4 decimals"):
        check_predictions(off, y)
    # an explicit sum_tol is used as given
    with pytest.raises(CalibrationInputError, match=r"row 1 of probs sums to 1\.0005"):
        check_predictions(ok, y, sum_tol=1e-4)


def test_six_decimal_rows_off_by_3e_3_refused() -> None:
    p = _rounded_softmax(50, 10, 6, 2)
    p[7, 0] = np.round(p[7, 0] + 3e-3, 6)
    with pytest.raises(CalibrationInputError, match=r"row 7 of probs sums to 1\.003"):
        check_predictions(p, np.zeros(50, dtype=int))


def test_two_decimal_rows_k3_accepted() -> None:
    p = np.array([[0.33, 0.33, 0.33], [0.67, 0.17, 0.17], [0.5, 0.25, 0.25], [0.08, 0.46, 0.46]])
    assert np.abs(p.sum(1) - 1).max() == pytest.approx(0.01)
    assert check_predictions(p, [0, 1, 2, 1]).probs is p
    with pytest.raises(CalibrationInputError, match="sums to 1.02"):  # > 3 * 0.005
        check_predictions(np.array([[0.34, 0.34, 0.34]]), [0])


def test_rounding_coarser_than_the_cap_is_refused() -> None:
    # 2 decimals with k = 20: rounding could move a sum by 0.1, more than the 0.05 allowed
    p = np.full((1, 20), 0.05)
    p[0, :3] = 0.07  # sums to 1.06
    with pytest.raises(CalibrationInputError, match=r"2 decimals.*up to 0\.1.*0\.05"):
        check_predictions(p, [0])
    with pytest.raises(CalibrationInputError, match="sums to 2"):  # integers carry no rounding
        check_predictions(np.array([[1.0, 1.0, 0.0]]), [0])


def test_float16_unaffected() -> None:
    p = np.array([[0.33, 0.33, 0.33], [0.5, 0.25, 0.25]], dtype=np.float16)
    tol = max(1e-4, (np.log2(3) + 2) * float(np.finfo(np.float16).eps))
    s = p.astype(np.float32).sum(1)
    assert abs(s[0] - 1) > tol  # 0.99 in float16 is outside float16's own tolerance ...
    with pytest.raises(CalibrationInputError, match="row 0 of probs sums to"):
        check_predictions(p, [0, 1])  # ... and 2-decimal values do not widen it
    ok = np.array([[0.5, 0.25, 0.25]], dtype=np.float16)
    assert check_predictions(ok, [0]).probs is ok


def test_rounding_allowance_for_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    p = _rounded_softmax(300, 10, 4, 5)
    t = torch.as_tensor(p)
    assert check_predictions(t, torch.zeros(300, dtype=torch.int64)).probs is t
