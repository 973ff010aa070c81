"""Calibration / test splits and out-of-fold recalibration.

A recalibrator must be fitted on data it is not evaluated on. These helpers
make the usual protocols reproducible without scikit-learn:

* :func:`calibration_split_indices` / :func:`calibration_split`: a seeded,
  label-stratified split into a calibration part and a test part (Chidambaram & Ge (2024)
  uses a 20 % / 80 % split of the evaluation set, Gruber & Buettner (2022) and Kull et al.
  2019 a fixed validation / test split);
* :func:`stratified_folds`: seeded, label-stratified K-fold assignment;
* :func:`cross_val_predict_proba`: out-of-fold recalibrated probabilities —
  every row is predicted by a copy of the recalibrator fitted on the other
  folds only (the recalibration analogue of scikit-learn's
  ``cross_val_predict``);
* :func:`cross_val_score`: a metric of the recalibrated held-out fold, per
  fold.

Everything is deterministic given ``seed`` (``numpy.random.default_rng``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .._backend import is_torch
from ..validation import CalibrationInputError, Predictions, _as_array, _check_labels, _np
from .base import Recalibrator

__all__ = [
    "CalibrationSplit",
    "calibration_split",
    "calibration_split_indices",
    "cross_val_predict_proba",
    "cross_val_score",
    "stratified_folds",
]


def _label_vector(labels: Any) -> np.ndarray:
    """int64 class indices from integer / boolean labels or a one-hot matrix.

    The rules and messages of the validation layer (:func:`calipers.check_predictions`),
    with the number of classes taken from the labels themselves (the largest
    label plus one, or the columns of a one-hot matrix).
    """
    y = _np(_as_array(labels, "labels"))
    if y.ndim == 2:
        return np.asarray(_check_labels(y, y.shape[0], max(2, y.shape[1]), False, y))
    if y.ndim != 1 or y.shape[0] == 0:
        raise CalibrationInputError(f"labels must be a non-empty (n,) array; got shape {y.shape}")
    if y.dtype.kind == "f":
        bad = ~np.isfinite(y) | (y != np.round(y))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CalibrationInputError(
                f"labels must be integers; found {y[i].item()!r} at row {i}"
            )
    k = 2
    if y.dtype.kind in "iuf" and float(y.min()) >= 0:
        k = max(2, int(y.max()) + 1)
    return np.asarray(_check_labels(y, y.shape[0], k, y.dtype.kind == "b", y))


def _n_calibration(calibration_size: float | int, n: int) -> int:
    if isinstance(calibration_size, (bool, np.bool_)):
        raise CalibrationInputError("calibration_size must be a fraction or a count, not a bool")
    if isinstance(calibration_size, (int, np.integer)):
        m = int(calibration_size)
    elif isinstance(calibration_size, (float, np.floating)) and 0 < calibration_size < 1:
        m = int(math.floor(float(calibration_size) * n + 0.5))
    else:
        raise CalibrationInputError(
            "calibration_size must be a fraction in (0, 1) or a number of rows; "
            f"got {calibration_size!r}"
        )
    if not 1 <= m <= n - 1:
        raise CalibrationInputError(
            f"calibration_size={calibration_size!r} gives {m} calibration rows out of {n}; "
            "both the calibration and the test part need at least one row"
        )
    return m


def calibration_split_indices(
    labels: Any,
    *,
    calibration_size: float | int = 0.5,
    stratify: bool = True,
    seed: int | np.random.Generator | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of a seeded (stratified) calibration / test split.

    ``m`` rows go to the calibration part: ``round(calibration_size * n)``
    (halves rounded up) for a fraction, or ``calibration_size`` itself for an
    integer. With ``stratify=True`` class ``c`` (``n_c`` rows) contributes
    ``floor(n_c m / n)`` rows plus one for the classes with the largest
    remainders ``n_c m mod n`` (largest-remainder apportionment, ties to the
    lower class index), so every class is split in the overall proportion up
    to one row; which rows go is drawn at random within each class.

    Parameters
    ----------
    labels : array-like of shape (n,)
        Integer class indices (or booleans, or a one-hot matrix).
    calibration_size : float in (0, 1) or int, default 0.5
        Fraction or number of rows for the calibration part; both parts must be
        non-empty.
    stratify : bool, default True
        Split every class in the same proportion; otherwise a plain random
        split.
    seed : int, Generator or None, default 0
        Seed of ``numpy.random.default_rng`` (a Generator is used as is).

    Returns
    -------
    (cal_index, test_index) : tuple of numpy.ndarray
        Sorted int64 row indices; disjoint, together ``0 .. n - 1``.

    Examples
    --------
    >>> from calipers.recalibration.split import calibration_split_indices
    >>> y = [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    >>> cal, test = calibration_split_indices(y, calibration_size=0.5, seed=0)
    >>> len(cal), len(test), sorted(set(cal) | set(test)) == list(range(10))
    (5, 5, True)
    >>> [int(sum(1 for i in cal if y[i] == c)) for c in (0, 1)]   # 4 * 5/10 = 2, 6 * 5/10 = 3
    [2, 3]
    """
    y = _label_vector(labels)
    n = y.shape[0]
    m = _n_calibration(calibration_size, n)
    rng = np.random.default_rng(seed)
    if not stratify:
        cal = np.sort(rng.permutation(n)[:m])
    else:
        classes, counts = np.unique(y, return_counts=True)
        prod = counts.astype(np.int64) * m
        take = prod // n
        rem = prod % n
        extra = m - int(take.sum())
        if extra:
            take[np.argsort(-rem, kind="stable")[:extra]] += 1
        parts = []
        for c, t in zip(classes, take, strict=True):
            idx = np.flatnonzero(y == c)
            parts.append(idx[rng.permutation(idx.shape[0])[:t]])
        cal = np.sort(np.concatenate(parts))
    mask = np.zeros(n, dtype=bool)
    mask[cal] = True
    return cal.astype(np.int64), np.flatnonzero(~mask).astype(np.int64)


class CalibrationSplit(NamedTuple):
    """The two parts of :func:`calibration_split` (``train_test_split`` order)."""

    scores_cal: Any
    scores_test: Any
    labels_cal: Any
    labels_test: Any


def _take(x: Any, idx: np.ndarray) -> Any:
    if is_torch(x):
        import torch

        return x[torch.as_tensor(idx, device=x.device)]
    return np.asarray(x)[idx]


def calibration_split(
    scores: Any,
    labels: Any,
    *,
    calibration_size: float | int = 0.5,
    stratify: bool = True,
    seed: int | np.random.Generator | None = 0,
) -> CalibrationSplit:
    """Split scores and labels into a calibration and a test part (seeded, stratified).

    The rows are chosen by :func:`calibration_split_indices` (see there for
    the apportionment rule) and keep their original order within each part.

    Parameters
    ----------
    scores : array-like or tensor of shape (n, k) or (n,)
        Probabilities or logits (anything indexable by rows; PyTorch tensors
        stay tensors).
    labels : array-like of shape (n,)
    calibration_size : float in (0, 1) or int, default 0.5
    stratify : bool, default True
    seed : int, Generator or None, default 0

    Returns
    -------
    CalibrationSplit
        ``(scores_cal, scores_test, labels_cal, labels_test)``, the order of
        scikit-learn's ``train_test_split``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.split import calibration_split
    >>> z = np.arange(20.0).reshape(10, 2)
    >>> y = np.array([0, 1] * 5)
    >>> s = calibration_split(z, y, calibration_size=0.4, seed=1)
    >>> s.scores_cal.shape, s.scores_test.shape, np.bincount(s.labels_cal).tolist()
    ((4, 2), (6, 2), [2, 2])
    """
    # only split here, not read: the scores may be anything indexable by rows
    shape = tuple(scores.shape) if is_torch(scores) else np.shape(_as_array(scores, "scores"))
    if len(shape) == 0:
        raise CalibrationInputError("scores must have one row per label; got a scalar")
    n = int(shape[0])
    y_np = _label_vector(labels)
    if y_np.shape[0] != n:
        raise CalibrationInputError(
            f"scores have {n} rows but labels have {y_np.shape[0]}; they must match"
        )
    cal, test = calibration_split_indices(
        y_np, calibration_size=calibration_size, stratify=stratify, seed=seed
    )
    return CalibrationSplit(
        _take(scores, cal), _take(scores, test), _take(labels, cal), _take(labels, test)
    )


def stratified_folds(
    labels: Any, n_splits: int = 5, *, seed: int | np.random.Generator | None = 0
) -> np.ndarray:
    """Fold number (0 .. n_splits - 1) of every row, stratified by label and seeded.

    The rows of each class are shuffled and dealt to the folds in turn,
    continuing with the next class where the previous one stopped; fold
    numbers are then permuted at random. Every class is thus split as evenly
    as possible (fold counts of a class differ by at most one) and fold sizes
    differ by at most one.

    Parameters
    ----------
    labels : array-like of shape (n,)
    n_splits : int, default 5
        Number of folds, ``2 <= n_splits <= n``.
    seed : int, Generator or None, default 0

    Returns
    -------
    numpy.ndarray of shape (n,), int64

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.split import stratified_folds
    >>> f = stratified_folds([0] * 6 + [1] * 4, n_splits=2, seed=0)
    >>> np.bincount(f).tolist(), np.bincount(f[:6]).tolist(), np.bincount(f[6:]).tolist()
    ([5, 5], [3, 3], [2, 2])
    """
    y = _label_vector(labels)
    n = y.shape[0]
    if int(n_splits) != n_splits or not 2 <= n_splits <= n:
        raise CalibrationInputError(
            f"n_splits must be an integer in [2, n = {n}]; got {n_splits!r}"
        )
    K = int(n_splits)
    rng = np.random.default_rng(seed)
    order = np.concatenate(
        [(idx := np.flatnonzero(y == c))[rng.permutation(idx.shape[0])] for c in np.unique(y)]
    )
    folds = np.empty(n, dtype=np.int64)
    folds[order] = rng.permutation(K)[np.arange(n) % K]
    return folds


def _clone(recalibrator: Recalibrator) -> Recalibrator:
    if not isinstance(recalibrator, Recalibrator):
        raise CalibrationInputError(
            f"expected a calipers Recalibrator; got {type(recalibrator).__name__}"
        )
    return type(recalibrator)(**recalibrator.get_params())


def _oof(
    recalibrator: Recalibrator,
    scores: Any,
    labels: Any,
    n_splits: int,
    seed: int | np.random.Generator | None,
    logits: bool | None,
    sample_weight: Any,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray], np.ndarray | None]:
    # validated once, on all rows, as fit validates (messages name the caller's rows; the
    # kind of scores is read once): S is then of the method's natural kind
    rc0 = _clone(recalibrator)
    if labels is None and not isinstance(scores, Predictions):
        raise CalibrationInputError(
            "cross-validation needs labels (labels=None only with a calipers.Predictions)"
        )
    rc0._check_params(type(rc0).__name__)
    S, y, w, kind, detected = rc0._read(scores, logits, labels, sample_weight)
    assert y is not None
    folds = stratified_folds(y, n_splits, seed=seed)
    out: np.ndarray | None = None
    test_sets = []
    for f in range(int(n_splits)):
        test = np.flatnonzero(folds == f)
        train = np.flatnonzero(folds != f)
        rc = _clone(recalibrator)  # fitted and applied to the rows read above, as they are
        rc._fit_read(S[train], y[train], None if w is None else w[train], kind, detected)
        p = rc._predict_read(S[test])
        if out is None:
            out = np.empty((S.shape[0],) + p.shape[1:], dtype=np.float64)
        out[test] = p
        test_sets.append(test)
    assert out is not None
    return out, y, folds, test_sets, w


def cross_val_predict_proba(
    recalibrator: Recalibrator,
    scores: Any,
    labels: Any,
    *,
    n_splits: int = 5,
    seed: int | np.random.Generator | None = 0,
    logits: bool | None = None,
    sample_weight: Any = None,
) -> np.ndarray:
    """Out-of-fold recalibrated probabilities (stratified K-fold, seeded).

    The rows are split into ``n_splits`` folds by :func:`stratified_folds`;
    for each fold a fresh copy of ``recalibrator`` (built from its
    ``get_params()``; the object passed in is not fitted) is fitted on the
    other folds and predicts the fold. Every row is thus recalibrated by a map
    that never saw it, so metrics of the result estimate the performance of
    the recalibration method on new data while using all rows for evaluation
    (scikit-learn's ``cross_val_predict(method="predict_proba")``).

    Parameters
    ----------
    recalibrator : Recalibrator
        Unfitted (or fitted; only its parameters are used) recalibrator.
    scores : array-like of shape (n, k) or (n,)
        Logits or probabilities, as the recalibrator's ``fit`` reads them.
    labels : array-like of shape (n,)
    n_splits : int, default 5
    seed : int, Generator or None, default 0
    logits : bool, optional
        Passed to ``fit`` (default: the method's natural input).
    sample_weight : array-like of shape (n,), optional
        The training rows' weights are passed to every fit.

    Returns
    -------
    numpy.ndarray
        Shape ``(n, k)`` (or ``(n,)`` for binary scores), row ``i`` predicted
        by the model that did not see fold ``folds[i]``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.mean_replacement import MeanReplacement
    >>> from calipers.recalibration.split import cross_val_predict_proba
    >>> from calipers.recalibration.split import stratified_folds
    >>> p = np.tile([[0.9, 0.1], [0.2, 0.8]], (4, 1))     # 8 rows, predictions 0, 1, 0, 1, ...
    >>> y = np.array([0, 1, 0, 1, 0, 1, 1, 0])            # the last two are wrong
    >>> q = cross_val_predict_proba(MeanReplacement(), p, y, n_splits=2, seed=0)
    >>> f = stratified_folds(y, 2, seed=0)                # the folds it used
    >>> right = p.argmax(1) == y
    >>> a_without = [right[f != k].mean() for k in (0, 1)]  # accuracy without fold k
    >>> bool(np.array_equal(q.max(axis=1), np.take(a_without, f)))
    True
    """
    out, _, _, _, _ = _oof(recalibrator, scores, labels, n_splits, seed, logits, sample_weight)
    return out


def cross_val_score(
    recalibrator: Recalibrator,
    scores: Any,
    labels: Any,
    *,
    metric: Callable[..., Any] | None = None,
    n_splits: int = 5,
    seed: int | np.random.Generator | None = 0,
    logits: bool | None = None,
    sample_weight: Any = None,
) -> np.ndarray:
    """A metric of the recalibrated held-out fold, for each of the stratified folds.

    Fits as :func:`cross_val_predict_proba` does and evaluates
    ``metric(probs_fold, labels_fold)`` (with ``sample_weight=`` the fold's
    weights when weights are given) on each held-out fold.

    Parameters
    ----------
    recalibrator : Recalibrator
    scores : array-like of shape (n, k) or (n,)
    labels : array-like of shape (n,)
    metric : callable, default :func:`calipers.nll`
        ``metric(probs, labels, **kw) -> float``, e.g. ``calipers.brier`` or
        ``calipers.ece``. The NLL is ``inf`` for a fold in which a true class
        gets probability exactly 0 (histogram binning, isotonic regression).
    n_splits : int, default 5
    seed : int, Generator or None, default 0
    logits : bool, optional
    sample_weight : array-like of shape (n,), optional

    Returns
    -------
    numpy.ndarray of shape (n_splits,)
        The metric per fold (fold numbers as :func:`stratified_folds`).

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.recalibration.mean_replacement import MeanReplacement
    >>> from calipers.recalibration.split import cross_val_score
    >>> p = np.tile([[0.9, 0.1], [0.2, 0.8]], (4, 1))
    >>> y = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    >>> # MRR keeps the arg-max, so these are the model's accuracies on the two folds
    >>> cross_val_score(MeanReplacement(), p, y, metric=cp.accuracy, n_splits=2).tolist()
    [0.75, 0.75]
    """
    if metric is None:
        from ..metrics.scores import nll

        metric = nll
    out, y, folds, test_sets, w = _oof(
        recalibrator, scores, labels, n_splits, seed, logits, sample_weight
    )
    vals = []
    for test in test_sets:
        kw = {} if w is None else {"sample_weight": w[test]}
        vals.append(float(metric(out[test], y[test], **kw)))
    return np.asarray(vals, dtype=np.float64)
