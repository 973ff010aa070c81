"""Predictive distributions of a regression target, one validated form per kind.

A probabilistic regression model states, for every row ``i``, a predictive
distribution ``F_i`` of the target ``y_i``. Models state it in different
forms, and each form is one class here, all with the same interface
(:class:`PredictiveDistribution`):

* :class:`Gaussian` -- a mean and a variance per row (Gruber & Buettner 2022,
  §5), the form the rest of :mod:`calipers.regression` has always read;
* :class:`Parametric` -- arrays of parameters of a named family (normal,
  Student t, Laplace, logistic, log-normal, gamma, Poisson, negative
  binomial) or any frozen :mod:`scipy.stats` distribution
  (:meth:`Parametric.from_scipy`), with the closed-form CRPS of each family
  (Gneiting et al. 2005; Baran & Lerch 2015; Wei & Held 2014);
* :class:`QuantileSet` -- predicted quantiles at fixed levels (quantile
  regression, gradient boosting with a quantile objective), with the
  rearrangement of crossing quantiles of Chernozhukov, Fernández-Val &
  Galichon 2010; :func:`central_interval` builds one from interval bounds;
* :class:`SampleEnsemble` -- members or draws per row (deep ensembles,
  MC dropout, posterior predictive draws, weather ensembles).

:func:`check_predictive` turns any of them (or Gaussian arrays, as before)
and the targets into :class:`ProbabilisticPredictions`, the input of the
calibration diagnostics. Every value is checked at construction; a
:class:`~calipers.validation.CalibrationInputError` names the argument, the
row and the value. Nothing is clipped or changed.

Examples
--------
>>> from calipers.regression import Gaussian, QuantileSet
>>> G = Gaussian([0.0, 1.0], std=[1.0, 2.0])
>>> G.cdf([0.0, 1.0]).tolist()
[0.5, 0.5]
>>> Q = QuantileSet([0.25, 0.5, 0.75], [[-1.0, 0.0, 1.0]])
>>> Q.cdf([0.5]).tolist(), Q.quantile(0.625).tolist()
([0.625], [0.5])
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._backend import is_torch
from ..validation import CalibrationInputError, check_sample_weight
from .inputs import (
    GaussianPredictions,
    _as_1d_float,
    check_gaussian,
    refuse_given,
    spread_by_name,
)

__all__ = [
    "PredictiveDistribution",
    "Gaussian",
    "Parametric",
    "QuantileSet",
    "SampleEnsemble",
    "central_interval",
    "ProbabilisticPredictions",
    "check_predictive",
    "PARAMETRIC_FAMILIES",
]

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


# --------------------------------------------------------------------------- helpers


def _as_2d_float(x: Any, name: str) -> np.ndarray:
    """``x`` as a 2-D float64 array of finite values, or an error naming ``name``."""
    if is_torch(x):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:
        raise CalibrationInputError(f"{name} could not be read as an array: {exc}") from None
    if arr.dtype.kind not in "iuf":
        raise CalibrationInputError(
            f"{name} must hold real numbers (integer or float); got dtype {arr.dtype}"
        )
    if arr.ndim != 2:
        raise CalibrationInputError(f"{name} must be 2-D (rows x columns); got shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if arr.shape[0] < 1:
        raise CalibrationInputError(f"{name} has no rows; at least one row is needed")
    if arr.shape[1] < 1:
        raise CalibrationInputError(f"{name} has no columns; at least one is needed")
    bad = ~np.isfinite(arr)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise CalibrationInputError(
            f"{name} must be finite; row {i}, column {j} is {float(arr[i, j])!r}"
        )
    return arr


def _check_level(level: Any) -> float:
    """One probability level in [0, 1] as a float, or a CalibrationInputError."""
    if isinstance(level, bool) or not isinstance(level, (int, float, np.integer, np.floating)):
        raise CalibrationInputError(
            f"level must be one number in [0, 1] (one level at a time); got {level!r}"
        )
    p = float(level)
    if not 0.0 <= p <= 1.0:
        raise CalibrationInputError(f"level must lie in [0, 1]; got {p!r}")
    return p


def _rows_index(rows: Any, n: int) -> Any:
    """A row selector for :meth:`PredictiveDistribution.take`, checked against ``n``."""
    if isinstance(rows, slice):
        return rows
    if is_torch(rows):
        rows = rows.detach().cpu().numpy()
    idx = np.asarray(rows)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise CalibrationInputError(
                f"rows as a boolean mask must have shape ({n},); got {idx.shape}"
            )
        if not idx.any():
            raise CalibrationInputError("rows selects no row; at least one row is needed")
        return idx
    if idx.dtype.kind not in "iu" or idx.ndim != 1:
        raise CalibrationInputError(
            f"rows must be a 1-D array of row indices, a boolean mask or a slice; got {rows!r}"
        )
    if idx.shape[0] < 1:
        raise CalibrationInputError("rows selects no row; at least one row is needed")
    out = (idx < -n) | (idx >= n)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise CalibrationInputError(
            f"rows entry {i} is {int(idx[i])}, outside the {n} rows of the distribution"
        )
    return idx


def _string(arrays: Mapping[str, Any], key: str) -> str:
    try:
        value = arrays[key]
    except KeyError:
        raise CalibrationInputError(f"arrays has no {key!r} entry") from None
    return str(np.asarray(value).item() if np.ndim(value) == 0 else value)


# --------------------------------------------------------------------------- the interface


class PredictiveDistribution(abc.ABC):
    """``n`` rows of predictive distributions of a regression target.

    The common interface of :class:`Gaussian`, :class:`Parametric`,
    :class:`QuantileSet` and :class:`SampleEnsemble`: every calibration
    diagnostic of :mod:`calipers.regression` reads a distribution through
    these methods only. Values are float64 NumPy arrays; ``y`` is one target
    per row (array-like or tensor of shape ``(n,)``).

    Attributes
    ----------
    kind : str
        ``"gaussian"``, ``"parametric"``, ``"quantiles"`` or ``"samples"``.

    Examples
    --------
    >>> from calipers.regression import PredictiveDistribution, SampleEnsemble
    >>> S = SampleEnsemble([[0.0, 1.0, 2.0, 3.0]])
    >>> isinstance(S, PredictiveDistribution), S.kind, S.n_samples
    (True, 'samples', 1)
    >>> S.cdf([1.0]).tolist(), S.cdf_left([1.0]).tolist()
    ([0.5], [0.25])
    """

    kind: ClassVar[str]

    # ---- shape

    @property
    @abc.abstractmethod
    def n_samples(self) -> int:
        """Number of rows ``n``."""

    @property
    def is_discrete(self) -> bool:
        """True when the distributions put mass on single points (counts, samples)."""
        return False

    def __len__(self) -> int:
        return self.n_samples

    def __repr__(self) -> str:
        return f"{type(self).__name__}(kind={self.kind!r}, n_samples={self.n_samples})"

    def _targets(self, y: Any, name: str = "targets") -> np.ndarray:
        """``y`` as ``(n,)`` finite float64 values, one per row."""
        arr = _as_1d_float(y, name)
        if arr.shape[0] != self.n_samples:
            raise CalibrationInputError(
                f"{name} has {arr.shape[0]} rows but the predictive distribution has "
                f"{self.n_samples}; give one target per row"
            )
        return arr

    # ---- distribution functions

    @abc.abstractmethod
    def cdf(self, y: Any) -> np.ndarray:
        """``F_i(y_i)`` for every row: ``(n,)`` values in [0, 1]."""

    def cdf_left(self, y: Any) -> np.ndarray:
        """``F_i(y_i-)``, the limit from the left: ``(n,)`` values in [0, 1].

        Equal to :meth:`cdf` for continuous distributions; smaller where
        ``y_i`` is an atom (a count, a member of an ensemble).
        """
        return self.cdf(y)

    def pit_interval(self, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """The range ``(lo, hi)`` of the randomised PIT of each row.

        The randomised PIT of Czado, Gneiting & Held 2009 is ``U ~
        Uniform(lo_i, hi_i)``: ``(F(y-), F(y))`` by default, one point when
        the distribution is continuous at ``y``. A :class:`SampleEnsemble`
        uses the rank of ``y`` among its members instead (see there).
        """
        return self.cdf_left(y), self.cdf(y)

    @abc.abstractmethod
    def quantile(self, level: float) -> np.ndarray:
        """The ``level``-quantile of every row, ``(n,)`` (one level at a time: O(n) memory)."""

    def mean(self) -> np.ndarray | None:
        """``(n,)`` means, or None when the kind has none."""
        return None

    def variance(self) -> np.ndarray | None:
        """``(n,)`` variances (squared target units), or None when the kind has none."""
        return None

    def logpdf(self, y: Any) -> np.ndarray:
        """``log f_i(y_i)`` (density, or mass for counts), in nats.

        Raises
        ------
        CalibrationInputError
            When the kind has no density (quantile sets, samples).
        """
        raise CalibrationInputError(
            f"a {type(self).__name__} ({self.kind}) has no density: the log score needs a "
            "Gaussian or a Parametric distribution; use the CRPS for this kind"
        )

    @abc.abstractmethod
    def crps(self, y: Any) -> np.ndarray:
        """Continuous ranked probability score of every row, ``(n,)``, in target units."""

    @abc.abstractmethod
    def take(self, rows: Any) -> PredictiveDistribution:
        """The distributions of the rows ``rows`` (indices, boolean mask or slice), same type."""

    @abc.abstractmethod
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays that rebuild the distribution with :meth:`from_arrays`.

        Always holds ``"kind"`` (a 0-d string array); the other entries are
        named after the constructor's arguments.
        """

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any]) -> PredictiveDistribution:
        """Rebuild a distribution from :meth:`to_arrays` (e.g. read back from a file).

        Called on :class:`PredictiveDistribution`, the ``"kind"`` entry picks
        the class; called on a subclass, it must name that class's kind.

        Examples
        --------
        >>> from calipers.regression import Gaussian, PredictiveDistribution
        >>> d = Gaussian([1.0], variance=[4.0]).to_arrays()
        >>> PredictiveDistribution.from_arrays(d).variance().tolist()
        [4.0]
        """
        kind = _string(arrays, "kind")
        classes: dict[str, type[PredictiveDistribution]] = {
            c.kind: c for c in (Gaussian, Parametric, QuantileSet, SampleEnsemble)
        }
        if kind not in classes:
            raise CalibrationInputError(
                f"arrays['kind'] is {kind!r}; expected one of {sorted(classes)}"
            )
        target = classes[kind]
        if cls is not PredictiveDistribution and target is not cls:
            raise CalibrationInputError(
                f"arrays hold a {kind!r} distribution, not a {cls.kind!r} one ({cls.__name__})"
            )
        return target._from_arrays(arrays)

    @classmethod
    @abc.abstractmethod
    def _from_arrays(cls, arrays: Mapping[str, Any]) -> PredictiveDistribution: ...


def _entry(arrays: Mapping[str, Any], key: str) -> Any:
    try:
        return arrays[key]
    except KeyError:
        raise CalibrationInputError(f"arrays has no {key!r} entry") from None


# --------------------------------------------------------------------------- Gaussian


class Gaussian(PredictiveDistribution):
    """Normal predictive distributions N(mean, variance), one per row.

    The form of Gruber & Buettner 2022 (§5): a predicted mean and variance per
    row. Its numbers are those of the Gaussian functions of
    :mod:`calipers.regression` bit for bit (the PIT ``Phi((y - mu) /
    sigma)``, the CRPS of Gneiting et al. 2005, the log score).

    Parameters
    ----------
    mean : array-like or torch.Tensor of shape (n,)
        Predicted means, in target units.
    variance : array-like of shape (n,), optional, keyword-only
        Predicted variances (> 0), squared target units.
    std : array-like of shape (n,), optional, keyword-only
        Predicted standard deviations (> 0), target units. Give exactly one
        of ``variance`` and ``std``.

    Examples
    --------
    >>> from calipers.regression import Gaussian
    >>> G = Gaussian([0.0, 0.0], std=[1.0, 2.0])
    >>> G.quantile(0.5).tolist(), G.variance().tolist()
    ([0.0, 0.0], [1.0, 4.0])
    >>> G.crps([0.0, 0.0]).round(6).tolist()
    [0.233695, 0.46739]
    """

    kind: ClassVar[str] = "gaussian"

    @spread_by_name
    def __init__(self, mean: Any, *, variance: Any = None, std: Any = None) -> None:
        if (variance is None) == (std is None):
            raise CalibrationInputError(
                "give exactly one of variance= (predicted variances, squared target units) and "
                "std= (predicted standard deviations, target units); got "
                + ("both" if variance is not None else "neither")
            )
        mu = _as_1d_float(mean, "mean")
        if mu.shape[0] < 1:
            raise CalibrationInputError("mean has no rows; at least one row is needed")
        # check_gaussian is the one Gaussian check: the same messages and the same
        # float64 values (std squared as there)
        G = check_gaussian(mu, variance=variance, std=std, targets=np.zeros(mu.shape[0]))
        # copies where the caller's own float64 arrays came through: the distribution
        # does not change when the caller's arrays do
        self._mean = G.mean.copy() if G.mean is mean else G.mean
        self._variance = G.variance.copy() if G.variance is variance else G.variance

    @classmethod
    def _trusted(cls, mean: np.ndarray, variance: np.ndarray) -> Gaussian:
        self = cls.__new__(cls)
        self._mean = mean
        self._variance = variance
        return self

    @property
    def n_samples(self) -> int:
        return int(self._mean.shape[0])

    @property
    def std(self) -> np.ndarray:
        """Predicted standard deviations ``sqrt(variance)``, target units."""
        return np.sqrt(self._variance)

    def _with(self, y: Any) -> GaussianPredictions:
        return GaussianPredictions(
            mean=self._mean, variance=self._variance, targets=self._targets(y), sample_weight=None
        )

    def cdf(self, y: Any) -> np.ndarray:
        from scipy.special import ndtr

        t = self._targets(y)
        return np.asarray(ndtr((t - self._mean) / self.std), dtype=np.float64)

    def quantile(self, level: float) -> np.ndarray:
        from scipy.special import ndtri

        p = _check_level(level)
        return self._mean + self.std * float(ndtri(p))

    def mean(self) -> np.ndarray:
        return self._mean.copy()

    def variance(self) -> np.ndarray:
        return self._variance.copy()

    def logpdf(self, y: Any) -> np.ndarray:
        from .scores import gaussian_nll_per_row

        return -gaussian_nll_per_row(self._with(y))

    def crps(self, y: Any) -> np.ndarray:
        from .scores import crps_gaussian_per_row

        return crps_gaussian_per_row(self._with(y))

    def take(self, rows: Any) -> Gaussian:
        idx = _rows_index(rows, self.n_samples)
        return Gaussian._trusted(self._mean[idx], self._variance[idx])

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "kind": np.asarray(self.kind),
            "mean": self._mean.copy(),
            "variance": self._variance.copy(),
        }

    @classmethod
    def _from_arrays(cls, arrays: Mapping[str, Any]) -> Gaussian:
        return cls(_entry(arrays, "mean"), variance=_entry(arrays, "variance"))


# --------------------------------------------------------------------------- Parametric

#: The named families of :class:`Parametric`: ``family -> ((parameter, rule), ...)``
#: with rule ``"real"``, ``"positive"`` or ``"probability"`` (in (0, 1]).
PARAMETRIC_FAMILIES: dict[str, tuple[tuple[str, str], ...]] = {
    "normal": (("loc", "real"), ("scale", "positive")),
    "student_t": (("df", "positive"), ("loc", "real"), ("scale", "positive")),
    "laplace": (("loc", "real"), ("scale", "positive")),
    "logistic": (("loc", "real"), ("scale", "positive")),
    "lognormal": (("meanlog", "real"), ("sdlog", "positive")),
    "gamma": (("shape", "positive"), ("rate", "positive")),
    "poisson": (("mu", "positive"),),
    "negative_binomial": (("n", "positive"), ("p", "probability")),
}

_DISCRETE = {"poisson", "negative_binomial"}

# scipy.stats names of the families that from_scipy reads as named families
_FROM_SCIPY = {
    "norm": "normal",
    "t": "student_t",
    "laplace": "laplace",
    "logistic": "logistic",
    "lognorm": "lognormal",
    "gamma": "gamma",
    "poisson": "poisson",
    "nbinom": "negative_binomial",
}

# Gauss-Legendre nodes per half of the CRPS integral of a generic scipy distribution
_GL_NODES = 64


def _param_array(value: Any, name: str) -> np.ndarray:
    if is_torch(value):
        value = value.detach().cpu().numpy()
    arr = np.asarray(value)
    if arr.ndim == 0:
        if arr.dtype.kind not in "iuf":
            raise CalibrationInputError(f"{name} must be a real number; got {value!r}")
        arr = arr.astype(np.float64).reshape(1)
        if not np.isfinite(arr[0]):
            raise CalibrationInputError(f"{name} must be finite; got {float(arr[0])!r}")
        return arr
    return _as_1d_float(arr, name)


class Parametric(PredictiveDistribution):
    """Predictive distributions of a named parametric family, parameters per row.

    ``Parametric(family, **params)``: each parameter is an array of shape
    ``(n,)`` or a scalar shared by every row. The families and their
    parameters (scipy.stats' parametrisations, named):

    ================== ========================== =================================
    family             parameters                 scipy.stats equivalent
    ================== ========================== =================================
    normal             loc, scale > 0             ``norm(loc, scale)``
    student_t          df > 0, loc, scale > 0     ``t(df, loc, scale)``
    laplace            loc, scale > 0             ``laplace(loc, scale)``
    logistic           loc, scale > 0             ``logistic(loc, scale)``
    lognormal          meanlog, sdlog > 0         ``lognorm(sdlog, scale=exp(meanlog))``
    gamma              shape > 0, rate > 0        ``gamma(shape, scale=1 / rate)``
    poisson            mu > 0                     ``poisson(mu)``
    negative_binomial  n > 0, p in (0, 1]         ``nbinom(n, p)`` (failures before
                                                  the n-th success; mean n (1 - p) / p)
    ================== ========================== =================================

    Any other frozen scipy.stats distribution is read by :meth:`from_scipy`.
    The CRPS is in closed form for every named family: normal (Gneiting et
    al. 2005), Student t, Laplace and logistic (Jordan, Krüger & Lerch
    2019), log-normal (Baran & Lerch 2015), gamma (Scheuerer & Möller 2015),
    Poisson and negative binomial (Wei & Held 2014); the formulas are those
    of scoringrules. The Student t needs ``df > 1`` for a finite CRPS.
    Poisson and negative binomial are discrete: :meth:`cdf_left` is
    ``P(Y < y)`` and :meth:`logpdf` is the log mass.

    Parameters
    ----------
    family : str
        One of the names above.
    **params : array-like of shape (n,) or scalar
        The family's parameters, by name, all of them.

    Attributes
    ----------
    family : str
        The family's name; ``"scipy.<name>"`` for another scipy.stats
        distribution read by :meth:`from_scipy`.
    params : dict of str to numpy.ndarray
        Each parameter as an ``(n,)`` float64 array (scalars broadcast).

    Examples
    --------
    >>> from calipers.regression import Parametric
    >>> P = Parametric("laplace", loc=[0.0, 1.0], scale=1.0)
    >>> P.cdf([0.0, 1.0]).tolist(), P.crps([0.0, 1.0]).tolist()
    ([0.5, 0.5], [0.25, 0.25])
    >>> C = Parametric("poisson", mu=[2.0])
    >>> C.is_discrete, C.cdf_left([1.0]).round(4).tolist(), C.cdf([1.0]).round(4).tolist()
    (True, [0.1353], [0.406])
    """

    kind: ClassVar[str] = "parametric"

    def __init__(self, family: str, **params: Any) -> None:
        if not isinstance(family, str) or family not in PARAMETRIC_FAMILIES:
            raise CalibrationInputError(
                f"family must be one of {sorted(PARAMETRIC_FAMILIES)} (any other scipy.stats "
                f"distribution: Parametric.from_scipy); got {family!r}"
            )
        spec = PARAMETRIC_FAMILIES[family]
        names = [p for p, _ in spec]
        unknown = sorted(set(params) - set(names))
        missing = [p for p in names if p not in params]
        if unknown or missing:
            raise CalibrationInputError(
                f"the {family} family takes the parameters {', '.join(names)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(unknown)}" if unknown else "")
            )
        arrays = {p: _param_array(params[p], p) for p in names}
        lengths = {p: a.shape[0] for p, a in arrays.items() if np.ndim(params[p]) != 0}
        first = next(iter(lengths), None)
        n = lengths[first] if first is not None else 1
        for p, m in lengths.items():
            if m != n:
                raise CalibrationInputError(
                    f"{p} has {m} rows but {first} has {n}; parameters must have the same "
                    "length (or be scalars)"
                )
        if n < 1:
            raise CalibrationInputError(f"{names[0]} has no rows; at least one row is needed")
        for p, rule in spec:
            a = arrays[p]
            if rule == "positive":
                bad = ~(a > 0)
                what = "> 0"
            elif rule == "probability":
                bad = ~((a > 0) & (a <= 1))
                what = "in (0, 1]"
            else:
                continue
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise CalibrationInputError(
                    f"{p} of the {family} family must be {what}; row {i} is {float(a[i])!r}"
                )
        self.family = family
        self.params = {p: np.broadcast_to(a, (n,)).copy() for p, a in arrays.items()}
        self._frozen: Any = None
        self._n = n
        self._generic_discrete = False

    # ---- scipy

    @classmethod
    def from_scipy(cls, frozen: Any) -> Parametric:
        """A frozen scipy.stats distribution with array parameters, one row per entry.

        ``norm``, ``t``, ``laplace``, ``logistic``, ``lognorm`` and
        ``gamma`` (with ``loc=0``), ``poisson`` and ``nbinom`` (with
        ``loc=0``) become the named family (closed-form CRPS). Any other
        distribution is kept as it is: its ``cdf``, ``ppf``, ``logpdf``,
        ``mean`` and ``var`` are used, and its CRPS is computed numerically
        as ``2 * int_0^1 pinball_a(y, F^-1(a)) da`` (Gneiting & Raftery 2007)
        by Gauss-Legendre quadrature with 64 nodes on each side of ``F(y)``
        (a relative error of about 1e-5 for a Gumbel or a Student t with 3
        degrees of freedom; the named families are exact).

        Parameters
        ----------
        frozen : scipy.stats frozen distribution
            E.g. ``scipy.stats.norm(loc=mu, scale=sigma)`` with ``(n,)``
            arrays; the parameters broadcast to one 1-D shape ``(n,)``.

        Returns
        -------
        Parametric

        Examples
        --------
        >>> from scipy import stats
        >>> from calipers.regression import Parametric
        >>> P = Parametric.from_scipy(stats.gamma(a=[2.0, 3.0], scale=0.5))
        >>> P.family, P.params["rate"].tolist()
        ('gamma', [2.0, 2.0])
        >>> Parametric.from_scipy(stats.gumbel_r(loc=[0.0])).family
        'scipy.gumbel_r'
        """
        dist = getattr(frozen, "dist", None)
        if dist is None or not hasattr(frozen, "cdf") or not hasattr(frozen, "ppf"):
            raise CalibrationInputError(
                f"frozen must be a frozen scipy.stats distribution (e.g. scipy.stats.norm(loc=mu, "
                f"scale=sigma)); got {type(frozen).__name__}"
            )
        name = str(getattr(dist, "name", ""))
        shapes = [s.strip() for s in (dist.shapes or "").split(",") if s.strip()]
        args = list(getattr(frozen, "args", ()))
        kwds = dict(getattr(frozen, "kwds", {}))
        from scipy import stats

        discrete = isinstance(dist, stats.rv_discrete)
        names = shapes + ["loc"] + ([] if discrete else ["scale"])
        values: dict[str, Any] = dict(zip(names, args, strict=False))
        for k, v in kwds.items():
            if k in values:
                raise CalibrationInputError(f"frozen gives {k} twice (by position and by name)")
            values[k] = v
        values.setdefault("loc", 0.0)
        if not discrete:
            values.setdefault("scale", 1.0)
        missing = [s for s in shapes if s not in values]
        if missing:
            raise CalibrationInputError(
                f"frozen scipy.stats.{name} lacks its shape parameters {', '.join(missing)}"
            )
        arrays = {}
        for k, v in values.items():
            a = np.asarray(v.detach().cpu().numpy() if is_torch(v) else v)
            if a.dtype.kind not in "iuf" or a.ndim > 1:
                raise CalibrationInputError(
                    f"{k} of scipy.stats.{name} must be a number or a 1-D array; got shape "
                    f"{a.shape}, dtype {a.dtype}"
                )
            arrays[k] = a.astype(np.float64)
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
        except ValueError:
            raise CalibrationInputError(
                f"the parameters of scipy.stats.{name} do not broadcast to one shape: "
                + ", ".join(f"{k} {a.shape}" for k, a in arrays.items())
            ) from None
        n = shape[0] if shape else 1
        arrays = {k: np.broadcast_to(a, (n,)).copy() for k, a in arrays.items()}
        loc0 = bool(np.all(arrays["loc"] == 0))
        fam = _FROM_SCIPY.get(name)
        if fam == "normal":
            return cls("normal", loc=arrays["loc"], scale=arrays["scale"])
        if fam in ("laplace", "logistic"):
            return cls(fam, loc=arrays["loc"], scale=arrays["scale"])
        if fam == "student_t":
            return cls("student_t", df=arrays["df"], loc=arrays["loc"], scale=arrays["scale"])
        if fam == "lognormal" and loc0:
            scale = _positive(arrays["scale"], "scale", name)
            return cls("lognormal", meanlog=np.log(scale), sdlog=arrays["s"])
        if fam == "gamma" and loc0:
            scale = _positive(arrays["scale"], "scale", name)
            return cls("gamma", shape=arrays["a"], rate=1.0 / scale)
        if fam == "poisson" and loc0:
            return cls("poisson", mu=arrays["mu"])
        if fam == "negative_binomial" and loc0:
            return cls("negative_binomial", n=arrays["n"], p=arrays["p"])
        return cls._generic(dist, arrays, discrete)

    @classmethod
    def _generic(cls, dist: Any, arrays: dict[str, np.ndarray], discrete: bool) -> Parametric:
        name = str(dist.name)
        for k, a in arrays.items():
            bad = ~np.isfinite(a)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise CalibrationInputError(
                    f"{k} of scipy.stats.{name} must be finite; row {i} is {float(a[i])!r}"
                )
        frozen = dist(**arrays)
        # scipy gives a NaN support for invalid parameters
        with np.errstate(invalid="ignore"):
            a, b = frozen.support()
        ok = ~(
            np.isnan(np.asarray(a, dtype=np.float64)) | np.isnan(np.asarray(b, dtype=np.float64))
        )
        ok = np.broadcast_to(ok, arrays["loc"].shape)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise CalibrationInputError(
                f"the parameters of scipy.stats.{name} are invalid at row {i}: "
                + ", ".join(f"{k}={float(a[i])!r}" for k, a in arrays.items())
            )
        self = cls.__new__(cls)
        self.family = "scipy." + name
        self.params = arrays
        self._frozen = frozen
        self._n = int(arrays["loc"].shape[0])
        self._generic_discrete = discrete
        return self

    def _scipy(self) -> Any:
        """The frozen scipy.stats distribution of every row."""
        if self._frozen is None:
            from scipy import stats

            p = self.params
            f = self.family
            if f == "normal":
                self._frozen = stats.norm(p["loc"], p["scale"])
            elif f == "student_t":
                self._frozen = stats.t(p["df"], p["loc"], p["scale"])
            elif f == "laplace":
                self._frozen = stats.laplace(p["loc"], p["scale"])
            elif f == "logistic":
                self._frozen = stats.logistic(p["loc"], p["scale"])
            elif f == "lognormal":
                self._frozen = stats.lognorm(p["sdlog"], scale=np.exp(p["meanlog"]))
            elif f == "gamma":
                self._frozen = stats.gamma(p["shape"], scale=1.0 / p["rate"])
            elif f == "poisson":
                self._frozen = stats.poisson(p["mu"])
            else:
                self._frozen = stats.nbinom(p["n"], p["p"])
        return self._frozen

    # ---- interface

    @property
    def n_samples(self) -> int:
        return self._n

    @property
    def is_discrete(self) -> bool:
        if self.family.startswith("scipy."):
            return bool(self._generic_discrete)
        return self.family in _DISCRETE

    def cdf(self, y: Any) -> np.ndarray:
        from scipy import special

        t = self._targets(y)
        p = self.params
        f = self.family
        if f == "normal":
            return np.asarray(special.ndtr((t - p["loc"]) / p["scale"]), dtype=np.float64)
        if f == "student_t":
            return np.asarray(special.stdtr(p["df"], (t - p["loc"]) / p["scale"]))
        if f == "laplace":
            z = (t - p["loc"]) / p["scale"]
            return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1 - 0.5 * np.exp(-np.abs(z)))
        if f == "logistic":
            return np.asarray(special.expit((t - p["loc"]) / p["scale"]), dtype=np.float64)
        if f == "lognormal":
            with np.errstate(divide="ignore", invalid="ignore"):
                w = (np.log(np.where(t > 0, t, 1.0)) - p["meanlog"]) / p["sdlog"]
            return np.where(t > 0, special.ndtr(w), 0.0)
        if f == "gamma":
            return np.asarray(special.gammainc(p["shape"], p["rate"] * np.maximum(t, 0.0)))
        if f == "poisson":
            return np.where(t < 0, 0.0, special.pdtr(np.floor(np.maximum(t, 0.0)), p["mu"]))
        if f == "negative_binomial":
            return _nbinom_cdf(t, p["n"], p["p"])
        return np.asarray(self._scipy().cdf(t), dtype=np.float64)

    def cdf_left(self, y: Any) -> np.ndarray:
        if not self.is_discrete:
            return self.cdf(y)
        t = self._targets(y)
        # P(Y < y) = P(Y <= ceil(y) - 1) on the integers
        below = np.ceil(t) - 1.0
        return self.cdf(below)

    def quantile(self, level: float) -> np.ndarray:
        p = _check_level(level)
        return np.asarray(self._scipy().ppf(np.full(self._n, p)), dtype=np.float64)

    def mean(self) -> np.ndarray:
        return np.asarray(self._scipy().mean(), dtype=np.float64) * np.ones(self._n)

    def variance(self) -> np.ndarray:
        return np.asarray(self._scipy().var(), dtype=np.float64) * np.ones(self._n)

    def logpdf(self, y: Any) -> np.ndarray:
        t = self._targets(y)
        fz = self._scipy()
        if self.is_discrete:
            return np.asarray(fz.logpmf(t), dtype=np.float64)
        return np.asarray(fz.logpdf(t), dtype=np.float64)

    def crps(self, y: Any) -> np.ndarray:
        t = self._targets(y)
        f = self.family
        p = self.params
        if f == "normal":
            return _crps_normal(t, p["loc"], p["scale"])
        if f == "student_t":
            return _crps_t(t, p["df"], p["loc"], p["scale"])
        if f == "laplace":
            # scale * (|z| + exp(-|z|) - 3 / 4), in place
            z = t - p["loc"]
            z /= p["scale"]
            np.abs(z, out=z)
            out = np.negative(z)
            np.exp(out, out=out)
            out += z
            out -= 0.75
            out *= p["scale"]
            return out
        if f == "logistic":
            # scale * (z - 2 log F(z) - 1) = scale * (|z| + 2 log(1 + exp(-|z|)) - 1),
            # F the logistic CDF, log F(z) = min(z, 0) - log(1 + exp(-|z|)); in place
            z = t - p["loc"]
            z /= p["scale"]
            np.abs(z, out=z)
            out = np.negative(z)
            np.exp(out, out=out)
            np.log1p(out, out=out)
            out *= 2.0
            out += z
            out -= 1.0
            out *= p["scale"]
            return out
        if f == "lognormal":
            return _crps_lognormal(t, p["meanlog"], p["sdlog"])
        if f == "gamma":
            return _crps_gamma(t, p["shape"], p["rate"])
        if f == "poisson":
            return _crps_poisson(t, p["mu"])
        if f == "negative_binomial":
            return _crps_nbinom(t, p["n"], p["p"])
        return self._crps_quadrature(t)

    def _crps_quadrature(self, t: np.ndarray) -> np.ndarray:
        # CRPS = 2 int_0^1 (1{y < q_a} - a)(q_a - y) da (Gneiting & Raftery 2007), split
        # at a0 = F(y): below it q_a <= y, above it q_a >= y, each half smooth
        fz = self._scipy()
        a0 = np.clip(np.asarray(fz.cdf(t), dtype=np.float64), 0.0, 1.0)
        x, w = np.polynomial.legendre.leggauss(_GL_NODES)
        x = 0.5 * (x + 1.0)
        w = 0.5 * w
        out = np.zeros(self._n)
        with np.errstate(invalid="ignore", over="ignore"):
            for xj, wj in zip(x, w, strict=True):
                lo = a0 * xj
                q = np.asarray(fz.ppf(lo), dtype=np.float64)
                out += wj * a0 * np.where(a0 > 0, lo * (t - q), 0.0)
                hi = a0 + (1.0 - a0) * xj
                q = np.asarray(fz.ppf(hi), dtype=np.float64)
                out += wj * (1.0 - a0) * np.where(a0 < 1, (1.0 - hi) * (q - t), 0.0)
        return 2.0 * out

    def take(self, rows: Any) -> Parametric:
        idx = _rows_index(rows, self._n)
        if self.family.startswith("scipy."):
            dist = self._scipy().dist
            return Parametric._generic(
                dist, {k: v[idx] for k, v in self.params.items()}, self._generic_discrete
            )
        out = Parametric.__new__(Parametric)
        out.family = self.family
        out.params = {k: v[idx] for k, v in self.params.items()}
        out._frozen = None
        out._n = int(out.params[next(iter(out.params))].shape[0])
        out._generic_discrete = False
        return out

    def to_arrays(self) -> dict[str, np.ndarray]:
        out = {"kind": np.asarray(self.kind), "family": np.asarray(self.family)}
        out.update({k: v.copy() for k, v in self.params.items()})
        return out

    @classmethod
    def _from_arrays(cls, arrays: Mapping[str, Any]) -> Parametric:
        family = _string(arrays, "family")
        rest = {k: v for k, v in arrays.items() if k not in ("kind", "family")}
        if family.startswith("scipy."):
            from scipy import stats

            name = family[len("scipy.") :]
            dist = getattr(stats, name, None)
            if dist is None or not hasattr(dist, "freeze"):
                raise CalibrationInputError(f"arrays name an unknown scipy.stats family {name!r}")
            frozen = dist(**{k: np.asarray(v, dtype=np.float64) for k, v in rest.items()})
            return cls.from_scipy(frozen)
        return cls(family, **rest)


def _positive(a: np.ndarray, name: str, family: str) -> np.ndarray:
    bad = ~(a > 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"{name} of scipy.stats.{family} must be > 0; row {i} is {float(a[i])!r}"
        )
    return a


def _nbinom_cdf(t: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    from scipy.special import betainc

    k = np.floor(np.maximum(t, 0.0))
    return np.where(t < 0, 0.0, betainc(n, k + 1.0, p))


def _crps_normal(t: np.ndarray, loc: np.ndarray, scale: np.ndarray) -> np.ndarray:
    from scipy.special import ndtr

    # scale * (z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi)), in place
    z = t - loc
    z /= scale
    pdf = z * z
    pdf *= -0.5
    np.exp(pdf, out=pdf)
    pdf *= 2.0 / _SQRT_2PI
    out = np.asarray(ndtr(z), dtype=np.float64)
    out *= 2.0
    out -= 1.0
    out *= z
    out += pdf
    out -= 1.0 / _SQRT_PI
    out *= scale
    return out


def _crps_t(t: np.ndarray, df: np.ndarray, loc: np.ndarray, scale: np.ndarray) -> np.ndarray:
    from scipy.special import beta, stdtr

    bad = ~(df > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            "the CRPS of a Student t distribution needs df > 1 (its mean is infinite "
            f"otherwise); row {i} has df {float(df[i])!r}"
        )
    z = (t - loc) / scale
    F = stdtr(df, z)
    f = (1.0 + z * z / df) ** (-(df + 1.0) / 2.0) / (np.sqrt(df) * beta(0.5, df / 2.0))
    G = (df + z * z) / (df - 1.0)
    c = 2.0 * np.sqrt(df) / (df - 1.0) * beta(0.5, df - 0.5) / beta(0.5, df / 2.0) ** 2
    return scale * (z * (2.0 * F - 1.0) + 2.0 * f * G - c)


def _crps_lognormal(t: np.ndarray, meanlog: np.ndarray, sdlog: np.ndarray) -> np.ndarray:
    from scipy.special import ndtr

    pos = t > 0
    with np.errstate(divide="ignore"):
        w = np.where(pos, (np.log(np.where(pos, t, 1.0)) - meanlog) / sdlog, -np.inf)
    ex = 2.0 * np.exp(meanlog + sdlog * sdlog / 2.0)
    return t * (2.0 * ndtr(w) - 1.0) - ex * (ndtr(w - sdlog) + ndtr(sdlog / math.sqrt(2.0)) - 1.0)


def _crps_gamma(t: np.ndarray, shape: np.ndarray, rate: np.ndarray) -> np.ndarray:
    from scipy.special import beta, gammainc

    x = rate * np.maximum(t, 0.0)
    F = gammainc(shape, x)
    F1 = gammainc(shape + 1.0, x)
    return t * (2.0 * F - 1.0) - (shape / rate) * (2.0 * F1 - 1.0) - 1.0 / (rate * beta(0.5, shape))


def _crps_poisson(t: np.ndarray, mu: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln, i0e, i1e, pdtr

    k = np.floor(np.maximum(t, 0.0))
    F = np.where(t < 0, 0.0, pdtr(k, mu))
    f = np.where(t < 0, 0.0, np.exp(k * np.log(mu) - mu - gammaln(k + 1.0)))
    # mu exp(-2 mu) (I0(2 mu) + I1(2 mu)) with the exponentially scaled Bessel functions
    return (t - mu) * (2.0 * F - 1.0) + 2.0 * mu * f - mu * (i0e(2.0 * mu) + i1e(2.0 * mu))


def _crps_nbinom(t: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    from scipy.special import hyp2f1

    F = _nbinom_cdf(t, n, p)
    F1 = _nbinom_cdf(t - 1.0, n + 1.0, p)
    F2 = hyp2f1(n + 1.0, 0.5, 2.0, -4.0 * (1.0 - p) / (p * p))
    return t * (2.0 * F - 1.0) - n * (1.0 - p) * (p * (2.0 * F1 - 1.0) + F2) / (p * p)


# --------------------------------------------------------------------------- QuantileSet


def _check_levels(levels: Any, name: str = "levels") -> np.ndarray:
    lv = _as_1d_float(levels, name)
    if lv.shape[0] < 1:
        raise CalibrationInputError(f"{name} is empty; give at least one level")
    bad = ~((lv > 0) & (lv < 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"{name} must lie strictly between 0 and 1; entry {i} is {float(lv[i])!r}"
        )
    if lv.shape[0] > 1 and not np.all(np.diff(lv) > 0):
        i = int(np.flatnonzero(~(np.diff(lv) > 0))[0]) + 1
        raise CalibrationInputError(
            f"{name} must be strictly increasing; entry {i} is {float(lv[i])!r} after "
            f"{float(lv[i - 1])!r}"
        )
    return lv


class QuantileSet(PredictiveDistribution):
    """Predicted quantiles at fixed levels, one row per target.

    Row ``i`` states ``q_ij = F_i^-1(tau_j)`` at the levels ``tau_1 < ... <
    tau_m`` (quantile regression, gradient boosting with a quantile
    objective, quantile neural networks).

    The distribution between the quantiles is the linear interpolation of
    the points ``(q_ij, tau_j)``. Beyond the outermost quantiles the set says
    nothing, and no tail is invented: below ``q_i1`` the CDF is only known
    to lie in ``[0, tau_1]`` and above ``q_im`` in ``[tau_m, 1]``. So
    :meth:`cdf` gives the upper and :meth:`cdf_left` the lower end there
    (``tau_1`` and 0 below, 1 and ``tau_m`` above), and the randomised PIT
    (Czado, Gneiting & Held 2009) is uniform on the unknown range; for a
    calibrated set it is uniform on [0, 1] and the one-sided coverage
    ``P(F(y) <= tau_j)`` equals ``P(y <= q_j)`` at the set's own levels.
    Equal quantiles (a flat stretch of the quantile function) are an atom:
    ``cdf_left`` and ``cdf`` give the smallest and the largest level there.
    :meth:`quantile` interpolates the quantiles linearly in the level and
    gives the outermost quantile for levels outside ``[tau_1, tau_m]``.

    Parameters
    ----------
    levels : array-like of shape (m,)
        Strictly increasing levels, each strictly inside (0, 1).
    quantiles : array-like or torch.Tensor of shape (n, m)
        ``quantiles[i, j]`` is row ``i``'s quantile at ``levels[j]``, target
        units, finite.
    crossing : {"raise", "sort"}, default "raise"
        What to do with a row whose quantiles decrease with the level
        (crossing quantiles, common with separately fitted quantile models):
        ``"raise"`` refuses it, naming the row and the levels; ``"sort"``
        sorts every row, the monotone rearrangement of Chernozhukov,
        Fernández-Val & Galichon 2010, which never moves a quantile set
        further from the truth in any Lp norm.

    Attributes
    ----------
    levels : numpy.ndarray
        ``(m,)`` float64 levels.
    quantiles : numpy.ndarray
        ``(n, m)`` float64 quantiles, non-decreasing along each row (a copy).

    Examples
    --------
    >>> from calipers.regression import QuantileSet
    >>> Q = QuantileSet([0.1, 0.5, 0.9], [[-1.0, 0.0, 1.0], [0.0, 2.0, 4.0]])
    >>> Q.cdf([0.5, 5.0]).tolist(), Q.cdf_left([0.5, 5.0]).tolist()
    ([0.7, 1.0], [0.7, 0.9])
    >>> Q.quantile(0.3).round(12).tolist()
    [-0.5, 1.0]
    >>> QuantileSet([0.1, 0.9], [[1.0, 0.0]])
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: quantiles cross in row 0: 0.0 at level 0.9 is below 1.0 at level 0.1; pass crossing="sort" to rearrange each row (Chernozhukov et al. 2010)
    """

    kind: ClassVar[str] = "quantiles"

    def __init__(self, levels: Any, quantiles: Any, *, crossing: str = "raise") -> None:
        if crossing not in ("raise", "sort"):
            raise CalibrationInputError(f'crossing must be "raise" or "sort"; got {crossing!r}')
        lv = _check_levels(levels)
        q = _as_2d_float(quantiles, "quantiles")
        if q.shape[1] != lv.shape[0]:
            raise CalibrationInputError(
                f"quantiles has {q.shape[1]} columns but there are {lv.shape[0]} levels; give "
                "one column per level"
            )
        if q.shape[1] > 1:
            d = np.diff(q, axis=1)
            if (d < 0).any():
                if crossing == "raise":
                    i, j = (int(v) for v in np.argwhere(d < 0)[0])
                    raise CalibrationInputError(
                        f"quantiles cross in row {i}: {float(q[i, j + 1])!r} at level "
                        f"{float(lv[j + 1])!r} is below {float(q[i, j])!r} at level "
                        f'{float(lv[j])!r}; pass crossing="sort" to rearrange each row '
                        "(Chernozhukov et al. 2010)"
                    )
                q = np.sort(q, axis=1)
            del d
        if q is quantiles:
            q = q.copy()
        self.levels = lv
        self.quantiles = q

    @classmethod
    def _trusted(cls, levels: np.ndarray, quantiles: np.ndarray) -> QuantileSet:
        self = cls.__new__(cls)
        self.levels = levels
        self.quantiles = quantiles
        return self

    @property
    def n_samples(self) -> int:
        return int(self.quantiles.shape[0])

    def _counts(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the number of quantiles ``< y`` and ``<= y`` (a loop over levels: O(n))."""
        below = np.zeros(t.shape[0], dtype=np.int64)
        upto = np.zeros(t.shape[0], dtype=np.int64)
        for j in range(self.quantiles.shape[1]):
            col = self.quantiles[:, j]
            below += col < t
            upto += col <= t
        return below, upto

    def _interpolate(self, t: np.ndarray, k: np.ndarray) -> np.ndarray:
        """The linear interpolation at ``y`` in the gap ``(q_{k-1}, q_k)``, 0 < k < m."""
        rows = np.arange(t.shape[0])
        kk = np.clip(k, 1, self.levels.shape[0] - 1) if self.levels.shape[0] > 1 else k
        if self.levels.shape[0] == 1:
            return np.full(t.shape[0], self.levels[0])
        q0 = self.quantiles[rows, kk - 1]
        q1 = self.quantiles[rows, kk]
        t0 = self.levels[kk - 1]
        t1 = self.levels[kk]
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = np.where(q1 > q0, (t - q0) / (q1 - q0), 0.0)
        return t0 + np.clip(frac, 0.0, 1.0) * (t1 - t0)

    def _bounds(self, y: Any) -> tuple[np.ndarray, np.ndarray]:
        t = self._targets(y)
        m = self.levels.shape[0]
        below, upto = self._counts(t)
        gap = (below == upto) & (upto > 0) & (upto < m)
        mid = self._interpolate(t, upto)
        lv = self.levels
        # upper end F(y): tau of the last quantile <= y (tau_1 below q_1, 1 from q_m on)
        hi = np.where(upto == 0, lv[0], np.where(upto >= m, 1.0, lv[np.clip(upto - 1, 0, m - 1)]))
        # lower end F(y-): tau of the first quantile >= y (0 up to q_1, tau_m above q_m)
        lo = np.where(below == 0, 0.0, np.where(below >= m, lv[-1], lv[np.clip(below, 0, m - 1)]))
        hi = np.where(gap, mid, hi)
        lo = np.where(gap, mid, lo)
        return lo, hi

    def cdf(self, y: Any) -> np.ndarray:
        return self._bounds(y)[1]

    def cdf_left(self, y: Any) -> np.ndarray:
        return self._bounds(y)[0]

    def pit_interval(self, y: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._bounds(y)

    def quantile(self, level: float) -> np.ndarray:
        p = _check_level(level)
        lv = self.levels
        m = lv.shape[0]
        if p <= lv[0]:
            return self.quantiles[:, 0].copy()
        if p >= lv[-1]:
            return self.quantiles[:, -1].copy()
        k = int(np.searchsorted(lv, p, side="right"))  # lv[k-1] <= p < lv[k]
        k = min(max(k, 1), m - 1)
        frac = (p - lv[k - 1]) / (lv[k] - lv[k - 1])
        q0 = self.quantiles[:, k - 1]
        q1 = self.quantiles[:, k]
        return q0 + frac * (q1 - q0)

    def crps(self, y: Any) -> np.ndarray:
        """The quantile-averaged pinball form of the CRPS, per row.

        :func:`calipers.regression.crps_quantiles_per_row` of the set's levels
        and quantiles (Gneiting & Raftery 2007; Bracher et al. 2021), in
        target units.
        """
        from .crps_estimators import crps_quantiles_per_row

        return np.asarray(crps_quantiles_per_row(self.levels, self.quantiles, self._targets(y)))

    def take(self, rows: Any) -> QuantileSet:
        idx = _rows_index(rows, self.n_samples)
        return QuantileSet._trusted(self.levels, self.quantiles[idx])

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "kind": np.asarray(self.kind),
            "levels": self.levels.copy(),
            "quantiles": self.quantiles.copy(),
        }

    @classmethod
    def _from_arrays(cls, arrays: Mapping[str, Any]) -> QuantileSet:
        return cls(_entry(arrays, "levels"), _entry(arrays, "quantiles"))


def central_interval(lower: Any, upper: Any, level: float) -> QuantileSet:
    """A central prediction interval as a two-level :class:`QuantileSet`.

    The interval ``[lower_i, upper_i]`` at nominal coverage ``level`` states
    the quantiles at ``(1 - level) / 2`` and ``(1 + level) / 2`` (the central
    interval of Gneiting & Raftery 2007, §6.2).

    Parameters
    ----------
    lower, upper : array-like of shape (n,)
        Interval bounds, target units, ``lower <= upper`` in every row.
    level : float
        Nominal coverage, strictly inside (0, 1), e.g. 0.9.

    Returns
    -------
    QuantileSet
        Levels ``((1 - level) / 2, (1 + level) / 2)``.

    Examples
    --------
    >>> from calipers.regression import central_interval
    >>> Q = central_interval([0.0], [2.0], 0.8)
    >>> Q.levels.round(12).tolist(), Q.cdf([1.0]).round(12).tolist()
    ([0.1, 0.9], [0.5])
    """
    p = _check_level(level)
    if not 0.0 < p < 1.0:
        raise CalibrationInputError(f"level must lie strictly between 0 and 1; got {p!r}")
    lo = _as_1d_float(lower, "lower")
    hi = _as_1d_float(upper, "upper")
    if lo.shape[0] != hi.shape[0]:
        raise CalibrationInputError(
            f"upper has {hi.shape[0]} rows but lower has {lo.shape[0]}; they must have the same length"
        )
    if lo.shape[0] < 1:
        raise CalibrationInputError("lower has no rows; at least one row is needed")
    bad = ~(lo <= hi)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"lower must be <= upper; row {i} has lower {float(lo[i])!r} and upper {float(hi[i])!r}"
        )
    return QuantileSet._trusted(
        np.array([(1.0 - p) / 2.0, (1.0 + p) / 2.0]), np.stack([lo, hi], axis=1)
    )


# --------------------------------------------------------------------------- SampleEnsemble


class SampleEnsemble(PredictiveDistribution):
    """Members or draws of the predictive distribution, ``k`` per row.

    Deep ensembles, MC dropout, posterior predictive draws or a weather
    ensemble: row ``i`` holds ``k`` exchangeable members ``x_i1 .. x_ik``.
    The distribution is their empirical distribution: :meth:`cdf` is
    ``#{x <= y} / k`` and :meth:`cdf_left` is ``#{x < y} / k``;
    :meth:`mean` and :meth:`variance` are the members' mean and variance
    (``ddof = 0``, the variance of that distribution); :meth:`quantile` is
    NumPy's default (linear) sample quantile of the members.

    The PIT of an ensemble is its rank (the verification rank histogram;
    Czado, Gneiting & Held 2009): ``y`` and the ``k`` members are
    exchangeable when the ensemble is calibrated, so the rank of ``y`` among
    the ``k + 1`` values is uniform on ``0 .. k``; :meth:`pit_interval` is
    ``(#{x < y} / (k + 1), (#{x <= y} + 1) / (k + 1))``, whose randomised PIT
    is uniform on [0, 1] for a calibrated ensemble (ties between ``y`` and
    members are spread over their ranks).

    Parameters
    ----------
    samples : array-like or torch.Tensor of shape (n, k)
        ``k >= 1`` finite members per row, target units.

    Attributes
    ----------
    samples : numpy.ndarray
        ``(n, k)`` float64 members, in the order given (a copy).

    Examples
    --------
    >>> from calipers.regression import SampleEnsemble
    >>> S = SampleEnsemble([[1.0, 2.0, 3.0], [0.0, 0.0, 6.0]])
    >>> S.mean().tolist(), S.variance().tolist()
    ([2.0, 2.0], [0.6666666666666666, 8.0])
    >>> S.cdf([2.5, 0.0]).tolist()
    [0.6666666666666666, 0.6666666666666666]
    >>> lo, hi = S.pit_interval([2.5, 0.0])
    >>> lo.tolist(), hi.tolist()
    ([0.5, 0.0], [0.75, 0.75])
    """

    kind: ClassVar[str] = "samples"

    def __init__(self, samples: Any) -> None:
        x = _as_2d_float(samples, "samples")
        if x is samples:
            x = x.copy()
        self.samples = x
        self._sorted: np.ndarray | None = None

    @classmethod
    def _trusted(cls, samples: np.ndarray) -> SampleEnsemble:
        self = cls.__new__(cls)
        self.samples = samples
        self._sorted = None
        return self

    @property
    def n_samples(self) -> int:
        return int(self.samples.shape[0])

    @property
    def n_members(self) -> int:
        """Members per row ``k``."""
        return int(self.samples.shape[1])

    @property
    def is_discrete(self) -> bool:
        return True

    def _counts(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        below = np.zeros(t.shape[0], dtype=np.int64)
        upto = np.zeros(t.shape[0], dtype=np.int64)
        for j in range(self.samples.shape[1]):
            col = self.samples[:, j]
            below += col < t
            upto += col <= t
        return below, upto

    def cdf(self, y: Any) -> np.ndarray:
        _, upto = self._counts(self._targets(y))
        return upto / self.n_members

    def cdf_left(self, y: Any) -> np.ndarray:
        below, _ = self._counts(self._targets(y))
        return below / self.n_members

    def pit_interval(self, y: Any) -> tuple[np.ndarray, np.ndarray]:
        below, upto = self._counts(self._targets(y))
        k1 = self.n_members + 1
        return below / k1, (upto + 1) / k1

    def quantile(self, level: float) -> np.ndarray:
        p = _check_level(level)
        if self._sorted is None:
            self._sorted = np.sort(self.samples, axis=1)
        k = self.n_members
        # NumPy's default ("linear") sample quantile: position p (k - 1)
        pos = p * (k - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, k - 1)
        g = pos - lo
        a = self._sorted[:, lo]
        b = self._sorted[:, hi]
        return a + g * (b - a) if g > 0 else a.copy()

    def mean(self) -> np.ndarray:
        return np.mean(self.samples, axis=1)

    def variance(self) -> np.ndarray:
        return np.var(self.samples, axis=1)

    def crps(self, y: Any, estimator: str | None = None) -> np.ndarray:
        """CRPS of the members, per row (Gneiting & Raftery 2007; Ferro 2014).

        :func:`calipers.regression.crps_ensemble_per_row` of the members;
        ``estimator`` (``"standard"`` or ``"fair"``) is passed on, None for
        that function's default.
        """
        from .crps_estimators import crps_ensemble_per_row

        t = self._targets(y)
        if estimator is None:
            return np.asarray(crps_ensemble_per_row(self.samples, t))
        return np.asarray(crps_ensemble_per_row(self.samples, t, estimator=estimator))

    def take(self, rows: Any) -> SampleEnsemble:
        idx = _rows_index(rows, self.n_samples)
        return SampleEnsemble._trusted(self.samples[idx])

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"kind": np.asarray(self.kind), "samples": self.samples.copy()}

    @classmethod
    def _from_arrays(cls, arrays: Mapping[str, Any]) -> SampleEnsemble:
        return cls(_entry(arrays, "samples"))


# --------------------------------------------------------------------------- check_predictive


@dataclass(frozen=True, kw_only=True)
class ProbabilisticPredictions:
    """A validated predictive distribution, its targets and row weights.

    The input form of the calibration diagnostics of
    :mod:`calipers.regression`, built by :func:`check_predictive`.

    Attributes
    ----------
    distribution : PredictiveDistribution
        ``n`` rows of predictive distributions.
    targets : numpy.ndarray
        ``(n,)`` float64 observed targets.
    sample_weight : numpy.ndarray or None
        ``(n,)`` float64 non-negative weights with a positive total, or None
        for unit weights.

    Examples
    --------
    >>> from calipers.regression import check_predictive, SampleEnsemble
    >>> P = check_predictive(SampleEnsemble([[0.0, 1.0], [2.0, 3.0]]), targets=[0.5, 2.0])
    >>> P.n_samples, P.weighted_mean(P.targets)
    (2, 1.25)
    """

    distribution: PredictiveDistribution
    targets: np.ndarray
    sample_weight: np.ndarray | None

    @property
    def n_samples(self) -> int:
        """Number of rows ``n``."""
        return int(self.targets.shape[0])

    def weighted_mean(self, values: np.ndarray) -> float:
        """Mean of per-row ``values`` under :attr:`sample_weight` (plain mean if None)."""
        if self.sample_weight is None:
            return float(np.mean(values))
        return float(np.dot(self.sample_weight, values) / np.sum(self.sample_weight))

    def weights(self) -> np.ndarray:
        """``(n,)`` row weights (ones when :attr:`sample_weight` is None)."""
        if self.sample_weight is None:
            return np.ones(self.n_samples)
        return self.sample_weight


@spread_by_name
def check_predictive(
    predictions: Any,
    *,
    variance: Any = None,
    std: Any = None,
    targets: Any = None,
    sample_weight: Any = None,
) -> ProbabilisticPredictions:
    """Validate a predictive distribution of any kind with its targets and weights.

    The input step of every calibration diagnostic of
    :mod:`calipers.regression`. Gaussian arrays are read as before (means
    positional, the spread by name, as in Gruber & Buettner 2022, §5) and
    give the same float64 values as :func:`check_gaussian`.

    Parameters
    ----------
    predictions : PredictiveDistribution, array-like, GaussianPredictions or ProbabilisticPredictions
        A :class:`Gaussian`, :class:`Parametric`, :class:`QuantileSet` or
        :class:`SampleEnsemble`; or predicted means ``(n,)`` with
        ``variance=`` or ``std=``; or an already checked
        :class:`GaussianPredictions` / :class:`ProbabilisticPredictions`
        (then every other argument must be None).
    variance, std : array-like of shape (n,), optional, keyword-only
        The Gaussian spread when ``predictions`` holds means (exactly one).
    targets : array-like or torch.Tensor of shape (n,)
        Observed targets, one per row. Required.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights with a positive total. Default None (unit
        weights); checked by :func:`calipers.validation.check_sample_weight`.

    Returns
    -------
    ProbabilisticPredictions

    Raises
    ------
    CalibrationInputError
        On targets of another length than the distribution's rows, a value
        that is not finite, a spread given with a distribution, or bad
        weights; the message names the argument, the row and the value.

    Examples
    --------
    >>> from calipers.regression import check_predictive, Parametric
    >>> P = check_predictive([0.0, 1.0], std=[1.0, 2.0], targets=[0.5, 1.0])
    >>> P.distribution.kind, P.distribution.variance().tolist()
    ('gaussian', [1.0, 4.0])
    >>> check_predictive(Parametric("poisson", mu=[1.0]), targets=[0.0, 1.0])
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: targets has 2 rows but the predictive distribution has 1; give one target per row
    """
    if isinstance(predictions, ProbabilisticPredictions):
        refuse_given(
            "predictions is already a ProbabilisticPredictions",
            variance=variance,
            std=std,
            targets=targets,
            sample_weight=sample_weight,
        )
        return predictions
    if isinstance(predictions, PredictiveDistribution):
        if variance is not None or std is not None:
            raise CalibrationInputError(
                f"predictions is a {type(predictions).__name__}, which holds its own spread; "
                "pass variance= and std= only with Gaussian means"
            )
        if targets is None:
            raise CalibrationInputError("targets is required (the observed values, one per row)")
        y = predictions._targets(targets)
        w = check_sample_weight(sample_weight, predictions.n_samples, rows_of="predictions")
        return ProbabilisticPredictions(distribution=predictions, targets=y, sample_weight=w)
    G = check_gaussian(
        predictions, variance=variance, std=std, targets=targets, sample_weight=sample_weight
    )
    return ProbabilisticPredictions(
        distribution=Gaussian._trusted(G.mean, G.variance),
        targets=G.targets,
        sample_weight=G.sample_weight,
    )
