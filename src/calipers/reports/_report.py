"""The standard report: calibration never alone (Chidambaram & Ge (2024) §6).

A :class:`Report` holds, for one or many models (and, when asked, the same
models after each recalibration method, Chidambaram & Ge (2024) Table 1), the suite the
papers say must be reported together:

==================  ==========================================================
column              what (function)
==================  ==========================================================
``accuracy``        top-1 accuracy (:func:`calipers.accuracy`)
``nll``             negative log-likelihood, nats (:func:`calipers.nll`; +inf
                    when a true class has probability 0 — reported, not hidden)
``brier``           multi-class Brier score, sum over classes
                    (:func:`calipers.brier`); also the calibration upper bound
                    U_Brier of Gruber & Buettner (2022) Thm 4.3 / Example 4.4
``rbs``             root Brier score, sqrt(U_Brier) (Gruber & Buettner (2022) §4)
``ece``             ECE, 15 equal-width bins, L1 (Guo et al. 2017): top label
                    for ``(n, k)`` input, positive class (P(y = 1) against y)
                    for 1-D binary input (:func:`calipers.ece`'s default lens)
``ace``             Nixon et al.'s adaptive calibration error (15 ranges)
``smece``           SmoothECE (Błasiok & Nakkiran; :func:`calipers.smece`)
``ce_kl``           CE_KL in the same lens, Beta-kernel leave-one-out estimate
                    (Popordanoska et al. (2024) eq. 10 on the lens's Bernoulli
                    problem: the kernel regression of the target on the score)
``ce_l2sq``         CE_2^2, same estimator (Popordanoska et al. (2024) eq. 7)
``refinement_kl``   REF_KL of the same estimate (Popordanoska et al. (2024) eq. 15)
``ece_p_value``     p-value of the ECE under calibration in the same lens: the
                    target of every row (correctness, or y for binary input)
                    is redrawn as Bernoulli(score) ``null_resamples`` times
                    (the consistency resampling of Vaicenavicius et al. 2019,
                    O(n) per draw)
==================  ==========================================================

The kernel estimates are quadratic in n; rows beyond ``kernel_max_n`` are
subsampled (seeded, without replacement) for them only, as Chidambaram & Ge (2024) did for
its kernel estimates; the report's settings record this.

With ``n_bootstrap`` every column gets a 95 % basic bootstrap interval (the
coverage study of docs/intervals.md chose it; the resamples are row weights, so
the whole suite costs a few matrix products per row instead of a recomputation
per resample).

Flags (Chidambaram & Ge (2024) §3's pitfall, said by the report itself):

* a recalibrated row whose ECE is lower than its model's uncalibrated row while
  its NLL or Brier score is higher beyond the noise ("calibration error fell but
  the proper score got worse" — mean replacement is the canonical example); a
  score counts as higher only when the 95 % paired interval of the difference
  (same test rows; bootstrap with ``n_bootstrap``, else a t-interval of the
  per-row differences) lies above 0, and likewise for "recalibration made the
  proper score worse";
* an ECE whose p-value under the calibrated null exceeds 0.05 ("within the
  noise of a calibrated model").
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._backend import to_numpy
from ..inference import Verdict
from ..inference import _resampling as _rs
from ..io.output import interrupts_deferred
from ..metrics import registry
from ..pipeline.lenses import lens_arrays
from ..validation import (
    CalibrationInputError,
    Predictions,
    check_integer,
    check_predictions,
    check_size,
)
from ._document import _LABELS, COLUMNS, UNCALIBRATED, Report, ReportRow, _slug

__all__ = ["Report", "ReportRow", "report", "COLUMNS"]


#: The report's intervals: the basic (reverse-percentile) bootstrap interval, chosen by
#: the coverage study of docs/intervals.md (benchmarks/study_interval_coverage.py).
INTERVAL_METHOD = "basic"
#: Nominal coverage of every interval in the report (bootstrap and paired).
CONFIDENCE_LEVEL = 0.95
#: Bootstrap-interval columns (the p-value has none).
_INTERVAL_COLUMNS = tuple(c for c in COLUMNS if c != "ece_p_value")


#: The report's columns that their functions compute directly and the bootstrap
#: resamples through their vectorised forms: the metric registry's report rows that
#: have one (accuracy, NLL, Brier, ECE, ACE, SmoothECE). RBS is the root of the Brier
#: score; the kernel columns come from one Beta-kernel regression (``_suite``).
_DIRECT = tuple(m for m in registry.METRICS.values() if m.report and m.resampler)


def _subsample(n: int, m: int, rng: np.random.Generator) -> np.ndarray | None:
    return None if n <= m else np.sort(rng.choice(n, size=m, replace=False))


def _lens_name(P: Predictions) -> str:
    """The report's lens: positive class for 1-D P(y = 1), top label otherwise."""
    return "binary" if P.binary else "top_label"


def _lens_pair(P: Predictions) -> tuple[np.ndarray, np.ndarray]:
    """(score, target) of the report's lens, float64 NumPy."""
    s, t, _ = lens_arrays(P, _lens_name(P))
    return s, t


@dataclass
class _RowData:
    """What the bootstrap and the flags need of one row beyond its numbers."""

    P: Predictions
    terms: dict[str, np.ndarray]  # per-row NLL and Brier terms
    kernel_boot: np.ndarray | None  # (B, 3) kernel estimates on the kernel resamples
    verdicts: dict[str, Verdict] = field(default_factory=dict)


def _suite(
    P: Predictions,
    *,
    kernel_rows: np.ndarray | None,
    kernel_bandwidth: float,
    null_resamples: int,
    seed: int,
    kernel_counts: np.ndarray | None = None,
    with_verdicts: bool = False,
) -> tuple[dict[str, float], _RowData]:
    """The suite of one row.

    ``kernel_rows``: the kernel subsample (None: every row); ``kernel_counts``:
    bootstrap counts of those rows, evaluated in the same pass as the estimate (the
    kernel matrix is the costly part, so it is formed once for both).
    """
    rng = np.random.default_rng(seed)
    P = _rs.numpy_predictions(P)
    m: dict[str, float] = {}
    for spec in _DIRECT:
        m[str(spec.report)] = float(spec.function(P, None))
    m["rbs"] = math.sqrt(m["brier"])  # Gruber & Buettner (2022): RBS = sqrt(Brier)
    m = {k: m[k] for k in COLUMNS if k in m}  # the columns' order (data frames keep it)
    s, t = _lens_pair(P)
    sk, tk = (s, t) if kernel_rows is None else (s[kernel_rows], t[kernel_rows])
    # the lens's problem as a binary one (P(target = 1) = score, the "binary" lens of
    # proper_calibration_error): the leave-one-out Beta-kernel regression of the
    # target on the score, both divergences and the refinement from one regression
    # (equal to proper_calibration_error(sk, tk, lens="binary") up to rounding)
    kev = _rs.beta_kernel_values(sk, tk, kernel_bandwidth)
    W = np.ones((1, len(sk)))
    if kernel_counts is not None:
        W = np.concatenate([W, kernel_counts])
    kv = kev(W)
    m["ce_kl"], m["ce_l2sq"], m["refinement_kl"] = (float(v) for v in kv[0])
    m["ece_p_value"], ece_null = _ece_null(s, t, P.sample_weight, null_resamples, rng)
    terms = {"nll": _rs._nll_terms(P, None), "brier": _rs._brier_terms(P, "sum")}
    verdicts = (
        _verdicts(
            m, s, t, P.sample_weight, ece_null, sk, tk, kernel_bandwidth, null_resamples, seed
        )
        if with_verdicts
        else {}
    )
    return m, _RowData(P, terms, None if kernel_counts is None else kv[1:], verdicts)


def _ece_null(
    score: np.ndarray, target: np.ndarray, w: Any, B: int, rng: np.random.Generator
) -> tuple[float, np.ndarray]:
    """p-value and null draws of the ECE (15 equal-width bins) under calibration of the lens.

    Every target is redrawn as Bernoulli(score) ``B`` times (Vaicenavicius et al. 2019's
    consistency resampling); the bins of the scores are fixed, so a batch of draws is
    one product with the sparse bin-indicator matrix. The observed statistic is computed
    by the same code (equal to :func:`calipers.ece` in the lens up to rounding).
    """
    if B <= 0:
        return math.nan, np.zeros(0)
    n = score.shape[0]
    stat = _ece_stat(score, w)
    observed = float(stat(target[None, :])[0])
    draws = []
    step = _rs.batch_rows(n, B)
    for b0 in range(0, B, step):
        r = min(step, B - b0)
        fake = (rng.random((r, n)) < score).astype(np.float64)
        draws.append(np.asarray(stat(fake), dtype=np.float64).reshape(-1))
    null = np.concatenate(draws)
    exceed = int(np.count_nonzero(null >= observed - 1e-15))
    return (1 + exceed) / (1 + B), null


def _ece_stat(score: np.ndarray, w: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The ECE (15 equal-width bins) of each row of a (draws x n) target matrix; soft
    targets (a row of probabilities) give the binned gap of their expectation."""
    from scipy import sparse

    from ..estimators.binning import EqualWidth

    n = score.shape[0]
    ww = np.ones(n) if w is None else np.asarray(to_numpy(w), dtype=np.float64)
    ids, nb = EqualWidth(15).assign(score, None)
    S = sparse.csr_matrix((ww, (np.arange(n), np.asarray(ids))), shape=(n, nb))
    total = ww.sum()

    def stat(T: np.ndarray) -> np.ndarray:
        return np.abs(np.asarray((T - score) @ S)).sum(axis=1) / total

    return stat


@dataclass
class _World:
    """Draws of a statistic at the calibration curve fitted to the lens's (score, target)."""

    draws: np.ndarray  # (B,) or (B, columns)
    estimand: Any  # a float, or one per column
    refits: np.ndarray
    model: str


def _world_draws(
    score: np.ndarray,
    target: np.ndarray,
    w: Any,
    B: int,
    rng: np.random.Generator,
    stat: Callable[[np.ndarray], np.ndarray],
    estimand: Callable[[np.ndarray], Any],
) -> _World | None:
    """``B`` draws of ``stat`` with targets ~ Bernoulli(q), q the fitted curve of the lens.

    :mod:`calipers.inference.bias_correction`: the curve (:class:`calipers.inference.calibration_world.
    CalibrationWorldFitter`, the calibrated identity left out) is refitted on every draw
    and ``estimand`` read at each refit. None when no curve could be fitted.
    """
    from ..inference.calibration_world import CalibrationWorldFitter

    ww = None if w is None else np.asarray(to_numpy(w), dtype=np.float64)
    fitter = CalibrationWorldFitter(score, sample_weight=ww)
    world = fitter.fit(target.astype(np.int64), include_identity=False)
    if world.calibrated:
        return None
    q = np.asarray(world.probs, dtype=np.float64)
    n = score.shape[0]
    draws, refits = [], []
    # half the null's batch: the refits' own arrays come on top of the draws'
    step = max(1, _rs.batch_rows(n, B) // 2)
    for b0 in range(0, B, step):
        r = min(step, B - b0)
        hit = rng.random((r, n)) < q  # kept as booleans: the refits read them
        draws.append(np.asarray(stat(hit.astype(np.float64)), dtype=np.float64))
        for j in range(r):
            refit = fitter.fit(hit[j].astype(np.int64), include_identity=False, start=world)
            refits.append(estimand(np.asarray(refit.probs, dtype=np.float64)))
    return _World(np.concatenate(draws), estimand(q), np.asarray(refits), world.model)


#: Bandwidth multiples of the report's kernel verdicts (each one kernel pass).
_REPORT_BANDWIDTH_FACTORS = (0.5, 1.0, 2.0)

#: Target columns per batch of the kernel verdict's null (rows x draws entries).
_KERNEL_NULL_ENTRIES = 1 << 20


def _kernel_stat(score: np.ndarray, bandwidth: float) -> Callable[[np.ndarray], np.ndarray]:
    """``(r, 2)``: CE_KL and CE_2^2 of the Beta-kernel estimate for each row of a
    (draws x n) target matrix.

    The scores, hence the kernel matrix, are the same for every row, so the
    leave-one-out regressions of all rows are one product with it
    (:meth:`calipers.DirichletKernel.regress` with a column per draw; Popordanoska et
    al. 2024 eq. 10-12, 15 on the lens's Bernoulli problem).
    """
    from ..estimators.dirichlet_kernel import DirichletKernel
    from ..inference._verdict import _draw_terms

    m = score.shape[0]
    # blocks of 2**20 kernel entries (8 MiB), as the report's own kernel estimates use
    kernel = DirichletKernel(bandwidth, block_size=max(1, (1 << 20) // max(m, 1)))

    def stat(T: np.ndarray) -> np.ndarray:
        Tm = np.ascontiguousarray(T.T)
        R = kernel.regress(score, Tm, None)
        out = np.empty((T.shape[0], 2))
        for c, div in enumerate(("kl", "squared_l2")):
            # every draw's terms at once, as _slice_terms computes each
            out[:, c] = _draw_terms(score, Tm, R, None, div, "scalar", 1e-7, "direct")
        return out

    return stat


def _kernel_estimand(score: np.ndarray, bandwidth: float) -> Callable[[np.ndarray], np.ndarray]:
    """CE_KL and CE_2^2 of the lens's Bernoulli problem when P(target = 1) is ``q``: the
    divergences of ``q`` from the score, exactly (Popordanoska et al. 2024, eq. 8)."""
    from ..metrics._proper_calibration_error import _slice_terms

    def theta(q: np.ndarray) -> np.ndarray:
        return np.array(
            [
                float(
                    _slice_terms(score, q, None, div, "scalar", bandwidth, 1e-7, None, r=q)[
                        "direct"
                    ]
                )
                for div in ("kl", "squared_l2")
            ]
        )

    return theta


def _kernel_null(
    score: np.ndarray, bandwidth: float, B: int, rng: np.random.Generator
) -> np.ndarray:
    """``(B, 2)``: CE_KL and CE_2^2 of the Beta-kernel estimate on ``B`` calibrated draws.

    The targets are redrawn as Bernoulli(score) (consistency resampling, Vaicenavicius
    et al. 2019); :func:`_kernel_stat` evaluates each batch in one kernel pass.
    """
    m = score.shape[0]
    stat = _kernel_stat(score, bandwidth)
    out = np.empty((B, 2))
    step = max(1, min(B, _KERNEL_NULL_ENTRIES // max(m, 1)))
    for b0 in range(0, B, step):
        r = min(step, B - b0)
        out[b0 : b0 + r] = stat((rng.random((m, r)) < score[:, None]).astype(np.float64).T)
    return out


def _verdicts(
    metrics: Mapping[str, float],
    s: np.ndarray,
    t: np.ndarray,
    w: Any,
    ece_null: np.ndarray,
    sk: np.ndarray,
    tk: np.ndarray,
    kernel_bandwidth: float,
    B: int,
    seed: int,
) -> dict[str, Verdict]:
    """The verdicts of the ECE and of the two kernel estimates (:mod:`calipers.inference`).

    ECE: from the draws of its p-value, and ``B`` draws at the calibration curve fitted
    to the lens's (score, target) pairs (:mod:`calipers.inference.bias_correction`: the bias
    there gives the recommended number and its interval). CE_KL and CE_2^2: the same
    two kinds of draws on the kernel rows, with their bandwidth sensitivity (the
    estimate at ``_REPORT_BANDWIDTH_FACTORS`` times the bandwidth: the ends of the range
    of :func:`calipers.verdict`, two kernel passes instead of four).
    """
    out: dict[str, Verdict] = {}
    if B <= 0:
        return out
    if ece_null.size and math.isfinite(metrics["ece"]):
        stat = _ece_stat(s, w)
        world = _world_draws(
            s,
            t,
            w,
            B,
            np.random.default_rng([seed, 12]),
            stat,
            lambda q: float(stat(q[None, :])[0]),
        )
        out["ece"] = Verdict.from_draws(
            "ECE",
            metrics["ece"],
            ece_null,
            n=s.shape[0],
            world_draws=None if world is None else world.draws,
            world_estimand=None if world is None else world.estimand,
            refit_estimands=None if world is None else world.refits,
            world_model=None if world is None else world.model,
        )
    knull = _kernel_null(sk, kernel_bandwidth, B, np.random.default_rng([seed, 11]))
    kstat = _kernel_stat(sk, kernel_bandwidth)

    def kbatch(T: np.ndarray) -> np.ndarray:
        out_ = np.empty((T.shape[0], 2))
        step = max(1, _KERNEL_NULL_ENTRIES // max(sk.shape[0], 1))
        for i0 in range(0, T.shape[0], step):
            out_[i0 : i0 + step] = kstat(T[i0 : i0 + step])
        return out_

    kworld = _world_draws(
        sk,
        tk,
        None,
        B,
        np.random.default_rng([seed, 13]),
        kbatch,
        _kernel_estimand(sk, kernel_bandwidth),
    )
    ones = np.ones((1, sk.shape[0]))
    sens: dict[str, list[tuple[float, float]]] = {"ce_kl": [], "ce_l2sq": []}
    for f in _REPORT_BANDWIDTH_FACTORS:
        h = kernel_bandwidth * f
        if f == 1.0:
            kv = (metrics["ce_kl"], metrics["ce_l2sq"])
        else:
            row = _rs.beta_kernel_values(sk, tk, h)(ones)[0]
            kv = (float(row[0]), float(row[1]))
        sens["ce_kl"].append((h, kv[0]))
        sens["ce_l2sq"].append((h, kv[1]))
    for c, key in enumerate(("ce_kl", "ce_l2sq")):
        if math.isfinite(metrics[key]) and np.all(np.isfinite(knull[:, c])):
            good = kworld is not None and bool(np.all(np.isfinite(kworld.draws[:, c])))
            out[key] = Verdict.from_draws(
                COLUMNS[key],
                metrics[key],
                knull[:, c],
                n=sk.shape[0],
                world_draws=kworld.draws[:, c] if good and kworld else None,
                world_estimand=float(kworld.estimand[c]) if good and kworld else None,
                refit_estimands=kworld.refits[:, c] if good and kworld else None,
                world_model=kworld.model if good and kworld else None,
                bandwidth=kernel_bandwidth,
                bandwidth_sensitivity=sens[key],
            )
    return out


def _paired_t(d: np.ndarray, w: np.ndarray | None) -> tuple[float, float, float]:
    """(mean, low, high): paired t-interval of the (weighted) mean of per-row differences.

    ``mean +- t_{n-1, 0.975} se`` with ``se = s / sqrt(n)`` (weights: the ratio-estimator
    standard error ``sqrt(n / (n - 1) sum w^2 (d - mean)^2) / sum w``). Non-finite
    differences decide by themselves: +inf anywhere (the recalibrated NLL is infinite,
    the uncalibrated one not) gives (inf, inf, inf); NaN (both infinite) gives NaN.
    """
    from scipy.special import stdtrit

    if np.isnan(d).any() or (np.isposinf(d).any() and np.isneginf(d).any()):
        return (math.nan, math.nan, math.nan)
    if np.isinf(d).any():
        v = math.inf if np.isposinf(d).any() else -math.inf
        return (v, v, v)
    n = d.shape[0]
    ww = np.ones(n) if w is None else w
    keep = ww > 0
    d, ww = d[keep], ww[keep]
    n = d.shape[0]
    mean = float(np.dot(ww, d) / ww.sum())
    if n < 2:
        return (mean, -math.inf, math.inf)
    se = math.sqrt(n / (n - 1) * float(np.sum(ww**2 * (d - mean) ** 2))) / float(ww.sum())
    q = float(stdtrit(n - 1, 0.5 + CONFIDENCE_LEVEL / 2))
    return (mean, mean - q * se, mean + q * se)


def _basic(estimate: float, boot: np.ndarray, floor: float | None) -> tuple[float, float] | None:
    """The basic interval (NaN-free finite draws only), clipped below at ``floor``."""
    if not math.isfinite(estimate) or not np.all(np.isfinite(boot)):
        return None
    parts = _rs.interval(estimate, boot, None, INTERVAL_METHOD, CONFIDENCE_LEVEL)
    lo, hi = parts.low, parts.high
    return (lo if floor is None else max(lo, floor), hi)


def _bootstrap(
    data: _RowData,
    metrics: Mapping[str, float],
    B: int,
    seed: int,
    *,
    paired: Mapping[str, np.ndarray],
    say: Any = None,
) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float, float]]]:
    """Basic 95 % bootstrap intervals of every column and paired ones of ``paired``.

    The resamples are multinomial row weights (docs/intervals.md): the same
    ``seed`` gives the same resamples for every row of a model, so the intervals of
    the differences ``paired`` (per-row NLL and Brier differences to the uncalibrated
    row) are paired. The kernel estimates resample their own (subsampled) rows; their
    values come from :func:`_suite` (``kernel_counts``). Returns ``(intervals,
    differences)``; a column whose value or resamples are not finite gets no interval.
    """
    P = data.P
    n = P.n_samples
    base = None if P.sample_weight is None else np.asarray(P.sample_weight, dtype=np.float64)
    evs: dict[str, Any] = {}
    for spec in _DIRECT:
        evs[str(spec.report)] = _rs.evaluator(spec.function, P, {})[0]
    for key, d in paired.items():
        if np.all(np.isfinite(d)):
            evs["diff_" + key] = _rs.mean_of_terms(d)
    vals: dict[str, list[np.ndarray]] = {k: [] for k in evs}
    done = 0
    for C in _rs.bootstrap_counts(np.random.default_rng(seed), n, B):
        W = C if base is None else C * base
        for k, ev in evs.items():
            vals[k].append(ev(W))
        done += C.shape[0]
        if say is not None:
            say(f"bootstrap {done}/{B} resamples")
    boot = {k: np.concatenate(v) for k, v in vals.items()}
    boot["rbs"] = np.sqrt(boot["brier"])
    if data.kernel_boot is not None:
        for j, key in enumerate(("ce_kl", "ce_l2sq", "refinement_kl")):
            boot[key] = data.kernel_boot[:, j]
    intervals: dict[str, tuple[float, float]] = {}
    for key in _INTERVAL_COLUMNS:
        if key not in boot:
            continue
        got = _basic(metrics[key], boot[key], 0.0)
        if got is not None:
            intervals[key] = got
    differences: dict[str, tuple[float, float, float]] = {}
    for key, d in paired.items():
        if "diff_" + key not in boot:
            differences[key] = _paired_t(d, base)
            continue
        est = float(_rs.mean_of_terms(d)(np.ones((1, n)) if base is None else base[None, :])[0])
        got = _basic(est, boot["diff_" + key], None)
        differences[key] = (est, *got) if got is not None else _paired_t(d, base)
    return intervals, differences


def _as_pair(name: str, value: Any) -> tuple[Any, Any]:
    if isinstance(value, Predictions):
        return value, None
    if not (isinstance(value, Sequence) and len(value) == 2):
        raise CalibrationInputError(
            f"model {name!r}: give (scores, labels) or a calipers.Predictions; got {type(value).__name__}"
        )
    return value[0], value[1]


def report(
    models: Mapping[str, Any],
    *,
    logits: bool | Mapping[str, bool] = False,
    classes: Any = None,
    calibration: Mapping[str, Any] | None = None,
    recalibrators: Sequence[Any] = (),
    n_bootstrap: int = 0,
    null_resamples: int = 200,
    kernel_max_n: int = 5000,
    kernel_bandwidth: float = 0.02,
    figures: bool = False,
    progress: bool = False,
    seed: int = 0,
    verdicts: bool = True,
    clinical: bool = False,
) -> Report:
    """Compute the standard suite for every model (and every recalibration of it).

    Chidambaram & Ge (2024) §6: report accuracy, a calibration error and the matching proper
    score together; Chidambaram & Ge (2024) Table 1 layout (rows = model x method) when
    ``recalibrators`` are given.

    Parameters
    ----------
    models : mapping of str to (scores, labels) or Predictions
        The test predictions of each model.
    logits : bool or mapping of str to bool, default False
        Whether each model's scores (test and calibration) are logits.
    classes : array-like or fitted classifier, or mapping of str to those, optional
        The class of each column of the scores (test and calibration), in
        order (1-D scores: ``[negative, positive]``), or a fitted scikit-learn
        classifier (its ``classes_``); a mapping gives each model its own.
        Labels are then read as these classes (strings, any integers).
        Default: labels are column indices.
    calibration : mapping of str to (scores, labels), optional
        Each model's calibration split; needed for ``recalibrators``.
    recalibrators : sequence of Recalibrator, default ()
        Unfitted recalibrators (e.g. ``cp.TemperatureScaling()``); each is
        cloned, fitted on the model's calibration split and evaluated on its
        test predictions.
    n_bootstrap : int, default 0
        Basic 95 % bootstrap intervals (``[2 e - q(0.975), 2 e - q(0.025)]``,
        lower end clipped at 0) from this many resamples of the test rows, the same
        resamples for every method of a model (paired); the kernel estimates
        resample their own subsample. docs/intervals.md has the coverage they
        reach on predictors with a known calibration error and when not to trust
        them (near a calibration error of 0: read the ECE p-value).
    null_resamples : int, default 200
        Draws of the calibrated null for ``ece_p_value`` (0 disables it).
    kernel_max_n : int, default 5000
        Rows used for the kernel estimates (seeded subsample beyond it).
    kernel_bandwidth : float, default 0.02
        Beta-kernel bandwidth (Popordanoska et al.'s (2024) CIFAR value).
    figures : bool, default False
        Also draw, per row, the reliability diagram, the smooth reliability
        diagram and the calibration-sharpness diagram (needs matplotlib); they
        are embedded in :meth:`Report.to_html` and written by :meth:`Report.save`.
    progress : bool, default False
        Report progress on stderr: a tqdm bar on a terminal; one line per step
        (fitting a method, the suite of a row, the bootstrap) when stderr is not a
        terminal (logs, CI).
    seed : int, default 0
    verdicts : bool, default True
        Give the ECE, CE_KL and CE_2^2 of every row a verdict (:func:`calipers.verdict`:
        "resolved", "not distinguishable from calibrated at this n" or "cannot
        resolve: the estimator's bias at this n exceeds the estimate's scale", with the
        reason), from ``null_resamples`` calibrated draws (none when it is 0): the
        ECE's are the draws of its p-value (no extra cost); the kernel estimates' cost
        one more kernel pass with ``null_resamples`` target columns on the kernel rows
        and two passes for the bandwidth sensitivity (bandwidth x 1/2 and x 2).
        Measured on 2 shared CPU cores at 5000 kernel rows and 200 draws (n = 10 000,
        10 classes): 4 s per row without verdicts, 11 s with; ``False`` turns them off.
    clinical : bool, default False
        Add the section "Calibration hierarchy (Van Calster et al. 2016)": for every
        row (each model, uncalibrated and after each method) the calibration
        hierarchy of :func:`calipers.clinical.calibration_hierarchy` on its test
        probabilities (binary: one block; multiclass: one per class, one-vs-rest),
        after the figures: an overview table, then per block the hierarchy's
        sentences, the table of its levels and, with ``figures``, the clinical
        calibration diagram (:func:`calipers.diagrams.clinical_calibration_diagram`).
        Off, the report is what it was without the keyword.

    A recalibrator that cannot be applied to a model (e.g. a logit method given
    probabilities with exact zeros) gives a row of NaN with the reason as a flag.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(400, 3)) * 2
    >>> y = rng.integers(0, 3, 400)
    >>> rep = cp.report({"model": (z, y)}, logits=True, null_resamples=50)
    >>> rep.row("model").metrics["ece"] == cp.ece(z, y, logits=True)
    True
    >>> md = rep.to_markdown()  # the summary per model, then the table
    >>> print(next(line for line in md.splitlines() if line.startswith("|"))[:51])
    | model | method | n | Accuracy | NLL | Brier | RBS
    """
    options = _Options(
        n_bootstrap=n_bootstrap,
        null_resamples=null_resamples,
        kernel_max_n=kernel_max_n,
        kernel_bandwidth=kernel_bandwidth,
        figures=figures,
        seed=seed,
        verdicts=verdicts,
    )
    _check_arguments(models, options, recalibrators, calibration)
    rows: list[ReportRow] = []
    figs: dict[str, bytes] = {}
    lenses: set[str] = set()
    prog = _Progress(progress)
    blocks: list[Any] = []
    for mi, (name, value) in enumerate(models.items()):
        model = _read_model(name, value, logits, classes)
        variants = _variants(model, recalibrators, calibration, prog)
        lenses.add(_lens_name(model.P))
        rows += _model_rows(model, mi, variants, options, prog, figs)
        if clinical:
            blocks += _clinical(name, variants, figures, prog, figs)
    _flag(rows)
    settings = _settings(lenses, options)
    if clinical:
        settings["clinical"] = _CLINICAL_SETTING
    return Report(rows, settings, figures=figs, clinical=blocks)


#: The report's ``settings["clinical"]`` (with ``clinical=True``).
_CLINICAL_SETTING = (
    "calibration hierarchy (Van Calster et al. 2016) of each row's test probabilities, "
    "calipers.clinical.calibration_hierarchy with its defaults (95 % intervals, loess "
    "curve, 10 groups of risk, no belt); multiclass: one-vs-rest per class"
)


def _clinical(
    name: str,
    variants: list[tuple[str, Predictions | str]],
    figures: bool,
    prog: _Progress,
    figs: dict[str, bytes],
) -> list[Any]:
    """The clinical blocks of one model's rows (:mod:`._clinical_section`); their
    diagrams go into ``figs`` with ``figures``."""
    from ._clinical_section import clinical_blocks

    out: list[Any] = []
    first = variants[0][1]  # the model's own predictions: its class names
    classes = None if isinstance(first, str) else first.classes
    for method, Qv in variants:
        if isinstance(Qv, str):
            continue
        prog.line(f"{name} / {method}: calibration hierarchy")
        got, drawn = clinical_blocks(
            name,
            method,
            _rs.numpy_predictions(Qv),
            key_prefix=f"{_slug(name)}__{_slug(method)}",
            figures=figures,
            classes=classes,
        )
        out += got
        figs.update(drawn)
    return out


@dataclass(frozen=True)
class _Options:
    """The computing parameters of :func:`report` that every model shares."""

    n_bootstrap: int
    null_resamples: int
    kernel_max_n: int
    kernel_bandwidth: float
    figures: bool
    seed: int
    verdicts: bool


@dataclass(frozen=True)
class _Model:
    """One model's test predictions, as read, and how its scores are to be read."""

    name: str
    scores: Any  # the test scores as given (the recalibrators apply to them)
    P: Predictions
    is_logits: bool
    classes: Any


def _check_arguments(
    models: Mapping[str, Any],
    options: _Options,
    recalibrators: Sequence[Any],
    calibration: Mapping[str, Any] | None,
) -> None:
    """Refuse what :func:`report` cannot compute, before any work."""
    if not models:
        raise CalibrationInputError("report needs at least one model")
    for name, v in (
        ("n_bootstrap", options.n_bootstrap),
        ("null_resamples", options.null_resamples),
    ):
        check_size(v, name, "MAX_RESAMPLES", minimum=0)
    check_integer(options.kernel_max_n, "kernel_max_n", minimum=2)
    check_integer(options.seed, "seed", minimum=0)
    if recalibrators and not calibration:
        raise CalibrationInputError(
            "recalibrators need a calibration split per model (calibration=...)"
        )


def _read_model(name: str, value: Any, logits: bool | Mapping[str, bool], classes: Any) -> _Model:
    """The test predictions of model ``name``, validated (:func:`calipers.check_predictions`)."""
    is_logits = logits.get(name, False) if isinstance(logits, Mapping) else bool(logits)
    scores, labels = _as_pair(name, value)
    cls = classes.get(name) if isinstance(classes, Mapping) else classes
    P = (
        scores
        if isinstance(scores, Predictions)
        else check_predictions(scores, labels, logits=is_logits, classes=cls)
    )
    return _Model(name, scores, P, is_logits, cls)


def _variants(
    model: _Model,
    recalibrators: Sequence[Any],
    calibration: Mapping[str, Any] | None,
    prog: _Progress,
) -> list[tuple[str, Predictions | str]]:
    """``(method, predictions)`` of the model uncalibrated, then after each recalibrator
    fitted on its calibration split; the reason instead of predictions for a method that
    cannot be applied (``"not applicable: ..."``)."""
    name, scores, P, is_logits, cls = (
        model.name,
        model.scores,
        model.P,
        model.is_logits,
        model.classes,
    )
    variants: list[tuple[str, Predictions | str]] = [(UNCALIBRATED, P)]
    if not recalibrators:
        return variants
    if name not in calibration:  # type: ignore[operator]
        raise CalibrationInputError(f"no calibration split for model {name!r}")
    cs, cl = _as_pair(name, calibration[name])  # type: ignore[index]
    if cls is not None and cl is not None and not isinstance(cs, Predictions):
        # the recalibrators take column indices: map the labels once
        cl = check_predictions(cs, cl, logits=is_logits, validate=False, classes=cls).labels
    soft: dict[str, Any] = {}  # softmax of the logits, computed once per model
    for ri, rc in enumerate(recalibrators):
        prog.line(f"{name}: fitting {type(rc).__name__} ({ri + 1}/{len(recalibrators)})")
        try:
            fit_on, apply_to, kind = cs, scores, is_logits
            if is_logits and getattr(rc, "input", "logits") == "probs":
                if not soft:
                    soft["cal"] = to_numpy(check_predictions(cs, cl, logits=True).probs)
                    soft["test"] = to_numpy(P.probs)
                fit_on, apply_to, kind = soft["cal"], soft["test"], False
            fitted = type(rc)(**rc.get_params()).fit(fit_on, cl, logits=kind)
            probs = fitted.predict_proba(apply_to, logits=kind)
            Q: Predictions | str = check_predictions(probs, P.labels, validate=False)
        except CalibrationInputError as exc:
            Q = f"not applicable: {exc}"
            why = str(exc).split("; ", 1)[0].split(". ", 1)[0]
            why = why.removeprefix(type(rc).__name__ + " ")
            prog.line(f"{name}: {type(rc).__name__} not applicable: {why}")
        variants.append((type(rc).__name__, Q))
    return variants


def _model_rows(
    model: _Model,
    mi: int,
    variants: list[tuple[str, Predictions | str]],
    options: _Options,
    prog: _Progress,
    figs: dict[str, bytes],
) -> list[ReportRow]:
    """The rows of one model (the ``mi``-th), one per method: the suite, the intervals
    (bootstrap, or paired t-intervals of the differences to the uncalibrated row) and,
    with ``options.figures``, the figures (added to ``figs``)."""
    name, P = model.name, model.P
    seed, n_bootstrap = options.seed, options.n_bootstrap
    # one kernel subsample and one set of bootstrap resamples per model: every
    # method is measured on the same rows, so the intervals of differences are paired
    kernel_rows = _subsample(
        P.n_samples, options.kernel_max_n, np.random.default_rng(seed + 1000 * mi)
    )
    boot_seed = seed + 1000 * mi + 7
    kernel_counts = None
    if n_bootstrap:
        m_k = P.n_samples if kernel_rows is None else len(kernel_rows)
        kernel_counts = np.concatenate(
            list(_rs.bootstrap_counts(np.random.default_rng(boot_seed + 1), m_k, n_bootstrap))
        )
    rows: list[ReportRow] = []
    prog.start(name, len(variants))
    base: _RowData | None = None
    for vi, (method, Qv) in enumerate(variants):
        where = f"[{vi + 1}/{len(variants)}] {name} / {method}"
        if isinstance(Qv, str):
            prog.line(f"{where}: not applicable, no suite (the reason is in the notes)")
            nan = dict.fromkeys(COLUMNS, math.nan)
            rows.append(ReportRow(name, method, 0, nan, flags=[Qv]))
            prog.advance()
            continue
        prog.line(f"{where}: suite")
        s = seed + 1000 * mi + vi
        metrics, data = _suite(
            Qv,
            kernel_rows=kernel_rows,
            null_resamples=options.null_resamples,
            seed=s,
            kernel_counts=kernel_counts,
            with_verdicts=options.verdicts,
            kernel_bandwidth=options.kernel_bandwidth,
        )
        row = ReportRow(name, method, int(Qv.n_samples), metrics, verdicts=data.verdicts)
        paired: dict[str, np.ndarray] = {}
        if base is not None:
            with np.errstate(invalid="ignore"):  # inf - inf: both NLLs infinite (NaN)
                paired = {k: data.terms[k] - base.terms[k] for k in ("nll", "brier")}
        if n_bootstrap:
            row.intervals, row.differences = _bootstrap(
                data,
                metrics,
                int(n_bootstrap),
                boot_seed,
                paired=paired,
                say=lambda text, where=where: prog.line(f"{where}: {text}"),
            )
        else:
            w = data.P.sample_weight
            row.differences = {
                k: _paired_t(d, None if w is None else np.asarray(w, dtype=np.float64))
                for k, d in paired.items()
            }
        if base is None and method == UNCALIBRATED:
            base = data
        rows.append(row)
        if options.figures:
            prog.line(f"{where}: figures")
            figs.update(_figures(name, method, Qv))
        prog.advance()
    prog.close()
    return rows


def _settings(lenses: set[str], options: _Options) -> dict[str, Any]:
    """The report's ``settings``: how each number was computed, in words."""
    if lenses == {"binary"}:
        lens_text = "positive class, P(y = 1) against y"
    elif lenses == {"top_label"}:
        lens_text = "top label, max_k p_k against 1{argmax = y}"
    else:
        lens_text = "positive class (P(y = 1) against y) for 1-D input, top label otherwise"
    null_resamples, n_bootstrap = options.null_resamples, options.n_bootstrap
    settings = {
        "ece": f"{lens_text}; 15 equal-width bins, L1",
        "kernel": f"Beta kernel on the same lens, leave-one-out, bandwidth "
        f"{options.kernel_bandwidth}, at most {options.kernel_max_n} rows (seeded subsample)",
        "ece_p_value": "targets redrawn as Bernoulli(score) in the same lens",
        "null_resamples": null_resamples,
        "n_bootstrap": n_bootstrap,
        "seed": options.seed,
        "flags": "a proper score counts as worse after recalibration only when the 95 % "
        "paired interval of its difference to the uncalibrated row (same test rows) "
        "excludes 0: "
        + (
            "basic bootstrap interval on the report's resamples"
            if n_bootstrap
            else "t-interval of the mean per-row difference"
        ),
    }
    if options.verdicts and null_resamples:
        settings["verdicts"] = (
            f"ECE, CE_KL and CE_2^2 against {null_resamples} draws of a perfectly calibrated "
            "model with the same predictions (targets redrawn as Bernoulli(score) in the "
            "lens; kernel estimates on the kernel rows), and as many draws from a "
            "calibration curve fitted to the lens's (score, target) pairs, whose bias "
            "gives the recommended number and its 95 % interval: 'not distinguishable' "
            "when p > 0.05, 'resolved' when the interval excludes 0, 'cannot resolve' "
            "otherwise"
        )
    if n_bootstrap:
        settings["intervals"] = (
            f"95 % basic bootstrap intervals [2 e - q(0.975), 2 e - q(0.025)] from "
            f"{n_bootstrap} resamples of the test rows (lower end clipped at 0). They aim at "
            "the population value of each estimator; an upward-biased calibration error "
            "can have an interval below its own estimate. At a calibration error near 0 "
            "no bootstrap interval is reliable: read the ECE p-value (docs/intervals.md)"
        )
    return settings


def _figures(model: str, method: str, Q: Predictions) -> dict[str, bytes]:
    import io

    from ..diagrams import (
        calibration_sharpness_diagram,
        reliability_diagram,
        smooth_reliability_diagram,
    )
    from ..diagrams._style import plain_text

    out = {}
    makers: dict[str, Any] = {
        "reliability": reliability_diagram,
        "smooth": smooth_reliability_diagram,
        "sharpness": calibration_sharpness_diagram,
    }
    # Ctrl-C or kill waits for the end of each figure: raised inside matplotlib's
    # compiled drawing code, it would abort the process instead of stopping it cleanly
    with interrupts_deferred():
        import matplotlib.pyplot as plt

    for kind, make in makers.items():
        with interrupts_deferred():
            fig = make(Q, title=plain_text(f"{model} / {method}"))
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=150)
            plt.close(fig)
        out[f"{_slug(model)}__{_slug(method)}__{kind}"] = buf.getvalue()
    return out


class _Progress:
    """Progress on stderr: a tqdm bar on a terminal; one line per step otherwise.

    When stderr is not a terminal (a log file, CI, a pipe) a bar would be disabled
    and say nothing, so each step (fitting a method, the suite of a row, each batch
    of bootstrap resamples) is one line ``calipers report: ... (elapsed s)``.
    """

    def __init__(self, on: bool) -> None:
        self.on = on
        self.t0 = time.perf_counter()
        self.bar: Any = None
        isatty = getattr(sys.stderr, "isatty", None)
        self.tty = bool(on and isatty is not None and isatty())

    def start(self, name: str, total: int) -> None:
        if not self.tty:
            return
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is a dependency
            self.tty = False
            return
        self.bar = tqdm(
            total=total, desc=f"report: {name}", unit="row", leave=False, file=sys.stderr
        )

    def line(self, text: str) -> None:
        if not self.on:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(text)
            return
        dt = time.perf_counter() - self.t0
        print(f"calipers report: {text} ({dt:.1f} s)", file=sys.stderr, flush=True)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _diff_text(k: str, b: ReportRow, r: ReportRow) -> str:
    d, lo, hi = r.differences[k]
    change = f"{_LABELS[k]} {b.metrics[k]:.4f} -> {r.metrics[k]:.4f}"
    if not math.isfinite(d):
        return change
    pct = f"{100 * CONFIDENCE_LEVEL:g} %"
    return f"{change}, {d:+.4f}, {pct} paired interval [{lo:+.4f}, {hi:+.4f}]"


def _flag(rows: list[ReportRow]) -> None:
    """Add the report's flags (Chidambaram & Ge (2024) §3) to the rows.

    A proper score counts as worse only when the paired interval of its difference
    to the uncalibrated row lies above 0 (``ReportRow.differences``), so a change
    within the noise of the test rows never raises a flag.
    """
    base = {r.model: r for r in rows if r.method == UNCALIBRATED}
    for r in rows:
        p = r.metrics.get("ece_p_value", math.nan)
        if p > 0.05:
            r.flags.append(
                f"ECE {r.metrics['ece']:.4f} is within the noise of a calibrated model (p = {p:.3f})"
            )
        b = base.get(r.model)
        if b is None or r is b:
            continue
        worse = [k for k in ("nll", "brier") if k in r.differences and r.differences[k][1] > 0]
        if worse and not r.metrics["ece"] < b.metrics["ece"]:
            what = "; ".join(_diff_text(k, b, r) for k in worse)
            r.flags.append(
                f"recalibration made the proper score worse beyond the noise ({what}) without "
                "lowering the ECE: the method does not help on this split (overfitting a small "
                "calibration split is the usual cause)"
            )
        if r.metrics["ece"] < b.metrics["ece"]:
            if worse:
                what = "; ".join(_diff_text(k, b, r) for k in worse)
                r.flags.append(
                    f"calibration error fell (ECE {b.metrics['ece']:.4f} -> {r.metrics['ece']:.4f}) "
                    f"but the proper score got worse beyond the noise ({what}): the "
                    "Chidambaram & Ge (2024) pitfall"
                )
