"""The one input-validation layer of calipers.

Every metric, score and estimator passes its inputs through
:func:`check_predictions`, which turns any accepted input into one internal
form, :class:`Predictions`, and rejects everything else with a
:class:`CalibrationInputError` whose message says what is wrong and where (the
first offending row and value).

Accepted inputs
---------------
``probs``
    ``(n, k)`` class probabilities with ``k >= 2``, or ``(n,)`` holding
    P(y = 1) for a binary problem. NumPy arrays, array-likes and PyTorch
    tensors (any device). float16, float32 and float64 are kept as they are,
    without a copy (bin edges are then exact in that dtype; every sum is
    accumulated in float64).
``logits=True``
    the first argument holds logits (``(n, k)``, or ``(n,)`` binary logits);
    probabilities are derived with a numerically stable (log-)softmax or
    sigmoid and the logits are kept for methods that need them (exact NLL).
``labels``
    integers in ``[0, k)`` (integer or integral-float dtype), booleans for a
    binary problem, or a one-hot ``(n, k)`` matrix.
``sample_weight``
    non-negative finite ``(n,)`` weights with a positive total; a weight of 2
    means the same as the row repeated twice (scikit-learn's meaning).

Rules (each one has its own test)
---------------------------------
* no NaN or infinity; probabilities in ``[0, 1]``;
* each row of ``probs`` sums to 1 within ``sum_tol``, and every entry lies in
  ``[-sum_tol, 1 + sum_tol]`` (absolute; by default
  ``max(1e-4, (log2(k) + 2) * eps)`` with ``eps`` the machine epsilon of the
  input dtype, i.e. 1e-4 for float32/float64 and about 5e-3 to 1e-2 for
  float16: it admits float32 rounding such as 1.0000012 in files written from
  float32 models, and rejects real normalisation mistakes). Values inside the
  tolerance are kept as they are, not clipped; they fall in the outer bins;
* rounded exports: with the default tolerance, when a row misses it and every
  entry is a multiple of ``10**-d`` for some ``d`` in 1..6 (up to the float
  error of the dtype; the smallest such ``d`` is the printed precision), each
  row may instead be off by ``k * 0.5 * 10**-d + (log2(k) + 2) * eps``: the
  most that rounding ``k`` honest probabilities to ``d`` decimals can move a
  sum (e.g. 5e-4 for 4 decimals and k = 10). The values are kept as they
  are. The allowance is not used when ``k * 0.5 * 10**-d`` would exceed 0.05
  (1 decimal; 2 decimals with more than 10 classes, 3 with more than 100, 4
  with more than 1000): a rounding that coarse can no longer be told from a
  normalisation mistake, so pass ``sum_tol`` or ``renormalize=True`` then.
  Only float32 and float64 values are examined (float16's own tolerance
  already covers its rounding; for float32, ``d`` up to 5), and only after
  the fast check has failed, so valid inputs pay nothing for it. An explicit
  ``sum_tol`` is used as given;
* labels integral and in range; shapes consistent; ``n >= 1``; ``k >= 2``.

Nothing is clipped or renormalised unless the caller asks
(``renormalize=True``, ``clip=True``). Ties in the arg-max always resolve to
the lowest class index (NumPy's rule), in every namespace.

Fixing rejected probabilities
-----------------------------
The metrics take no ``clip``/``renormalize``/``sum_tol`` options of their own:
validate explicitly with ``check_predictions(probs, labels, clip=True)`` (or
``renormalize=True``, or a larger ``sum_tol``) and pass the
:class:`Predictions` it returns in place of ``probs``, with ``labels=None``;
every metric, diagram and recalibrator (``fit`` and ``predict_proba``)
accepts it. The error messages say exactly this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._backend import Array, argmax_rows, is_torch, take_rows

__all__ = [
    "CalibrationInputError",
    "Predictions",
    "check_predictions",
    "check_positive",
    "check_integer",
    "check_sample_weight",
    "check_size",
    "check_work",
    "DEFAULT_SUM_TOL",
    "MAX_BINS",
    "MAX_POINTS",
    "MAX_RESAMPLES",
    "MAX_WORK",
]

#: Default absolute tolerance on ``|sum_k p_ik - 1|``.
DEFAULT_SUM_TOL = 1e-4


class CalibrationInputError(ValueError):
    """Raised when predictions, labels or weights are not acceptable.

    A subclass of :class:`ValueError`, so ``except ValueError`` also catches it.
    """


@dataclass(frozen=True)
class Predictions:
    """Validated predictions in calipers' internal form.

    Attributes
    ----------
    probs : array
        ``(n, k)`` probabilities, or ``(n,)`` P(y = 1) for binary input, in
        the caller's namespace and dtype.
    labels : array
        ``(n,)`` int64 class indices in the same namespace/device as ``probs``.
    sample_weight : array or None
        ``(n,)`` float64 weights, or None for unit weights.
    logits : array or None
        The logits the probabilities were derived from, when given.
    n_classes : int
        Number of classes ``k`` (2 for binary input).
    classes : numpy.ndarray or None
        The class of each probability column (for binary input: the negative
        and the positive class) when labels were given with ``classes=``;
        None for integer labels read as column indices.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.validation import check_predictions
    >>> P = check_predictions(np.array([[0.9, 0.1], [0.3, 0.7]]), [0, 1])
    >>> P.n_samples, P.n_classes, P.binary
    (2, 2, False)
    """

    probs: Array
    labels: Array
    sample_weight: Array | None
    logits: Array | None
    n_classes: int
    _top: tuple[Array, Array] | None = field(default=None, repr=False, compare=False)
    classes: np.ndarray | None = field(default=None, compare=False)

    def top_label(self) -> tuple[Array, Array]:
        """Predicted class and its probability (the confidence) for every row.

        Ties resolve to the lowest class index; for binary input the predicted
        class is 1 when ``p > 0.5`` (so ``p = 0.5`` predicts class 0, as the
        arg-max of ``[1 - p, p]`` does) and is returned as a boolean array. Computed once and cached (validation
        computes it in the same pass as its own checks).
        """
        if self._top is None:
            p = self.probs
            if self.binary:
                # predicted class 1 iff p > 0.5 (bool); max(p, 1 - p) is the
                # confidence (1 - p is exact for p >= 0.5, so p = 0.5 gives 0.5)
                pred = p > 0.5
                conf = torch_maximum(p, 1 - p) if is_torch(p) else np.maximum(p, 1 - p)
            else:
                pred = argmax_rows(p)
                conf = take_rows(p, pred)
            object.__setattr__(self, "_top", (pred, conf))
        assert self._top is not None
        return self._top

    @property
    def binary(self) -> bool:
        """True when the probabilities are a 1-D P(y = 1) vector."""
        return self.probs.ndim == 1

    @property
    def n_samples(self) -> int:
        """Number of rows ``n``."""
        return int(self.probs.shape[0])

    @property
    def is_torch(self) -> bool:
        """True when the arrays are PyTorch tensors."""
        return is_torch(self.probs)

    def full_probs(self) -> Array:
        """``(n, k)`` probabilities; binary input becomes ``[1 - p, p]``."""
        if not self.binary:
            return self.probs
        p = self.probs
        if is_torch(p):
            import torch

            return torch.stack([1 - p, p], dim=1)
        return np.stack([1 - p, p], axis=1)


# --------------------------------------------------------------------------- helpers


def torch_maximum(a: Array, b: Array) -> Array:
    import torch

    return torch.maximum(a, b)


def _err(msg: str) -> CalibrationInputError:
    return CalibrationInputError(msg)


def _first_true(mask: np.ndarray) -> tuple[int, ...]:
    """Index tuple of the first True entry (row-major)."""
    flat = int(np.flatnonzero(mask.reshape(-1))[0])
    return tuple(int(i) for i in np.unravel_index(flat, mask.shape))


def _loc(idx: tuple[int, ...]) -> str:
    return f"row {idx[0]}" + (f", column {idx[1]}" if len(idx) > 1 else "")


def _as_array(x: Any, name: str) -> Array:
    if is_torch(x):
        return x
    if hasattr(x, "toarray") and hasattr(x, "nnz"):  # scipy.sparse (imported by the caller)
        raise _err(
            f"{name} is a sparse {type(x).__name__}; sparse input is not supported: pass a "
            "dense array (x.toarray())"
        )
    if hasattr(x, "__array_namespace__") and not isinstance(x, np.ndarray):
        x = np.asarray(x)
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged lists etc.
        raise _err(f"{name} could not be converted to an array: {exc}") from None
    if arr.dtype == object:
        raise _err(
            f"{name} must be numeric; got an array of Python objects (ragged or mixed input?)"
        )
    return arr


def _to_float(x: Array, name: str) -> Array:
    """Floating version of ``x``: floats kept (bfloat16 -> float32), ints/bools -> float64."""
    if is_torch(x):
        import torch

        if x.dtype in (torch.float16, torch.float32, torch.float64):
            return x
        if x.dtype == torch.bfloat16:
            return x.to(torch.float32)
        if x.is_complex():
            raise _err(f"{name} must be real-valued; got dtype {x.dtype}")
        return x.to(torch.float64)
    kind = x.dtype.kind
    if kind == "f":
        if x.dtype.itemsize > 8:
            return x.astype(np.float64)
        return x
    if kind in "iub":
        return x.astype(np.float64)
    complex_ = " (Complex data not supported)" if kind == "c" else ""
    raise _err(f"{name} must be a real numeric array; got dtype {x.dtype}{complex_}")


def _all_finite(x: Array) -> bool:
    """Whether every entry is finite; a tensor on a GPU is checked there (one value to the host)."""
    if is_torch(x) and x.device.type != "cpu":
        import torch

        return bool(torch.isfinite(x).all())
    return bool(np.isfinite(_np(x)).all())


def _np(x: Array) -> np.ndarray:
    return x.detach().cpu().numpy() if is_torch(x) else np.asarray(x)


#: How to use a fixed-up :class:`Predictions` (the metrics have no clip/renormalize options).
_USE_PREDICTIONS = (
    "Pass the Predictions it returns in place of probs (labels=None); every metric, "
    "diagram and recalibrator accepts it."
)

#: Largest rounding allowance on a row sum granted without being told (see the module docstring).
_MAX_ROUNDING = 0.05


def _decimals(P: np.ndarray, eps: float) -> int | None:
    """The printed precision ``d`` (1..6) of ``P``: every entry a multiple of ``10**-d``.

    "Multiple" up to the float error of the dtype (``eps``): ``|t - round(t)| <=
    2 eps |t|`` for ``t = 10**d x``. Only precisions the dtype resolves are tried
    (``4 eps 10**d <= 0.05``, so a value that merely happens to be close to a
    multiple passes with probability at most 5%); float16 and coarser dtypes are
    not examined. None when no such ``d`` exists, or when the entries are
    integers (0/1 rows carry no rounding).
    """
    if eps > float(np.finfo(np.float32).eps) * 1.0001:
        return None
    a = np.abs(np.asarray(P, dtype=np.float64).reshape(-1))
    head = a[:4096]
    for d in range(7):
        if 4.0 * eps * 10.0**d > 0.05:
            return None
        scale = 10.0**d
        ok = True
        for part in (head, a):  # a cheap look at the first entries before the full pass
            t = part * scale
            if not np.all(np.abs(t - np.rint(t)) <= 2.0 * eps * t):
                ok = False
                break
        if ok:
            return d if d > 0 else None
    return None


def _rounding_tol(P: np.ndarray, eps: float) -> tuple[float, int, float] | None:
    """``(tol, d, allowance)`` for ``(n, k)`` values printed with ``d`` decimals, else None.

    ``allowance = k * 0.5 * 10**-d`` is the most rounding can move a row sum;
    ``tol = allowance + (log2(k) + 2) * eps`` adds the float error. ``tol`` is
    ``inf`` when the allowance exceeds ``_MAX_ROUNDING`` (the caller refuses and
    says why).
    """
    d = _decimals(P, eps)
    if d is None or d < 2:  # 1 decimal: k * 0.05 >= 0.1 always exceeds the cap
        return None
    k = int(P.shape[1])
    allowance = k * 0.5 * 10.0**-d
    if allowance > _MAX_ROUNDING:
        return math.inf, d, allowance
    return allowance + (float(np.log2(k)) + 2) * eps, d, allowance


def _clip_advice(P: np.ndarray, sum_tol: float, check_sum: bool) -> str:
    """The ``check_predictions`` options that would make ``P`` acceptable after clipping."""
    opts = "clip=True"
    if check_sum and P.ndim == 2:
        s = np.clip(P, 0, 1).sum(axis=1, dtype=np.float64)
        if not np.all(np.abs(s - 1.0) <= sum_tol):
            opts = "clip=True, renormalize=True"
    return opts


def _diagnose_probs(
    P: np.ndarray, sum_tol: float, check_sum: bool, eps: float | None = None
) -> None:
    """Slow path: find the first offending entry and raise. Only called on failure.

    With ``eps`` (the machine epsilon of the caller's dtype; given only when the
    default tolerance applies), rows that miss ``sum_tol`` are checked against the
    rounding allowance of the module docstring, and the call returns without
    raising when every row is within it.
    """
    bad = ~np.isfinite(P)
    if bad.any():
        idx = _first_true(bad)
        raise _err(
            f"probs contains a non-finite value ({P[idx].item()!r}) at {_loc(idx)}; "
            "calibration metrics need finite probabilities"
        )
    bad = (P < -sum_tol) | (P > 1 + sum_tol)
    if bad.any():
        idx = _first_true(bad)
        raise _err(
            f"probs must lie in [0, 1]; found {P[idx].item()!r} at {_loc(idx)}. "
            "If these are logits, pass logits=True. If the values outside [0, 1] are "
            "rounding errors, clip them: validate with calipers.check_predictions(probs, "
            f"labels, {_clip_advice(P, sum_tol, check_sum)}). {_USE_PREDICTIONS}"
        )
    if check_sum:
        s = P.sum(axis=1, dtype=np.float64 if P.dtype != np.float16 else np.float32)
        dev = np.abs(s - 1.0)
        bad = ~(dev <= sum_tol)
        if bad.any():
            limit = sum_tol
            tol_note = f"tolerance {sum_tol:g}"
            rounding = _rounding_tol(P, eps) if eps is not None else None
            if rounding is not None:
                tol, d, allowance = rounding
                if math.isfinite(tol):
                    limit = max(tol, sum_tol)
                    if np.all(dev <= limit):
                        return
                    if allowance > sum_tol:  # the rounding widened the tolerance: say so
                        tol_note = (
                            f"tolerance {limit:.3g}, which allows for the rounding of "
                            f"{P.shape[1]} values given to {d} decimals"
                        )
                elif np.all(dev <= allowance + (float(np.log2(P.shape[1])) + 2) * (eps or 0.0)):
                    # the rows would pass as rounded values but for the cap: say so
                    tol_note += (
                        f"; the values have {d} decimals, and rounding {P.shape[1]} classes to "
                        f"{d} decimals can move a row sum by up to {allowance:g}, more than the "
                        f"{_MAX_ROUNDING:g} calipers allows for rounding without being told"
                    )
            i = int(np.flatnonzero(~(dev <= limit))[0])
            raise _err(
                f"row {i} of probs sums to {s[i]:.10g}, not 1 ({tol_note}). To divide each "
                "row by its sum, validate with calipers.check_predictions(probs, labels, "
                "renormalize=True); to accept the rows as they are, validate with "
                "calipers.check_predictions(probs, labels, sum_tol=TOL) and a larger TOL. "
                f"{_USE_PREDICTIONS}"
            )


#: An entry below this is evidence of logits: no probability, however badly
#: rounded, is this negative, while every row of log-probabilities has an entry
#: <= -log 2 (and real logits spread over several units).
_LOGIT_EVIDENCE = -0.5


def _read_kind(S: np.ndarray, eps: float) -> tuple[str | None, str]:
    """Read scores as ``"probs"`` or ``"logits"`` from their values, or say why not.

    ``S`` is a non-empty ``(n, k)`` or ``(n,)`` float32/float64 NumPy array and
    ``eps`` the machine epsilon of the dtype it arrived in. Returns
    ``(kind, why)``; ``kind`` is None when the values could be read both ways,
    and ``why`` is then the reason (otherwise the evidence), for messages.
    Non-finite values raise. The rule (tolerance ``tol`` as the default
    ``sum_tol`` of :func:`check_predictions`, rounding allowance included):

    * ``(n, k)``: probabilities when every row lies on the simplex; logits when
      some entry is below -0.5 and at most half of the rows sum to 1;
      otherwise ambiguous (non-negative scores that are not probability
      vectors, such as percentages or one-vs-rest outputs; entries that are
      only slightly negative; most rows summing to 1 but not all).
    * ``(n,)``: probabilities (P(y = 1)) when every value lies in ``[0, 1]``;
      logits when some value is below -0.5; otherwise ambiguous. (A value in
      ``[0, 1]`` is weak evidence on its own, so there is no majority rule as
      for rows summing to 1.)

    Cost for logits: one BLAS pass for the row sums (which is also the
    finiteness check) and a look at the first rows for a negative entry; the
    rest is O(n).
    """
    n = int(S.shape[0])
    if S.ndim == 1:
        tol = max(DEFAULT_SUM_TOL, 3 * eps)
        lo, hi = float(S.min()), float(S.max())
        if not (math.isfinite(lo) and math.isfinite(hi)):
            i = int(np.flatnonzero(~np.isfinite(S))[0])
            raise _err(f"scores must be finite; value {i} is {S[i].item()!r}")
        if lo >= -tol and hi <= 1 + tol:
            return "probs", f"every value lies in [0, 1] (within {tol:g}), so they are P(y = 1)"
        if lo < _LOGIT_EVIDENCE:
            j = int(np.argmin(S))
            return "logits", f"value {j} is {S[j].item()!r}, and no probability is negative"
        i = int(np.flatnonzero((S < -tol) | (S > 1 + tol))[0])
        return None, (
            f"value {i} is {S[i].item()!r}, outside [0, 1], but no value is below "
            f"{_LOGIT_EVIDENCE:g} as logits almost always are (percentages or other "
            "rescaled probabilities?)"
        )
    k = int(S.shape[1])
    tol = max(DEFAULT_SUM_TOL, (float(np.log2(k)) + 2) * eps)
    s = S @ np.ones(k, dtype=S.dtype)  # BLAS row sums; NaN and inf propagate
    if not np.isfinite(s).all():
        bad = ~np.isfinite(S)
        if bad.any():
            idx = _first_true(bad)
            raise _err(f"scores must be finite; entry {idx} is {S[idx].item()!r}")
    dev = np.abs(s - 1)
    on = dev <= tol
    n_on = int(on.sum())
    if n_on == n:
        lo, hi = float(S.min()), float(S.max())
        if lo >= -tol and hi <= 1 + tol:
            return "probs", f"every row lies on the probability simplex (within {tol:g})"
        idx = _first_true((S < -tol) | (S > 1 + tol))
        return None, (
            f"every row sums to 1 as probabilities do, but entry {idx} is "
            f"{S[idx].item()!r}, outside [0, 1]"
        )
    i = int(np.flatnonzero(~on)[0])
    off = f"row {i} sums to {float(s[i]):.6g}"
    # the smallest entry: a look at the first rows finds a logit below -0.5 at once;
    # only when it does not is the whole matrix read (for probabilities, min and max)
    lo = float(S[: max(1, (1 << 16) // k)].min())
    if lo >= _LOGIT_EVIDENCE:
        lo = float(S.min())
    if lo >= -tol and float(S.max()) <= 1 + tol:
        rounding = _rounding_tol(S, eps)
        if rounding is not None and math.isfinite(rounding[0]):
            s64 = S.sum(axis=1, dtype=np.float64)
            if np.all(np.abs(s64 - 1) <= max(rounding[0], tol)):
                return "probs", (
                    f"every row lies on the probability simplex, within the rounding of "
                    f"values given to {rounding[1]} decimals"
                )
        return None, (
            f"every entry lies in [0, 1], but {off}, not 1 (logits that all lie in [0, 1], or "
            "probabilities that are not normalised, such as one-vs-rest or multi-label outputs?)"
        )
    if 2 * n_on > n:
        return None, f"{n_on} of the {n} rows sum to 1 as probabilities do, but {off}"
    if lo < _LOGIT_EVIDENCE:
        return "logits", f"{off}, not 1, and an entry is {lo:.6g}; no probability is negative"
    if lo >= -tol:
        return None, (
            f"every entry is >= 0 as probabilities are, but {off}, not 1 (percentages, counts, "
            "or one-vs-rest outputs?)"
        )
    return None, (
        f"{off}, and the smallest entry is {lo:.6g}: negative, but not below "
        f"{_LOGIT_EVIDENCE:g} as logits almost always are"
    )


def _eps(x: Array) -> float:
    """Machine epsilon of the dtype ``x`` arrived in (float64 for non-floats)."""
    if is_torch(x):
        import torch

        return (
            float(torch.finfo(x.dtype).eps)
            if x.dtype.is_floating_point
            else float(np.finfo(np.float64).eps)
        )
    return float(np.finfo(x.dtype).eps) if x.dtype.kind == "f" else float(np.finfo(np.float64).eps)


def _softmax(z: Array) -> Array:
    if is_torch(z):
        import torch

        return torch.softmax(z, dim=1)
    # in row blocks, into one output array: no full-size temporaries beside the result
    e = np.empty(z.shape, dtype=z.dtype)
    step = max(1, (1 << 16) // max(1, z.shape[1]))
    for i in range(0, z.shape[0], step):
        b = e[i : i + step]
        np.subtract(z[i : i + step], z[i : i + step].max(axis=1, keepdims=True), out=b)
        np.exp(b, out=b)
        b /= b.sum(axis=1, keepdims=True)
    return e


def _sigmoid(z: Array) -> Array:
    if is_torch(z):
        import torch

        return torch.sigmoid(z)
    from scipy.special import expit

    return expit(z)


def resolve_classes(classes: Any, k: int | None = None) -> np.ndarray:
    """The classes of the probability columns, as a 1-D NumPy array.

    ``classes`` is an array-like of distinct labels, in the order of the
    columns of ``probs`` (for 1-D ``probs``: ``[negative, positive]``), or an
    object with a ``classes_`` attribute (a fitted scikit-learn classifier,
    whose ``predict_proba`` columns follow ``classes_``). ``k``, when given, is
    the number of columns the classes must name.

    Examples
    --------
    >>> from calipers.validation import resolve_classes
    >>> resolve_classes(["cat", "dog", "emu"]).tolist()
    ['cat', 'dog', 'emu']
    >>> resolve_classes(["cat", "cat"])
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: classes must be distinct; 'cat' appears at positions 0 and 1
    """
    if hasattr(classes, "classes_") and not isinstance(classes, np.ndarray):
        classes = classes.classes_
    if is_torch(classes):
        classes = classes.detach().cpu().numpy()
    try:
        c = np.asarray(classes)
    except (TypeError, ValueError) as exc:
        raise _err(f"classes could not be converted to an array: {exc}") from None
    if c.ndim != 1:
        raise _err(f"classes must be a 1-D list of labels; got shape {c.shape}")
    if c.shape[0] < 2:
        raise _err(f"classes must name at least 2 classes; got {c.tolist()!r}")
    if k is not None and c.shape[0] != k:
        what = (
            "1-D probs (P(y = 1)) need 2: [negative, positive]"
            if k == 2
            else f"probs has {k} columns"
        )
        raise _err(f"classes names {c.shape[0]} classes, but {what}")
    seen: dict[Any, int] = {}
    for i, v in enumerate(c.tolist()):
        j = seen.setdefault(v, i)
        if j != i:
            raise _err(f"classes must be distinct; {v!r} appears at positions {j} and {i}")
    return c


def _encode_labels(yn: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Positions in ``c`` of the labels ``yn`` (int64); an unknown label raises.

    Vectorised (a binary search in the sorted classes) where labels and
    classes compare as arrays; a dictionary lookup otherwise (mixed types).
    """
    try:
        order = np.argsort(c, kind="stable")
        cs = c[order]
        pos = np.minimum(np.searchsorted(cs, yn), c.shape[0] - 1)
        found = np.asarray(cs[pos] == yn, dtype=bool)
        if found.shape == yn.shape and found.all():
            return order[pos].astype(np.int64)
    except (TypeError, ValueError):
        pass
    index = {v: i for i, v in enumerate(c.tolist())}
    values = yn.tolist()
    out = np.empty(len(values), dtype=np.int64)
    for r, v in enumerate(values):
        try:
            out[r] = index[v]
        except (KeyError, TypeError):
            shown = c.tolist() if c.shape[0] <= 10 else [*c[:10].tolist(), "..."]
            raise _err(
                f"labels contain {v!r} at row {r}, which is not one of classes {shown}"
            ) from None
    return out


def _label_array(labels: Any) -> Array:
    """``labels`` as an array; 1-D object arrays (e.g. pandas string columns) are kept."""
    if is_torch(labels):
        return labels
    if hasattr(labels, "__array_namespace__") and not isinstance(labels, np.ndarray):
        labels = np.asarray(labels)
    try:
        arr = np.asarray(labels)
    except (TypeError, ValueError) as exc:
        raise _err(f"labels could not be converted to an array: {exc}") from None
    if arr.dtype == object and arr.ndim != 1:
        raise _err("labels must be a 1-D array; got an array of Python objects (ragged input?)")
    return arr


def _check_labels(
    labels: Any, n: int, k: int, binary: bool, like: Array, classes: Any = None
) -> Array:
    y = _label_array(labels)
    if is_torch(y) and not is_torch(like):
        y = y.detach().cpu().numpy()
    if classes is None and is_torch(y) and is_torch(like):
        on_device = _torch_class_indices(y, n, k, binary, like)
        if on_device is not None:
            return on_device
    yn = _np(y)
    if classes is not None and yn.ndim == 1:
        if yn.shape[0] != n:
            raise _err(f"labels has {yn.shape[0]} entries but probs has {n} rows")
        yn = _encode_labels(yn, resolve_classes(classes, k))
        y = yn
    elif yn.dtype.kind in "OUSMm":
        example = yn.reshape(-1)[0].item() if yn.size else None
        raise _err(
            f"labels are not class indices (dtype {yn.dtype}, e.g. {example!r} at row 0); "
            "pass classes=[...], the class of each column of probs in order (for 1-D probs: "
            "[negative, positive]; for a scikit-learn model: classes=model.classes_)"
        )
    if yn.ndim == 2 and yn.shape[1] == k and yn.shape[0] == n and k >= 2:
        # one-hot labels
        if not np.all((yn == 0) | (yn == 1)):
            idx = _first_true(~((yn == 0) | (yn == 1)))
            raise _err(
                f"one-hot labels must contain only 0 and 1; found {yn[idx].item()!r} at {_loc(idx)}"
            )
        rs = yn.sum(axis=1)
        if not np.all(rs == 1):
            i = int(np.flatnonzero(rs != 1)[0])
            raise _err(f"one-hot labels must have exactly one 1 per row; row {i} has {int(rs[i])}")
        yn = np.argmax(yn, axis=1)
    elif yn.ndim != 1:
        raise _err(
            f"labels must be a 1-D array of class indices (or a one-hot (n, {k}) matrix); "
            f"got shape {yn.shape}"
        )
    if yn.shape[0] != n:
        raise _err(f"labels has {yn.shape[0]} entries but probs has {n} rows")
    kind = yn.dtype.kind
    k_ok = False  # labels already known to be in [0, k)
    if kind == "b":
        if not binary and k != 2:
            raise _err(
                f"boolean labels are only accepted for binary problems; probs has {k} classes"
            )
        yi = yn.astype(np.int64)
    elif kind in "iu":
        yi = yn.astype(np.int64, copy=False)
    elif kind == "f" and (binary or k == 2) and (y01 := _binary_float_labels(yn)) is not None:
        yi = y01
        k_ok = k >= 2  # 0 and 1 are in [0, k)
    elif kind == "f":
        nonint = ~np.isfinite(yn) | (yn != np.round(yn))
        if nonint.any():
            i = int(np.flatnonzero(nonint)[0])
            raise _err(f"labels must be integers; found {yn[i].item()!r} at row {i}")
        yi = yn.astype(np.int64)
    else:
        raise _err(f"labels must be integers or booleans; got dtype {yn.dtype}")
    # two reductions, no n-sized temporaries; the mask only to name the offender
    # one reduction in the common case: the bitwise OR of non-negative labels is at least
    # their maximum, and it has the sign bit set as soon as one label is negative, so
    # 0 <= OR < k proves every label in range; otherwise min and max decide
    in_range = False
    if k_ok:
        in_range = True
    elif yi.shape[0]:
        r = int(np.bitwise_or.reduce(yi))
        in_range = 0 <= r < k or (int(yi.min()) >= 0 and int(yi.max()) < k)
    if yi.shape[0] and not in_range:
        out = (yi < 0) | (yi >= k)
        i = int(np.flatnonzero(out)[0])
        raise _err(f"labels must be in [0, {k}); found {int(yi[i])} at row {i}")
    if is_torch(like):
        import torch

        if is_torch(y) and y.dtype == torch.int64 and y.ndim == 1:
            return y.to(like.device)
        return torch.as_tensor(yi, device=like.device)
    return yi


#: rows per block of the fused float-label check (512 KiB of float64: stays in cache)
_LABEL_BLOCK = 1 << 16


def _binary_float_labels(yn: np.ndarray) -> np.ndarray | None:
    """Float labels that are all 0 or 1, as int64; ``None`` for anything else.

    The common binary case (pandas and torch targets are often float 0/1),
    fused into one pass over blocks that stay in cache: per block the minimum
    and the maximum put every value in [0, 1] (a NaN fails both comparisons),
    the cast truncates 1.0 to 1 and every value in [0, 1) to 0, and the
    non-zero values are all exactly 1 when there are as many of them as ones
    after the cast (integer counts, exact). The integer labels are then in
    range by construction. Anything else returns ``None`` and the general
    check names the offending label, with its message unchanged.
    """
    if yn.ndim != 1 or yn.shape[0] == 0 or yn.dtype.itemsize != 8:
        return None
    yi = np.empty(yn.shape[0], dtype=np.int64)
    for i in range(0, yn.shape[0], _LABEL_BLOCK):
        block = yn[i : i + _LABEL_BLOCK]
        if not (block.min() >= 0 and block.max() <= 1):
            return None
        out = yi[i : i + _LABEL_BLOCK]
        out[...] = block
        # non-zero bit patterns (an integer count, the fast one); -0.0 counts here and
        # sends its rare array to the general check, which accepts it
        if int(out.sum()) != int(np.count_nonzero(block.view(np.int64))):
            return None
    return yi


def _torch_class_indices(y: Any, n: int, k: int, binary: bool, like: Any) -> Any:
    """Integer (or boolean) 1-D label tensors checked on their own device.

    Returns the labels as int64 on ``like``'s device, or ``None`` for any other
    form (one-hot, float labels, ...), which the NumPy path checks. Only the
    minimum and the maximum come back to the host, so labels on a GPU are not
    copied to the CPU; a failing check falls back to the NumPy path, whose
    message names the offending row.
    """
    import torch

    if y.ndim != 1 or y.shape[0] != n or y.dtype.is_floating_point or y.dtype.is_complex:
        return None
    if y.dtype == torch.bool:
        if not binary and k != 2:
            return None
        return y.to(device=like.device, dtype=torch.int64)
    if n and not (int(y.min()) >= 0 and int(y.max()) < k):
        return None
    return y.to(device=like.device, dtype=torch.int64)


def check_sample_weight(sample_weight: Any, n: int, *, rows_of: str = "probs") -> np.ndarray | None:
    """Validate row weights and return them as float64 NumPy weights, rescaled if extreme.

    The one weight check of calipers: classification (:func:`check_predictions`)
    and regression (:func:`calipers.regression.check_gaussian`) inputs, files
    and recalibrators all pass their ``sample_weight`` here. A weight of 2
    means the same as the row repeated twice (scikit-learn's meaning).
    Weights must be a 1-D array of ``n`` real numbers (booleans read as 0 and
    1), finite, non-negative, with at least one positive. Weights whose
    largest entry lies outside ``[2**-256, 2**256]`` are multiplied by a
    power of two (:data:`WEIGHT_EXPONENT_LIMIT`) so that their sums and
    products can neither overflow nor underflow, while every ratio of
    weighted sums stays exactly what the given weights give (Murphy 1973 and
    every weighted mean read weights only through such ratios); ordinary
    weights are returned bit for bit.

    Parameters
    ----------
    sample_weight : array-like or tensor of shape (n,), or None
        The caller's weights; None means unit weights (returned as None).
    n : int
        The number of rows the weights must match.
    rows_of : str, default "probs"
        The argument whose rows the weights belong to, for the message on a
        length that differs (``"mean"`` for regression predictions).

    Returns
    -------
    numpy.ndarray or None
        ``(n,)`` float64 weights (a power-of-two multiple of the given ones),
        or None when ``sample_weight`` is None.

    Raises
    ------
    CalibrationInputError
        On a shape that is not ``(n,)``, a non-numeric dtype, a weight that is
        not finite or negative (the message names the first such row), or
        all weights 0.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.validation import check_sample_weight
    >>> check_sample_weight([1.0, 2.0], 2).tolist()
    [1.0, 2.0]
    >>> w = check_sample_weight([1e308, 1e308], 2)     # rescaled by 2**-1024: the sum is finite
    >>> bool(np.isfinite(w.sum())), float(w[0] / w[1])
    (True, 1.0)
    >>> check_sample_weight([1.0, -1.0], 2)
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: sample_weight must be non-negative; found -1.0 at row 1
    """
    if sample_weight is None:
        return None
    w = _as_array(sample_weight, "sample_weight")
    wn = _np(w)
    if rows_of != "probs" and wn.ndim == 1 and wn.shape[0] != n:
        raise _err(
            f"sample_weight has {wn.shape[0]} rows but {rows_of} has {n}; they must have the "
            "same length"
        )
    if wn.ndim != 1 or wn.shape[0] != n:
        raise _err(f"sample_weight must have shape ({n},); got {wn.shape}")
    if wn.dtype.kind not in "iufb":
        raise _err(f"sample_weight must be numeric; got dtype {wn.dtype}")
    wn = wn.astype(np.float64)
    bad = ~np.isfinite(wn)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _err(f"sample_weight must be finite; found {wn[i].item()!r} at row {i}")
    neg = wn < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise _err(f"sample_weight must be non-negative; found {wn[i].item()!r} at row {i}")
    wmax = float(wn.max()) if n else 0.0
    if not wmax > 0:
        raise _err(
            "sample_weight sums to 0 (every weight is zero); at least one sample needs a "
            "positive weight"
        )
    return _rescale_weights(wn, wmax)


def _check_weight(sample_weight: Any, n: int, like: Array) -> Array | None:
    """:func:`check_sample_weight`, as a tensor on ``like``'s device when ``like`` is one."""
    wn = check_sample_weight(sample_weight, n)
    if wn is not None and is_torch(like):
        import torch

        return torch.as_tensor(wn, device=like.device)
    return wn


#: Weights whose largest entry lies outside [2**-WEIGHT_EXPONENT_LIMIT,
#: 2**WEIGHT_EXPONENT_LIMIT] are rescaled by a power of two (see _rescale_weights).
WEIGHT_EXPONENT_LIMIT = 256


def _rescale_weights(w: np.ndarray, wmax: float) -> np.ndarray:
    """Weights scaled by a power of two when their size could overflow or underflow.

    Weights are rescaled only when the largest lies outside ``[2**-256,
    2**256]``: there a total of up to 2**60 rows, or the products of two
    weights in the pairwise kernel estimators, could overflow to ``inf`` or
    underflow to 0 (``1e308`` weights summed to ``inf`` and ``1e-320`` weights
    gave 0/0). Ordinary weights are returned bit for bit. The scale makes the
    largest weight lie in ``[0.5, 1)``; a power of two changes only the
    exponents, so every ratio of weighted sums (ECE and the other binned
    errors on fixed bins, NLL, Brier, accuracy, KS, MMCE, kernel regressions)
    is exactly what the original weights give. The estimators that read
    weights as repetition counts (equal-mass edges and k-d tree leaf sizes at
    rounded positions, the unbiased SKCE, the KDE rule-of-thumb bandwidth,
    SmoothECE's absolute density floor) depend on the weights' scale; weights
    beyond ``2**+-256`` have no meaningful scale as counts, and those
    estimators see the rescaled ones. Weights that fall below the smallest
    subnormal after scaling become 0, which changes a result by less than
    2**-1074 of the largest weight.
    """
    e = math.frexp(wmax)[1]  # wmax = m * 2**e, 0.5 <= m < 1
    if -WEIGHT_EXPONENT_LIMIT <= e <= WEIGHT_EXPONENT_LIMIT:
        return w
    return np.ldexp(w, -e)


# --------------------------------------------------------------------------- main entry


def check_positive(value: Any, name: str = "bandwidth") -> float:
    """``value`` as a float after checking it is a positive, finite real number.

    Booleans, strings, arrays and other non-numbers are refused rather than
    converted, so a setting is never silently reinterpreted.

    Examples
    --------
    >>> check_positive(0.05)
    0.05
    >>> check_positive(0, "bandwidth")
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: bandwidth must be a positive finite number; got 0
    """
    real = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )
    if not (real and math.isfinite(float(value)) and float(value) > 0):
        raise CalibrationInputError(f"{name} must be a positive finite number; got {value!r}")
    return float(value)


# --------------------------------------------------------------------------- cost guard
#
# Every integer setting that sizes a computation (bins, grid points, resamples,
# repeats) is checked against one of these named maxima by check_size before
# anything is allocated or looped over, and a computation whose size is a
# product of settings (rows x resamples, mean bins x variance bins) by
# check_work. A refusal is a CalibrationInputError naming the argument, its
# value and the maximum.

#: Largest number of bins, thresholds or cells of any binning or grid of
#: calipers (2**20: bins of width 1e-6 on [0, 1], finer than any estimate on
#: real data can resolve; the per-bin totals then take 8 MiB per array).
MAX_BINS = 1 << 20

#: Largest evaluation grid (points of a curve) any function accepts.
MAX_POINTS = 1 << 22

#: Largest number of resamples, label draws or repetitions (bootstrap,
#: consistency resampling, null draws, sweep repeats): 10**6. The Monte-Carlo
#: standard error of a p-value or of an interval's coverage from B draws is at
#: most ``0.5 / sqrt(B)``, 5e-4 at 10**6, below any difference worth reporting,
#: so more draws only add time: each draw is at least one evaluation of the
#: metric, 10 us to 1 ms, so 10**6 draws already take minutes to hours.
MAX_RESAMPLES = 10**6

#: Largest work of one call whose work is a product of sizes (rows x
#: resamples, rows x thresholds, rows x levels): 2**40, about 1.1e12
#: elementary evaluations. At the 1 to 5 ns per element of calipers'
#: vectorised inner loops that is 20 minutes to 1.5 hours of CPU, the same
#: order as the 1-hour refusal of the quadratic estimators
#: (:data:`calipers.estimators.quadratic_cost.REFUSE_SECONDS`).
MAX_WORK = 1 << 40

_LIMITS: dict[str, tuple[int, str]] = {
    "MAX_BINS": (MAX_BINS, "no binning or grid of calipers takes more"),
    "MAX_POINTS": (MAX_POINTS, "no evaluation grid of calipers takes more"),
    "MAX_RESAMPLES": (
        MAX_RESAMPLES,
        "the Monte-Carlo error of 10**6 draws, at most 5e-4, is below anything worth reporting",
    ),
    "MAX_WORK": (MAX_WORK, "about an hour of CPU"),
}


def check_size(value: Any, name: str, limit: str, *, minimum: int = 1) -> int:
    """``value`` as an int after checking it is an integer in ``[minimum, limit]``.

    The cost guard of one integer setting: ``limit`` names one of the maxima
    of this module, ``"MAX_BINS"`` (bins, thresholds, histogram cells),
    ``"MAX_POINTS"`` (points of a curve) or ``"MAX_RESAMPLES"`` (resamples,
    draws, repeats). The value is checked (as :func:`check_integer` does:
    booleans, floats and strings are refused) before anything is allocated,
    so ``n_resamples=10**9`` fails at once with a message naming the
    argument, the value and the maximum instead of running for days or
    raising :class:`MemoryError`.

    Parameters
    ----------
    value : Any
        The setting as the caller passed it.
    name : str
        Its name, for the message.
    limit : {"MAX_BINS", "MAX_POINTS", "MAX_RESAMPLES"}
        The named maximum.
    minimum : int, default 1

    Returns
    -------
    int

    Examples
    --------
    >>> from calipers.validation import check_size
    >>> check_size(200, "n_resamples", "MAX_RESAMPLES")
    200
    >>> check_size(10**9, "n_resamples", "MAX_RESAMPLES")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: n_resamples = 1000000000 is more than the maximum 1000000 (calipers.validation.MAX_RESAMPLES: ...)
    """
    maximum, why = _LIMITS[limit]
    v = check_integer(value, name, minimum=minimum)
    if v > maximum:
        raise CalibrationInputError(
            f"{name} = {v} is more than the maximum {maximum} (calipers.validation.{limit}: {why})"
        )
    return v


def check_work(
    name: str,
    value: Any,
    factors: Any,
    *,
    limit: str = "MAX_WORK",
    unit: str = "evaluations",
    advice: str = "",
) -> int:
    """Refuse, before allocating, a computation whose size is a product of settings.

    The cost guard of a product (rows x resamples, rows x thresholds, bins of
    the mean x bins of the variance): the product of ``factors`` must not
    exceed the named maximum ``limit`` (default :data:`MAX_WORK`). Python
    integers, so the product itself never overflows.

    Parameters
    ----------
    name : str
        The argument that made the product too large, for the message.
    value : Any
        Its value as the caller gave it.
    factors : sequence of (str, int)
        The factors of the product, each with what it counts.
    limit : str, default "MAX_WORK"
        The named maximum (``"MAX_WORK"``, ``"MAX_BINS"``, ...).
    unit : str, default "evaluations"
        What the product counts, for the message.
    advice : str, optional
        What to do instead, appended to the message.

    Returns
    -------
    int
        The product.

    Examples
    --------
    >>> from calipers.validation import check_work
    >>> check_work("n_bins", (5, 5), [("mean bins", 5), ("variance bins", 5)],
    ...            limit="MAX_BINS", unit="groups")
    25
    >>> check_work("n_bins", (2000, 2000), [("mean bins", 2000), ("variance bins", 2000)],
    ...            limit="MAX_BINS", unit="groups")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: n_bins = (2000, 2000) makes 2000 mean bins x 2000 variance bins = 4000000 groups, more than the maximum 1048576 (calipers.validation.MAX_BINS: ...)
    """
    maximum, why = _LIMITS[limit]
    total = 1
    for _, f in factors:
        total *= int(f)
    if total > maximum:
        parts = " x ".join(f"{int(f)} {what}" for what, f in factors)
        raise CalibrationInputError(
            f"{name} = {value!r} makes {parts} = {total} {unit}, more than the maximum "
            f"{maximum} (calipers.validation.{limit}: {why})" + (f"; {advice}" if advice else "")
        )
    return total


def check_integer(value: Any, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an int after checking it is an integer in ``[minimum, maximum]``.

    The one validator of integer settings (numbers of bins, resamples, points,
    classes ...). Python and NumPy integers are accepted; booleans (``True``
    is not 1 bin), floats (even integral ones such as ``15.0``), strings and
    arrays are refused rather than converted, so a setting is never silently
    reinterpreted.

    Parameters
    ----------
    value : Any
        The setting as the caller passed it.
    name : str
        Its name, for the message.
    minimum : int, default 1
    maximum : int, optional
        Inclusive upper bound (none by default).

    Examples
    --------
    >>> check_integer(15, "n_bins")
    15
    >>> check_integer(True, "n_bins")
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: n_bins must be an integer >= 1; got True (a bool)
    >>> check_integer(1.5, "n_bins")
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: n_bins must be an integer >= 1; got 1.5 (a float)
    """
    bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    integral = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not integral:
        raise CalibrationInputError(
            f"{name} must be an integer {bound}; got {value!r} (a {type(value).__name__})"
        )
    v = int(value)
    if v < minimum or (maximum is not None and v > maximum):
        raise CalibrationInputError(f"{name} must be an integer {bound}; got {v}")
    return v


def check_predictions(
    probs: Any,
    labels: Any,
    *,
    logits: bool = False,
    sample_weight: Any = None,
    renormalize: bool = False,
    clip: bool = False,
    sum_tol: float | None = None,
    validate: bool = True,
    classes: Any = None,
) -> Predictions:
    """Validate predictions and labels and return them in internal form.

    Parameters
    ----------
    probs : array-like or tensor, shape (n, k) or (n,)
        Class probabilities (rows on the simplex), or P(y = 1) for a binary
        problem. With ``logits=True``: logits of the same shapes. An existing
        :class:`Predictions` is returned unchanged (``labels`` must then be
        None).
    labels : array-like or tensor, shape (n,) or (n, k)
        Integer class indices in ``[0, k)``, booleans (binary), or one-hot
        rows; with ``classes``, any labels (strings, other integers).
    logits : bool, default False
        Interpret ``probs`` as logits; probabilities are computed with a
        numerically stable softmax (sigmoid for 1-D input) and the logits kept.
    sample_weight : array-like, shape (n,), optional
        Non-negative finite weights with a positive sum.
    renormalize : bool, default False
        Divide each row by its sum (after the finiteness and sign checks).
    clip : bool, default False
        Clip probabilities into ``[0, 1]`` (after the finiteness check).
    sum_tol : float, optional
        Absolute tolerance on ``|sum_k p_ik - 1|`` and on entries just outside
        ``[0, 1]``; default ``max(1e-4, (log2(k) + 2) * eps)`` with ``eps`` the
        machine epsilon of the input dtype (1e-4 for float32 and float64).
        With the default, float32/float64 values printed with ``d`` decimals
        (every entry a multiple of ``10**-d``, ``d <= 6``) may have row sums
        off by up to ``k * 0.5 * 10**-d + (log2(k) + 2) * eps`` instead, the
        most that honest rounding can do (5e-4 for 4 decimals and k = 10);
        not when that allowance exceeds 0.05. Values are never changed. An
        explicit ``sum_tol`` is used as given, without the allowance.
    validate : bool, default True
        Set to False only for trusted inputs: skips the value checks on
        ``probs`` (shapes and labels are still checked). Used by the
        ``validate=False`` fast path of every metric.
    classes : array-like or fitted classifier, optional
        The class of each column of ``probs``, in order (for 1-D ``probs``:
        ``[negative, positive]``), or a fitted scikit-learn classifier (its
        ``classes_``). Labels are then read as members of ``classes`` (strings,
        any integers) and become column indices; a label not in ``classes``
        raises. Without ``classes``, labels must be column indices.

    Returns
    -------
    Predictions

    Raises
    ------
    CalibrationInputError
        With a message naming the rule and the first offending row/value.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.validation import check_predictions
    >>> check_predictions(np.array([[0.5, 0.6]]), [0])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: row 0 of probs sums to 1.1, not 1 (tolerance 0.0001). To divide each row by its sum, validate with calipers.check_predictions(probs, labels, renormalize=True); ...
    >>> P = check_predictions(np.array([[0.5, 0.6]]), [0], renormalize=True)
    >>> np.round(P.probs, 4)
    array([[0.4545, 0.5455]])
    >>> rounded = np.array([[0.3333, 0.3333, 0.3333], [0.1667, 0.1667, 0.6667]])
    >>> check_predictions(rounded, [0, 2]).probs is rounded   # 4 decimals: accepted as is
    True
    >>> P = check_predictions(np.array([2.0, -1.0]), [1, 0], logits=True)
    >>> np.round(P.probs, 4)
    array([0.8808, 0.2689])
    """
    if isinstance(probs, Predictions):
        if labels is not None:
            raise _err("labels must be None when probs is already a Predictions object")
        return probs
    x0 = _as_array(probs, "probs")
    x = _to_float(x0, "probs")
    if x.ndim not in (1, 2):
        raise _err(f"probs must have shape (n, k) or (n,); got {tuple(x.shape)}")
    n = int(x.shape[0])
    if n == 0:
        raise _err("probs is empty (0 rows); at least one prediction is needed")
    binary = x.ndim == 1
    k = 2 if binary else int(x.shape[1])
    if not binary and k < 2:
        raise _err(
            f"probs has {k} column; calibration needs k >= 2 classes. For a binary "
            "problem pass P(y = 1) as a 1-D array of shape (n,)"
        )
    rounding_eps = None  # the rounding allowance applies to the default tolerance only
    if sum_tol is None:
        rounding_eps = _eps(x0)
        sum_tol = max(DEFAULT_SUM_TOL, (float(np.log2(k)) + 2) * rounding_eps)
    kept_logits = None
    if logits:
        z = x
        if validate and not _all_finite(z):
            zn = _np(z)
            idx = _first_true(~np.isfinite(zn))
            raise _err(f"logits contain a non-finite value ({zn[idx].item()!r}) at {_loc(idx)}")
        kept_logits = z
        x = _sigmoid(z) if binary else _softmax(z)
    else:
        if clip:
            xn = _np(x)
            if not np.isfinite(xn).all():
                _diagnose_probs(xn, sum_tol, False)
            x = x.clamp(0, 1) if is_torch(x) else np.clip(x, 0, 1)
        if renormalize:
            xn = _np(x)
            if binary:
                raise _err(
                    "renormalize=True needs (n, k) probabilities; binary input has no rows to normalise"
                )
            bad = ~np.isfinite(xn) | (xn < 0)
            if bad.any():
                _diagnose_probs(xn, sum_tol, False)
            s = x.sum(1, keepdim=True) if is_torch(x) else x.sum(axis=1, keepdims=True)
            zero = _np(s).reshape(-1) <= 0
            if zero.any():
                i = int(np.flatnonzero(zero)[0])
                raise _err(f"row {i} of probs sums to 0 and cannot be renormalised")
            x = x / s
    top = None
    try:
        if validate and not logits:
            top = _fast_check_probs(x, sum_tol, rounding_eps)
        y = _check_labels(labels, n, k, binary, x, classes)
    except CalibrationInputError as exc:  # the error path only: is it scikit-learn's order?
        hint = _swapped_hint(x, labels, bool(logits))
        if hint:
            raise _err(f"{hint}. As given: {exc}") from None
        raise
    w = _check_weight(sample_weight, n, x)
    return Predictions(
        probs=x,
        labels=y,
        sample_weight=w,
        logits=kept_logits,
        n_classes=k,
        _top=top,
        classes=None if classes is None else resolve_classes(classes, k),
    )


def _swapped_hint(x: Array, labels: Any, logits: bool) -> str:
    """The hint for ``metric(labels, probs)``, scikit-learn's order, or ``""``.

    Asked only once validation has failed: ``probs`` holds only non-negative
    integers (labels) and ``labels`` holds finite non-integer numbers (in
    ``[0, 1]`` unless ``logits``), of shape ``(n,)`` or ``(n, m)`` with every
    ``probs`` value below ``m``.
    """
    try:
        xn = _np(x)
        yn = np.asarray(_np(labels) if is_torch(labels) else labels)
        if xn.ndim != 1 or yn.dtype.kind != "f" or yn.shape[0] != xn.shape[0]:
            return ""
        if yn.ndim not in (1, 2) or not np.isfinite(yn).all() or not (yn != np.round(yn)).any():
            return ""
        if not (np.all(xn >= 0) and np.all(xn == np.round(xn))):
            return ""
        if not logits and not (yn.min() >= 0 and yn.max() <= 1):
            return ""
        if yn.ndim == 2 and not (yn.shape[1] >= 2 and xn.max() < yn.shape[1]):
            return ""
    except Exception:  # the hint never hides the error it explains
        return ""
    what = "logits" if logits else "probabilities"
    return (
        f"the arguments look swapped: probs holds only integers {int(xn.min())}..{int(xn.max())} "
        f"(labels?) and labels holds non-integer {what}. calipers takes (probs, labels), "
        "predictions first; scikit-learn's metrics take (y_true, y_prob), labels first: call "
        "e.g. calipers.ece(p, y), not calipers.ece(y, p)"
    )


def _fast_check_probs(
    x: Array, sum_tol: float, rounding_eps: float | None = None
) -> tuple[Array, Array] | None:
    """Check value rules in one blocked pass; return the top-label pair.

    For ``(n, k)`` NumPy input the matrix is read in blocks of rows; per
    block we take the row sums, the minimum and the row arg-max. Row sums
    within ``sum_tol`` of 1 imply finite entries; a minimum ``>= -sum_tol``
    plus row maxima (the top-label confidences, needed by most metrics anyway)
    ``<= 1 + sum_tol`` complete the range check. The arg-max and confidences are
    returned so the top-label lens does not read the matrix again. Any
    failure falls back to a slow diagnostic pass naming the first offending
    entry; that pass (only) also grants the rounding allowance of values
    printed with few decimals when ``rounding_eps`` is given (default
    tolerance), and then returns normally.
    """
    if is_torch(x):
        import torch

        if x.ndim == 1:
            ok = bool(torch.all((x >= -sum_tol) & (x <= 1 + sum_tol)))
        else:
            s = x.sum(dim=1, dtype=torch.float64)
            ok = bool(torch.all((s - 1).abs() <= sum_tol)) and bool(x.min() >= -sum_tol)
            ok = ok and bool(x.max() <= 1 + sum_tol)
        if not ok:
            _diagnose_probs(_np(x), sum_tol, x.ndim == 2, rounding_eps)
        return None
    if x.ndim == 1:
        lo, hi = x.min(), x.max()
        if not (lo >= -sum_tol and hi <= 1 + sum_tol):
            _diagnose_probs(x, sum_tol, False)
        return None
    n = x.shape[0]
    acc = np.float32 if x.dtype == np.float16 else x.dtype  # float16 sums in float32
    s = np.empty(n, dtype=acc)
    pred = np.empty(n, dtype=np.intp)
    # float32/float64 row sums as a BLAS matrix-vector product: SIMD (and
    # threaded), about half the cost of np.add.reduce along rows. Its rounding
    # (8e-7 at k = 1000 in float32, measured) is far inside sum_tol, and a row
    # that only *looks* off goes to _diagnose_probs, which re-checks with
    # float64 sums and raises only on a real violation.
    ones = np.ones(x.shape[1], dtype=acc) if acc == x.dtype else None
    lo = np.inf
    block = max(1, (1 << 18) // max(1, x.shape[1]))
    for i in range(0, n, block):
        b = x[i : i + block]
        if ones is not None:
            np.matmul(b, ones, out=s[i : i + block])
        else:
            np.add.reduce(b, axis=1, dtype=acc, out=s[i : i + block])
        lo = min(lo, b.min())
        np.argmax(b, axis=1, out=pred[i : i + block])
    conf = take_rows(x, pred)
    ok = bool(np.all(np.abs(s - 1) <= sum_tol)) and lo >= -sum_tol
    ok = ok and bool(conf.max() <= 1 + sum_tol)
    if not ok:
        _diagnose_probs(x, sum_tol, True, rounding_eps)
    return pred.astype(np.int64, copy=False), conf
