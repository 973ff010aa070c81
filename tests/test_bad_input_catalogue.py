"""The hostile user's catalogue: every public entry point x every kind of bad input.

Each pair must end in a :class:`calipers.CalibrationInputError` (a ``ValueError``)
whose message names the problem, never in a ``TypeError``, ``IndexError``,
``AttributeError``, a NaN result or a silent change of the input. The number of
pairs and the pairs that fail are printed (``pytest -s``) for the issue notes.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np
import pytest

from calipers.validation import CalibrationInputError
from entry_points import call as _call
from entry_points import entry_points

RNG = np.random.default_rng(0)
N, K = 40, 3
GOOD_P = RNG.dirichlet(np.ones(K), N)
GOOD_Y = RNG.integers(0, K, N)


def _bad_inputs() -> dict[str, tuple[Any, Any, dict[str, Any], str]]:
    """name -> (probs, labels, extra kwargs, regex the message must match)."""
    p, y = GOOD_P.copy(), GOOD_Y.copy()
    nan = p.copy()
    nan[3, 1] = np.nan
    inf = p.copy()
    inf[5, 0] = np.inf
    neg = p.copy()
    neg[2] = [-0.2, 0.6, 0.6]
    over = p * 1.3
    off = p.copy()
    off[7, 0] += 0.2
    y_out = y.copy()
    y_out[4] = K
    y_neg = y.copy()
    y_neg[1] = -1
    y_frac = y.astype(float)
    y_frac[0] = 0.5
    w_neg = np.ones(N)
    w_neg[3] = -1
    w_nan = np.ones(N)
    w_nan[3] = np.nan
    w_inf = np.ones(N)
    w_inf[6] = np.inf
    return {
        "NaN probability": (nan, y, {}, r"non-finite|NaN|nan"),
        "infinite probability": (inf, y, {}, r"non-finite|inf"),
        "negative probability": (neg, y, {}, r"\[0, 1\]|negative"),
        "probabilities scaled by 1.3": (over, y, {}, r"\[0, 1\]|sums to"),
        "row not summing to 1": (off, y, {}, r"sums to"),
        "3-D probabilities": (p[:, :, None], y, {}, r"shape"),
        "0 rows": (p[:0], y[:0], {}, r"empty|0 rows"),
        "1 column": (p[:, :1], y, {}, r"k >= 2|column"),
        "label out of range": (p, y_out, {}, r"labels must be in \[0, 3\)"),
        "negative label": (p, y_neg, {}, r"labels must be in \[0, 3\)"),
        "fractional label": (p, y_frac, {}, r"labels must be integers"),
        "labels too short": (p, y[:-1], {}, r"labels has 39 entries"),
        "labels None": (p, None, {}, r"labels"),
        "string labels": (p, y.astype(str), {}, r"labels are not class indices.*pass classes="),
        "string probabilities": (p.astype(str), y, {}, r"numeric|dtype"),
        "complex probabilities": (p.astype(complex), y, {}, r"real"),
        "object probabilities": (
            np.array([[0.5, 0.5], [0.5]], dtype=object),
            y[:2],
            {},
            r"Python objects|numeric",
        ),
        "negative weight": (p, y, {"sample_weight": w_neg}, r"non-negative"),
        "NaN weight": (p, y, {"sample_weight": w_nan}, r"finite"),
        "infinite weight": (p, y, {"sample_weight": w_inf}, r"finite"),
        "all-zero weights": (p, y, {"sample_weight": np.zeros(N)}, r"sums to 0"),
        "weights of the wrong length": (p, y, {"sample_weight": np.ones(N + 1)}, r"shape"),
        "logits=True with NaN": (
            np.where(np.isnan(nan), np.nan, 2.0),
            y,
            {"logits": True},
            r"non-finite",
        ),
        # settings: never converted, never read as another value
        "n_bins=True": (p, y, {"n_bins": True}, r"n_bins must be an integer"),
        "n_bins=1.5": (p, y, {"n_bins": 1.5}, r"n_bins must be an integer"),
        "n_bins='15'": (p, y, {"n_bins": "15"}, r"n_bins must be an integer"),
        "n_bins=0": (p, y, {"n_bins": 0}, r"n_bins must be an integer"),
        "n_bins=10**9": (p, y, {"n_bins": 10**9}, r"n_bins must be an integer"),
        "bandwidth=0": (p, y, {"bandwidth": 0.0}, r"bandwidth must be a positive"),
        "bandwidth=-1": (p, y, {"bandwidth": -1.0}, r"bandwidth must be a positive"),
        "bandwidth=NaN": (p, y, {"bandwidth": float("nan")}, r"bandwidth must be a positive"),
        "bandwidth=True": (p, y, {"bandwidth": True}, r"bandwidth must be a positive"),
        "bandwidth='0.1'": (p, y, {"bandwidth": "0.1"}, r"bandwidth|'mle'"),
        "threshold=-0.5": (p, y, {"threshold": -0.5}, r"threshold must be a number in \[0, 1\)"),
        "n_resamples=0": (p, y, {"n_resamples": 0}, r"n_resamples must be an integer"),
        "n_resamples=2.5": (p, y, {"n_resamples": 2.5}, r"n_resamples must be an integer"),
    }


ENTRY = entry_points()
BAD = _bad_inputs()


def _applies(f: Any, kw: dict[str, Any]) -> bool:
    """A pair exists only when the entry point takes the keyword the bad input uses."""
    params = inspect.signature(f).parameters
    return all(k in params for k in kw)


PAIRS = [(name, bad) for name, f in ENTRY for bad in sorted(BAD) if _applies(f, BAD[bad][2])]
#: a refusal of the option as such is as clear as a refusal of its value
REFUSES_WEIGHTS = r"does not support sample_weight"


@pytest.mark.parametrize(("name", "bad"), PAIRS)
def test_every_entry_point_refuses_every_bad_input_clearly(name: str, bad: str) -> None:
    pytest.importorskip("matplotlib")
    f = dict(ENTRY)[name]
    probs, labels, kw, pattern = BAD[bad]
    with pytest.raises(CalibrationInputError) as err:
        _call(name, f, probs, labels, kw)
    if "sample_weight" in kw:
        pattern = f"{pattern}|{REFUSES_WEIGHTS}"
    assert re.search(pattern, str(err.value)), f"{name} / {bad}: {err.value}"


#: weights read as repetition counts (equal-mass edges, k-d tree leaf sizes, the unbiased
#: SKCE, the KDE rule-of-thumb bandwidth, SmoothECE's absolute density floor), results
#: that are not numbers, or estimators that refuse weights: finiteness only
SCALE_DEPENDENT = {
    "rmsce",
    "ace",
    "tace",
    "top_k_ece",
    "full_ece",
    "group_ece",
    "interval_calibration_error",
    "ce_p",
    "skce",
    "kde_calibration_error",
    "kde_bandwidth",
    "smece",
    "smece_bandwidth",
    "debiased_calibration_error",
    "proper_calibration_error",
    "ce_kl",
    "ce_squared_l2",
    "binned_statistics",
    "reliability_table",
    "smooth_reliability",
    "calibration_sharpness",
    "consistency_test",
    "murphy_decomposition",
    "corp_decomposition",
    "skce_test",
}


@pytest.mark.parametrize("name", [n for n, f in ENTRY if _applies(f, {"sample_weight": 1})])
def test_weights_that_would_overflow_give_finite_results(name: str) -> None:
    """1e308 weights sum to inf and 1e-320 weights multiply to 0: neither reaches a result.

    Weights are rescaled by a power of two beyond 2**+-256, which leaves every ratio of
    weighted sums (ECE, NLL, Brier, ...) exactly as without weights here.
    """
    pytest.importorskip("matplotlib")
    f = dict(ENTRY)[name]
    base = None
    for scale in (1e308, 1e-320):
        try:
            r = _call(name, f, GOOD_P, GOOD_Y, {"sample_weight": np.full(N, scale)})
        except CalibrationInputError as exc:
            assert re.search(REFUSES_WEIGHTS, str(exc)), (name, exc)
            return
        v = getattr(r, "value", getattr(r, "statistic", r))
        if isinstance(v, (float, np.floating)):
            assert np.isfinite(v), (name, scale)
        if name in SCALE_DEPENDENT or name.endswith(("diagram", "grid", "chart")):
            continue
        if base is None:
            base = float(_call(name, f, GOOD_P, GOOD_Y, {}))
        assert float(r) == pytest.approx(base, rel=1e-9, abs=1e-12), (name, scale)


def test_the_catalogue_is_large() -> None:
    assert len(ENTRY) >= 45 and len(BAD) >= 30 and len(PAIRS) >= 1100
    print(f"\ncatalogue: {len(ENTRY)} entry points, {len(BAD)} bad inputs, {len(PAIRS)} pairs")
