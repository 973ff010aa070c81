"""One contract for the recalibrators of probabilistic regression predictions.

A probabilistic regression model predicts N(mu_i, sigma_i**2) for the target
``y_i`` (Gruber & Buettner 2022, §5 and App. G.5), or any other predictive
distribution (a :class:`~calipers.regression.PredictiveDistribution`: a
parametric family, a quantile set, an ensemble). A regression recalibrator
is fitted on a calibration split and maps each prediction to a new predictive
distribution for new rows::

    rc = VarianceScaling().fit(mean_cal, variance=variance_cal, targets=y_cal)
    pit = rc.predict_cdf(mean_test, variance=variance_test, targets=y_test)
    rc = QuantileRecalibration().fit(QuantileSet(levels, q_cal), targets=y_cal)
    pit = rc.predict_pit(QuantileSet(levels, q_test), targets=y_test)

The contract mirrors the classification recalibrators of
:mod:`calipers.recalibration.base`:

* every input goes through :func:`calipers.regression.check_gaussian` (the
  same verdicts and messages as the regression scores), in the argument
  convention ``(mean, *, variance=None, std=None, targets=..., sample_weight=None)``:
  the spread by name, ``variance=`` or ``std=`` (a spread passed by position raises a
  :class:`TypeError` saying so, as a standard deviation read as a variance would give
  wrong numbers silently);
  a :class:`~calipers.regression.GaussianPredictions` may be passed as ``mean``;
* a :class:`~calipers.regression.PredictiveDistribution` may be passed as
  ``mean`` (no ``variance``/``std``) to the methods whose :attr:`kinds` hold
  its kind: a :class:`~calipers.regression.Gaussian` is read as the Gaussian
  arrays it holds (the same numbers, bit for bit), a normal
  :class:`~calipers.regression.Parametric` as ``(loc, std=scale)``, the other kinds go to the
  method's own code (``QuantileRecalibration`` reads every kind; variance
  scaling and Platt scaling refuse them, saying what they accept);
  :class:`~calipers.regression.ProbabilisticPredictions` carries the targets
  and weights with it;
* constructor arguments are the hyper-parameters (``get_params`` /
  ``set_params`` read them from the signature); fitted state lives in
  attributes ending in ``_``; :class:`~calipers.recalibration.NotFittedError`
  before ``fit``;
* ``predict_cdf`` (the recalibrated PIT ``F'_i(y_i)``), ``predict_quantile``,
  ``predict_interval`` (central intervals), ``predict_pit`` (the
  recalibrated PIT, randomised for atoms as in Czado, Gneiting & Held 2009),
  ``scores`` (the mean NLL,
  Dawid-Sebastiani score and CRPS of the recalibrated predictions) and
  ``improvement`` (score before minus score after: for an injective map this
  estimates the reduction of the calibration error of the score, Gruber &
  Buettner 2022, Thm. 4.3 and Prop. 4.5);
* ``gaussian`` says whether the output is again Gaussian (then
  ``predict_variance`` gives the new variance, the mean is unchanged);
  ``injective`` is declared per method;
* ``to_json`` / ``from_json`` / ``save`` / ``load`` write and read the same
  JSON document as the classification methods (``{"calipers_recalibrator",
  "format", "params", "state"}``), checked against the method's declared
  ``schema`` when a file is loaded, after ``fit``, before ``to_json`` and
  before every prediction; :func:`calipers.load_recalibrator` reads them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..._backend import is_torch
from ...regression import (
    GaussianPredictions,
    Parametric,
    PredictiveDistribution,
    ProbabilisticPredictions,
    check_gaussian,
    check_predictive,
    crps_gaussian,
    crps_per_row,
    dawid_sebastiani,
    gaussian_nll,
    log_score_per_row,
)
from ...regression.inputs import spread_by_name
from ...validation import CalibrationInputError
from .. import _registry
from .._inputs import _as_input
from .._schema import (
    _show,
    check_registrable,
)
from ._schema_document import SchemaDocument

__all__ = ["RegressionRecalibrator", "register_regression"]

#: Names of the scores that :meth:`RegressionRecalibrator.scores` returns.
SCORES = ("nll", "dss", "crps")


def register_regression(cls: type[RegressionRecalibrator]) -> type[RegressionRecalibrator]:
    """Class decorator: make a regression recalibrator loadable from JSON.

    The class must declare its ``schema`` with exactly its constructor
    parameters (the declaration its files are checked against).

    Examples
    --------
    >>> from calipers.recalibration.regression.base import (
    ...     RegressionRecalibrator, register_regression)
    >>> class Nothing(RegressionRecalibrator):
    ...     pass
    >>> register_regression(Nothing)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: register_regression: Nothing declares no schema ...
    """
    check_registrable(cls, RegressionRecalibrator, "register_regression")
    _registry.add(cls)
    return cls


#: The kinds of :class:`~calipers.regression.PredictiveDistribution`.
ALL_KINDS = ("gaussian", "parametric", "quantiles", "samples")


def _is_distribution(x: Any) -> bool:
    return isinstance(x, (PredictiveDistribution, ProbabilisticPredictions))


def _gaussian_arrays(d: PredictiveDistribution) -> dict[str, np.ndarray] | None:
    """The Gaussian arrays of ``d`` as arguments of :func:`check_gaussian`, or None.

    A :class:`~calipers.regression.Gaussian` gives the mean and variance it
    holds (``{"mean", "variance"}``); a normal
    :class:`~calipers.regression.Parametric` its ``loc`` and ``scale``
    (``{"mean", "std"}``, squared as for Gaussian arrays).
    """
    if d.kind == "gaussian":
        mean, var = d.mean(), d.variance()
        assert mean is not None and var is not None
        return {"mean": mean, "variance": var}
    if isinstance(d, Parametric) and d.family == "normal":
        n = d.n_samples
        return {
            "mean": np.broadcast_to(d.params["loc"], (n,)).copy(),
            "std": np.broadcast_to(d.params["scale"], (n,)).copy(),
        }
    return None


def _seed(seed: Any) -> Any:
    """A seed of the randomised PIT: a non-negative integer, a Generator or None."""
    if seed is None or isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise CalibrationInputError(
            f"seed must be a non-negative integer, a numpy.random.Generator or None; got {seed!r}"
        )
    return int(seed)


def _levels(q: Any, name: str) -> tuple[np.ndarray, bool]:
    """Probability levels in (0, 1) as a 1-D float64 array, and whether ``q`` was a scalar.

    Only real numbers are levels: a string (``"0.5"``), a boolean or an object
    array is refused rather than converted, so a level is never reinterpreted.
    """
    try:
        raw = np.asarray(q.detach().cpu().numpy() if is_torch(q) else q)
    except (TypeError, ValueError):
        raw = np.asarray(None)
    if raw.dtype.kind not in "iuf":
        what = type(q).__name__ if raw.ndim == 0 else f"an array of dtype {raw.dtype}"
        raise CalibrationInputError(
            f"{name} must be a probability level or a 1-D array of levels in (0, 1); got {q!r} "
            f"({what}; give numbers, e.g. {name}=0.5)"
        )
    arr = raw.astype(np.float64)
    if arr.ndim > 1 or arr.size == 0:
        raise CalibrationInputError(
            f"{name} must be a number or a non-empty 1-D array of levels; got shape {arr.shape}"
        )
    flat = arr.reshape(-1)
    bad = ~((flat > 0) & (flat < 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = "" if arr.ndim == 0 else f" entry {i}"
        raise CalibrationInputError(
            f"{name} must lie strictly between 0 and 1 (the quantiles at 0 and 1 are infinite);"
            f"{where} is {float(flat[i])!r}"
        )
    return flat, arr.ndim == 0


def _back(out: np.ndarray, *given: Any) -> Any:
    """``out`` as the caller's array type: a tensor on the device of the first tensor
    among ``given`` (its floating dtype; float64 for other dtypes), else NumPy."""
    return _as_input(out, next((a for a in given if is_torch(a)), None))


class RegressionRecalibrator(SchemaDocument):
    """Base class of the recalibrators of regression predictions.

    See the module docstring for the contract. Subclasses set ``gaussian``
    and ``_injective`` (or override :attr:`injective`), declare ``schema``
    (parameters and fitted fields, :mod:`calipers.recalibration._schema`) and
    implement ``_fit(G)``, ``_cdf(mu, var, y)``, ``_quantile(mu, var, q)``
    (``q`` a 1-D array of levels; returns ``(n, m)``) and
    ``_score_rows(mu, var, y)`` (per-row NLL, DSS and CRPS of the recalibrated
    predictions), on float64 NumPy arrays already validated. A method that
    lists other kinds in ``kinds`` also implements ``_fit_distribution(P,
    seed)``, ``_cdf_distribution(d, y)``, ``_pit_distribution(d, y, seed)``,
    ``_quantile_distribution(d, q)`` and ``_score_rows_distribution(d, y,
    identity)`` (``identity=True``: the same computation with the identity map,
    which must give the scores of ``d`` itself).

    Examples
    --------
    >>> from calipers.recalibration import RegressionRecalibrator, VarianceScaling
    >>> isinstance(VarianceScaling(), RegressionRecalibrator)
    True
    """

    #: True when the recalibrated predictive distribution is again Gaussian.
    gaussian: ClassVar[bool] = True
    #: The kinds of :class:`~calipers.regression.PredictiveDistribution` the method
    #: recalibrates (Gaussian arrays are always accepted).
    kinds: ClassVar[tuple[str, ...]] = ("gaussian",)
    _injective: ClassVar[bool] = True
    _fit_call: ClassVar[str] = "fit(mean, variance=..., targets=...) (or std=...)"

    # ------------------------------------------------------------------ declared properties

    @property
    def injective(self) -> bool:
        """True when distinct predictive distributions always stay distinct.

        The condition under which the score improvement estimates the
        reduction of the calibration error (Gruber & Buettner 2022, Prop. 4.5).
        """
        return self._injective

    # ------------------------------------------------------------------ fit and predict

    def _refuse(self, d: PredictiveDistribution) -> None:
        """Refuse a distribution whose kind this method does not recalibrate."""
        if d.kind not in self.kinds:
            name = type(self).__name__
            raise CalibrationInputError(
                f"{name} recalibrates {' and '.join(self.kinds)} predictions only (means with "
                "variance= or std=, or a calipers.regression.Gaussian); got a "
                f"{type(d).__name__} (kind {d.kind!r}). QuantileRecalibration recalibrates "
                "every kind of predictive distribution"
            )

    def _read(
        self, mean: Any, variance: Any, std: Any, targets: Any, sample_weight: Any
    ) -> GaussianPredictions | ProbabilisticPredictions:
        """Gaussian predictions (arrays, or a ``Gaussian``) or another accepted kind, checked."""
        if _is_distribution(mean):
            P = check_predictive(
                mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
            )
            d = P.distribution
            kw = _gaussian_arrays(d)
            if kw is not None:
                return check_gaussian(
                    kw.pop("mean"), **kw, targets=P.targets, sample_weight=P.sample_weight
                )
            self._refuse(d)
            return P
        return check_gaussian(
            mean, variance=variance, std=std, targets=targets, sample_weight=sample_weight
        )

    def _read_without_targets(
        self, mean: Any, variance: Any, std: Any
    ) -> GaussianPredictions | PredictiveDistribution:
        """Validate predictions that come without targets (quantiles, intervals, variances).

        :func:`check_gaussian` requires targets; the means stand in for them (they
        are checked first, so every message still names the caller's argument).
        """
        if isinstance(mean, ProbabilisticPredictions):
            mean = mean.distribution
        if isinstance(mean, PredictiveDistribution):
            if variance is not None or std is not None:
                raise CalibrationInputError(
                    f"mean is a {type(mean).__name__}, which holds its own spread; pass "
                    "variance= and std= only with Gaussian means"
                )
            kw = _gaussian_arrays(mean)
            if kw is not None:
                mu = kw.pop("mean")
                return check_gaussian(mu, **kw, targets=mu)
            self._refuse(mean)
            return mean
        if isinstance(mean, GaussianPredictions):
            return check_gaussian(mean, variance=variance, std=std)
        return check_gaussian(mean, variance=variance, std=std, targets=mean)

    @spread_by_name
    def fit(
        self,
        mean: Any,
        *,
        variance: Any = None,
        std: Any = None,
        targets: Any = None,
        sample_weight: Any = None,
        seed: Any = 0,
    ) -> RegressionRecalibrator:
        """Fit the map on a calibration split of predictions.

        Parameters
        ----------
        mean : array-like of shape (n,), GaussianPredictions or PredictiveDistribution
            Predicted means, in target units; or a predictive distribution of
            a kind in :attr:`kinds` (then no ``variance``/``std``).
        variance : array-like of shape (n,), optional
            Predicted variances (> 0), keyword-only. Give exactly one of ``variance``
            and ``std``.
        std : array-like of shape (n,), optional
            Predicted standard deviations (> 0), keyword-only.
        targets : array-like of shape (n,)
            Observed targets.
        sample_weight : array-like of shape (n,), optional
            Non-negative row weights (a weight of 2 counts like the row twice).
        seed : int, numpy.random.Generator or None, default 0
            Seed of the uniform draws of the randomised PIT (Czado, Gneiting &
            Held 2009) of distributions with atoms or unknown tails
            (:meth:`calipers.regression.PredictiveDistribution.pit_interval`),
            drawn as :func:`calipers.regression.pit_values` draws them (an
            integer seeds ``numpy.random.default_rng([seed, 2009])``);
            Gaussian predictions draw nothing. None draws fresh entropy.

        Returns
        -------
        self
        """
        name = type(self).__name__
        self._check_params(f"{name}.fit")
        rng_seed = _seed(seed)
        P = self._read(mean, variance, std, targets, sample_weight)
        for key in self.schema.state:  # a failed refit leaves no half-fitted state
            self.__dict__.pop(key, None)
        if isinstance(P, GaussianPredictions):
            self._fit(P)
        else:
            self._fit_distribution(P, rng_seed)
        self._check_state(f"{name}.fit produced an invalid state")
        return self

    @spread_by_name
    def predict_cdf(
        self, mean: Any, *, variance: Any = None, std: Any = None, targets: Any = None
    ) -> np.ndarray:
        """Recalibrated CDF values ``F'_i(y_i)`` of the targets, in [0, 1].

        The recalibrated PIT of continuous predictions: uniform on [0, 1] when
        the recalibrated predictions are calibrated in distribution (Kuleshov
        et al. 2018, §3). At an atom (counts, quantile sets beyond their
        outermost quantiles) this is the upper end; :meth:`predict_pit` gives
        the randomised PIT.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``(n,)`` float64; a tensor on the input's device (of its floating
            dtype) when the predictions (or, for a distribution, the targets)
            are tensors.
        """
        self._ready()
        P = self._read(mean, variance, std, targets, None)
        if isinstance(P, GaussianPredictions):
            out = self._cdf(P.mean, P.variance, P.targets)
        else:
            out = self._cdf_distribution(P.distribution, P.targets)
        return _back(out, mean, variance, std, targets)

    @spread_by_name
    def predict_pit(
        self,
        mean: Any,
        *,
        variance: Any = None,
        std: Any = None,
        targets: Any = None,
        seed: Any = 0,
    ) -> np.ndarray:
        """Recalibrated PIT values: ``R(U_i)`` for a quantile map, ``F'_i(y_i)`` otherwise.

        For continuous predictions this is :meth:`predict_cdf`. For
        predictions with atoms or unknown tails the PIT ``U_i`` is randomised
        within :meth:`~calipers.regression.PredictiveDistribution.pit_interval`
        (Czado, Gneiting & Held 2009), with the draws seeded by ``seed``, and
        then recalibrated; uniform on [0, 1] when the recalibrated
        predictions are calibrated.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``(n,)`` float64 in [0, 1] (a tensor as in :meth:`predict_cdf`).
        """
        self._ready()
        rng_seed = _seed(seed)
        P = self._read(mean, variance, std, targets, None)
        if isinstance(P, GaussianPredictions):
            out = self._cdf(P.mean, P.variance, P.targets)
        else:
            out = self._pit_distribution(P.distribution, P.targets, rng_seed)
        return _back(out, mean, variance, std, targets)

    def _quantiles(self, mean: Any, variance: Any, std: Any, levels: np.ndarray) -> np.ndarray:
        R = self._read_without_targets(mean, variance, std)
        if isinstance(R, GaussianPredictions):
            return self._quantile(R.mean, R.variance, levels)
        return self._quantile_distribution(R, levels)

    @spread_by_name
    def predict_quantile(
        self, mean: Any, *, variance: Any = None, std: Any = None, q: Any = 0.5
    ) -> np.ndarray:
        """Quantiles ``F'^{-1}_i(q)`` of the recalibrated predictive distributions.

        Parameters
        ----------
        mean, variance, std
            The predictions (as in :meth:`fit`; no targets).
        q : float or array-like of shape (m,), default 0.5
            Levels strictly between 0 and 1, as numbers (a string such as
            ``"0.5"`` is refused). Every such float64 level has a finite
            quantile, ``1 - 1e-16`` included.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``(n,)`` for a scalar ``q``, ``(n, m)`` for ``m`` levels, in target
            units (a tensor on the input's device for tensor predictions; a
            distribution gives NumPy arrays).
        """
        self._ready()
        levels, scalar = _levels(q, "q")
        out = self._quantiles(mean, variance, std, levels)
        return _back(out[:, 0] if scalar else out, mean, variance, std)

    @spread_by_name
    def predict_interval(
        self, mean: Any, *, variance: Any = None, std: Any = None, level: float = 0.9
    ) -> tuple[np.ndarray, np.ndarray]:
        """Central prediction intervals ``[F'^{-1}((1 - level) / 2), F'^{-1}((1 + level) / 2)]``.

        Parameters
        ----------
        mean, variance, std
            The predictions (as in :meth:`fit`; no targets).
        level : float, default 0.9
            Nominal coverage, strictly between 0 and 1.

        Returns
        -------
        (lower, upper) : tuple of numpy.ndarray or torch.Tensor
            Each ``(n,)``, in target units (tensors on the input's device for
            tensor predictions).
        """
        self._ready()
        lv, scalar = _levels(level, "level")
        if not scalar:
            raise CalibrationInputError(f"level must be one number in (0, 1); got {level!r}")
        a = float(lv[0])
        out = self._quantiles(mean, variance, std, np.array([(1.0 - a) / 2.0, (1.0 + a) / 2.0]))
        return _back(out[:, 0], mean, variance, std), _back(out[:, 1], mean, variance, std)

    @spread_by_name
    def scores(
        self,
        mean: Any,
        *,
        variance: Any = None,
        std: Any = None,
        targets: Any = None,
        sample_weight: Any = None,
    ) -> dict[str, float]:
        """Mean proper scores of the recalibrated predictions.

        ``{"nll": ..., "dss": ..., "crps": ...}``: the negative
        log-likelihood (nats, ``0.5 log(2 pi)`` included), the
        Dawid-Sebastiani score ``(y - m)**2 / v + log v`` of the recalibrated
        mean ``m`` and variance ``v`` (Gruber & Buettner 2022, §2.3), and the
        CRPS (target units), each the (weighted) mean over rows. For a
        Gaussian output these are the closed forms of
        :mod:`calipers.regression.scores`. For other kinds of predictive
        distribution the method says which scores it gives (for
        ``QuantileRecalibration``: ``"crps"``, and ``"nll"`` where the
        distribution has a density or mass function).
        """
        self._ready()
        P = self._read(mean, variance, std, targets, sample_weight)
        if isinstance(P, GaussianPredictions):
            return self._scores(P)
        rows = self._score_rows_distribution(P.distribution, P.targets)
        return {k: P.weighted_mean(v) for k, v in rows.items()}

    @spread_by_name
    def improvement(
        self,
        mean: Any,
        *,
        variance: Any = None,
        std: Any = None,
        targets: Any = None,
        sample_weight: Any = None,
    ) -> dict[str, float]:
        """Score before recalibration minus score after, per score (positive = it helped).

        For an injective recalibration (see :attr:`injective`) fitted on other
        data, the reduction of a proper score estimates the reduction of its
        calibration error (Gruber & Buettner 2022, Thm. 4.3 and Prop. 4.5):
        evaluate on a held-out split, not on the calibration split.

        Returns
        -------
        dict
            ``{"nll", "dss", "crps"}`` (for other kinds of distribution the
            scores of :meth:`scores`), each ``score(original) - score(recalibrated)``;
            the original's scores of another kind are its own
            (:func:`calipers.regression.crps`, :func:`calipers.regression.log_score`;
            for an ensemble the standard ensemble estimator), the numbers a user
            compares with.
        """
        self._ready()
        P = self._read(mean, variance, std, targets, sample_weight)
        if isinstance(P, GaussianPredictions):
            before = {
                "nll": gaussian_nll(P),
                "dss": dawid_sebastiani(P),
                "crps": crps_gaussian(P),
            }
            after = self._scores(P)
            return {k: before[k] - after[k] for k in SCORES}
        # before: the distribution's own scores, as calipers.regression.crps and log_score
        # (and the report's uncalibrated row) give them; for an ensemble its own CRPS, not
        # that of the quantile set of sorted members the recalibrated distribution is built on
        rows_after = self._score_rows_distribution(P.distribution, P.targets)
        own = {"crps": crps_per_row, "nll": log_score_per_row}
        return {k: P.weighted_mean(own[k](P)) - P.weighted_mean(v) for k, v in rows_after.items()}

    @spread_by_name
    def scores_per_row(
        self, mean: Any, *, variance: Any = None, std: Any = None, targets: Any = None
    ) -> dict[str, np.ndarray]:
        """Per-row proper scores of the recalibrated predictions.

        ``{"nll", "dss", "crps"}`` (the keys of :meth:`scores`), each an
        ``(n,)`` float64 array whose (weighted) mean is :meth:`scores`; for
        paired comparisons with the per-row scores before recalibration
        (:func:`calipers.regression.gaussian_nll_per_row` and its siblings).

        Examples
        --------
        >>> import numpy as np
        >>> from calipers.recalibration import VarianceScaling
        >>> rng = np.random.default_rng(0)
        >>> mu = rng.normal(size=500); y = mu + 2.0 * rng.normal(size=500)
        >>> rc = VarianceScaling().fit(mu, variance=np.ones(500), targets=y)
        >>> rows = rc.scores_per_row(mu, variance=np.ones(500), targets=y)
        >>> bool(np.isclose(rows["nll"].mean(), rc.scores(mu, variance=np.ones(500), targets=y)["nll"]))
        True
        """
        self._ready()
        P = self._read(mean, variance, std, targets, None)
        if isinstance(P, GaussianPredictions):
            rows = self._score_rows(P.mean, P.variance, P.targets)
            return {k: np.asarray(rows[k], dtype=np.float64) for k in SCORES}
        rows = self._score_rows_distribution(P.distribution, P.targets)
        return {k: np.asarray(v, dtype=np.float64) for k, v in rows.items()}

    def _scores(self, G: GaussianPredictions) -> dict[str, float]:
        rows = self._score_rows(G.mean, G.variance, G.targets)
        return {k: G.weighted_mean(rows[k]) for k in SCORES}

    # ------------------------------------------------------------------ to implement

    def _fit(self, G: GaussianPredictions) -> None:  # pragma: no cover
        raise NotImplementedError

    def _cdf(
        self, mu: np.ndarray, var: np.ndarray, y: np.ndarray
    ) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _quantile(
        self, mu: np.ndarray, var: np.ndarray, q: np.ndarray
    ) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _score_rows(
        self, mu: np.ndarray, var: np.ndarray, y: np.ndarray
    ) -> dict[str, np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    # the kinds other than "gaussian" (only reached for kinds listed in ``kinds``)

    def _fit_distribution(self, P: ProbabilisticPredictions, seed: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def _cdf_distribution(
        self, d: PredictiveDistribution, y: np.ndarray
    ) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _pit_distribution(
        self, d: PredictiveDistribution, y: np.ndarray, seed: Any
    ) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _quantile_distribution(
        self, d: PredictiveDistribution, q: np.ndarray
    ) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _score_rows_distribution(
        self, d: PredictiveDistribution, y: np.ndarray, identity: bool = False
    ) -> dict[str, np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------------ schema

    @classmethod
    def _read_document(cls, doc: Any) -> Any:
        """The regression recalibrator of this class a parsed document describes."""
        return _read_document(doc, expected=cls)


def _read_document(
    doc: Any, expected: type[RegressionRecalibrator] | None = None
) -> RegressionRecalibrator:
    """The regression recalibrator a parsed JSON document describes (every field checked)."""
    if not isinstance(doc, dict) or "calipers_recalibrator" not in doc:
        raise CalibrationInputError(
            "not a calipers recalibrator JSON document (no 'calipers_recalibrator' key)"
        )
    name = doc["calipers_recalibrator"]
    if not (isinstance(name, str) and name in _REGRESSION_REGISTRY):
        raise CalibrationInputError(
            f"unknown regression recalibrator {_show(name)}; known: {sorted(_REGRESSION_REGISTRY)}"
        )
    cls = _REGRESSION_REGISTRY[name]
    if expected is not None and not issubclass(cls, expected):
        raise CalibrationInputError(f"the document holds a {name}, not a {expected.__name__}")
    return cls._from_document(doc)


#: The registered regression recalibrators, by class name: a live view of the one
#: registry of :mod:`calipers.recalibration._registry`.
_REGRESSION_REGISTRY: Mapping[str, type[RegressionRecalibrator]] = _registry.Family(
    RegressionRecalibrator
)


class _GaussianOutput(RegressionRecalibrator):
    """A recalibrator whose output is N(mu, g(sigma**2)): only the variance changes.

    Subclasses implement ``_variance(var)``; CDF, quantiles and scores are the
    Gaussian closed forms (:mod:`calipers.regression.scores`).
    """

    gaussian: ClassVar[bool] = True

    def _variance(self, var: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _new_variance(self, var: np.ndarray) -> np.ndarray:
        out = self._variance(var)
        bad = ~(np.isfinite(out) & (out > 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CalibrationInputError(
                f"{type(self).__name__}: the recalibrated variance of row {i} is "
                f"{float(out[i])!r} (from variance {float(var[i])!r}); it over- or underflows "
                "float64"
            )
        return out

    @spread_by_name
    def predict_variance(self, mean: Any, *, variance: Any = None, std: Any = None) -> np.ndarray:
        """Recalibrated variances (squared target units); the means are unchanged.

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``(n,)`` float64, all > 0 (a tensor on the input's device, of its
            floating dtype, for tensor predictions).
        """
        self._ready()
        G = self._read_without_targets(mean, variance, std)
        assert isinstance(G, GaussianPredictions)  # kinds == ("gaussian",)
        return _back(self._new_variance(G.variance), mean, variance, std)

    def _cdf(self, mu: np.ndarray, var: np.ndarray, y: np.ndarray) -> np.ndarray:
        from scipy.special import ndtr

        return np.asarray(ndtr((y - mu) / np.sqrt(self._new_variance(var))))

    def _quantile(self, mu: np.ndarray, var: np.ndarray, q: np.ndarray) -> np.ndarray:
        from scipy.special import ndtri

        sd = np.sqrt(self._new_variance(var))
        return np.asarray(mu[:, None] + sd[:, None] * ndtri(q)[None, :])

    def _score_rows(self, mu: np.ndarray, var: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        from ...regression import (
            crps_gaussian_per_row,
            dawid_sebastiani_per_row,
            gaussian_nll_per_row,
        )

        v = self._new_variance(var)
        return {
            "nll": gaussian_nll_per_row(mu, variance=v, targets=y),
            "dss": dawid_sebastiani_per_row(mu, variance=v, targets=y),
            "crps": crps_gaussian_per_row(mu, variance=v, targets=y),
        }
