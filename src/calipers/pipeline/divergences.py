"""Divergences d(E[target | score], score) between bin means (the calipers pipeline).

Every divergence is called on per-bin means, ``target`` (the estimate of
E[T | S], "accuracy") and ``score`` (the mean score, "confidence"), both
``(B,)`` for a Bernoulli lens or ``(B, d)`` for a vector lens, and returns one
value per bin. A divergence may carry a ``root``: the pipeline raises the
aggregated value (after averaging or summing over classes) to ``1/root``,
which is how Lp calibration errors are defined (``(E|...|^p)^{1/p}``).

A 1-D (Bernoulli) mean ``q`` stands for the two-point distribution
``[1 - q, q]``; every divergence below is written so that its scalar form is
the usual one: ``tvd`` and ``l1`` give ``|a - b|``, ``squared_l2`` gives
``(a - b)^2`` (not ``2 (a - b)^2``; docs/how-calipers-computes.md §5.4 explains where the
factor 2 of Popordanoska et al.'s (2024) class-wise code comes from), ``kl`` the binary KL.

Examples
--------
>>> import numpy as np
>>> from calipers.pipeline.divergences import get_divergence
>>> t, s = np.array([0.8, 0.1]), np.array([0.6, 0.3])
>>> get_divergence("l1")(t, s).tolist()
[0.20000000000000007, 0.19999999999999998]
>>> InterInterval(1/3, 2/3)(np.array([0.8, 0.5, 0.1]), np.zeros(3)).round(4).tolist()
[0.1333, 0.0, 0.2333]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..validation import CalibrationInputError

__all__ = [
    "Divergence",
    "Lp",
    "TVD",
    "KL",
    "Bregman",
    "InterInterval",
    "Mahalanobis",
    "get_divergence",
]


class Divergence:
    """Base class: ``__call__(target, score) -> (B,)``; optional final ``root``."""

    root: float | None = None

    def __call__(self, target: np.ndarray, score: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError


@dataclass(frozen=True)
class Lp(Divergence):
    """``|target - score|^p`` (summed over coordinates for vectors).

    Parameters
    ----------
    p : float, default 1
        The order (``p >= 1``).
    root : bool, default True
        Take the ``1/p`` root of the aggregated value, giving the Lp calibration
        error ``(E |...|^p)^{1/p}`` (Gruber & Buettner (2022) Def. C.1); ``root=False`` gives the
        "squared space" values Gruber & Buettner's (2022) code reports (docs/how-calipers-computes.md §0.11).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.pipeline.divergences import Lp
    >>> Lp(2)(np.array([0.5]), np.array([0.2])).round(6).tolist(), Lp(2).root
    ([0.09], 2.0)
    """

    p: float = 1.0
    root_: bool = field(default=True, repr=False)

    def __init__(self, p: float = 1.0, root: bool = True) -> None:
        if not p >= 1:
            raise CalibrationInputError(f"Lp needs p >= 1; got {p!r}")
        object.__setattr__(self, "p", float(p))
        object.__setattr__(self, "root_", bool(root))

    @property
    def root(self) -> float | None:  # type: ignore[override]
        return self.p if (self.root_ and self.p != 1) else None

    def __call__(self, target: np.ndarray, score: np.ndarray) -> np.ndarray:
        d = np.abs(target - score) ** self.p
        return d if d.ndim == 1 else d.sum(axis=1)


@dataclass(frozen=True)
class TVD(Divergence):
    """Total variation distance ``1/2 ||target - score||_1`` (Kirchenbauer, Oaks & Heim's (2022) default).

    For a Bernoulli mean this is ``|a - b|`` (the TVD of ``[1-a, a]`` and
    ``[1-b, b]``), so top-label + TVD is Guo et al.'s ECE.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.pipeline.divergences import TVD
    >>> TVD()(np.array([[1.0, 0.0, 0.0]]), np.array([[0.6, 0.3, 0.1]])).round(6).tolist()
    [0.4]
    """

    def __call__(self, target: np.ndarray, score: np.ndarray) -> np.ndarray:
        d = np.abs(target - score)
        return d if d.ndim == 1 else 0.5 * d.sum(axis=1)


def _xlogy_ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.special import xlogy

    with np.errstate(divide="ignore", invalid="ignore"):
        return xlogy(a, a) - xlogy(a, b)


@dataclass(frozen=True)
class KL(Divergence):
    """Kullback-Leibler divergence ``KL(target || score)``.

    Popordanoska et al. (2024) eq. 10 (CE_KL = E[KL(P(Y | g) || g)]); binary KL for Bernoulli
    means. Infinite when a bin's mean score gives 0 to an outcome that occurs.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.pipeline.divergences import KL
    >>> KL()(np.array([1.0]), np.array([0.5])).round(6).tolist()    # log 2
    [0.693147]
    """

    def __call__(self, target: np.ndarray, score: np.ndarray) -> np.ndarray:
        if target.ndim == 1:
            return _xlogy_ratio(target, score) + _xlogy_ratio(1 - target, 1 - score)
        return _xlogy_ratio(target, score).sum(axis=1)


@dataclass(frozen=True)
class Bregman(Divergence):
    """Bregman divergence ``D_F(t, s) = F(t) - F(s) - <grad F(s), t - s>``.

    Popordanoska et al. (2024) eq. 2 / Gruber & Buettner (2022) §2.3: the divergence of the proper score whose
    negative generalized entropy is the convex function ``F``. ``F`` and
    ``grad`` act row-wise on ``(B, d)`` arrays (``(B,)`` for Bernoulli means,
    where ``F`` receives the probability ``q`` of outcome 1).

    Examples
    --------
    >>> import numpy as np
    >>> sq = Bregman(lambda q: (q ** 2).sum(-1), lambda q: 2 * q)
    >>> round(float(sq(np.array([[0.2, 0.8]]), np.array([[0.5, 0.5]]))[0]), 12)   # ||t - s||^2
    0.18
    """

    F: Callable[[np.ndarray], np.ndarray]
    grad: Callable[[np.ndarray], np.ndarray]

    def __call__(self, target: np.ndarray, score: np.ndarray) -> np.ndarray:
        inner = self.grad(score) * (target - score)
        if inner.ndim > 1:
            inner = inner.sum(axis=-1)
        return np.asarray(self.F(target) - self.F(score) - inner, dtype=np.float64)


@dataclass(frozen=True)
class InterInterval(Divergence):
    """Inter-interval (Likert) distance of Kirchenbauer, Oaks & Heim (2022) eq. 7.

    ``d_[l,h](g, y) = max(0, l - y_bar, y_bar - h)``: zero while the bin's mean
    target stays inside the category ``[low, high]``; depends only on the mean
    target (column ``dim`` for vector lenses).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.pipeline.divergences import InterInterval
    >>> InterInterval(0.33, 0.66)(np.array([0.8, 0.1, 0.5]), np.zeros(3)).round(6).tolist()
    [0.14, 0.23, 0.0]
    """

    low: float
    high: float
    dim: int = 0

    def __call__(self, target: np.ndarray, score: np.ndarray) -> np.ndarray:
        t = target if target.ndim == 1 else target[:, self.dim]
        return np.maximum(0.0, np.maximum(self.low - t, t - self.high))


@dataclass(frozen=True, eq=False)
class Mahalanobis(Divergence):
    """Generalized Mahalanobis distance ``sqrt((t - s) M (t - s)^T)`` (Kirchenbauer, Oaks & Heim (2022) eq. 11).

    ``M`` must be symmetric positive semi-definite (checked with a tolerance of
    ``1e-10`` times its largest eigenvalue); ``M = I`` gives the L2 norm. For a
    Bernoulli lens ``M`` is 2 x 2 and acts on ``[1 - q, q]``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.pipeline.divergences import Mahalanobis
    >>> Mahalanobis(np.eye(2))(np.array([[1.0, 0.0]]), np.array([[0.7, 0.3]])).round(6).tolist()
    [0.424264]
    >>> Mahalanobis([[1, 2], [2, 1]])
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: M must be positive semi-definite; its smallest eigenvalue is -1
    """

    M: Any

    def __post_init__(self) -> None:
        M = np.asarray(self.M, dtype=np.float64)
        if M.ndim != 2 or M.shape[0] != M.shape[1]:
            raise CalibrationInputError(f"M must be a square matrix; got shape {M.shape}")
        if not np.allclose(M, M.T, atol=1e-12):
            raise CalibrationInputError("M must be symmetric")
        ev = np.linalg.eigvalsh(M)
        if ev.min() < -1e-10 * max(1.0, abs(ev).max()):
            raise CalibrationInputError(
                f"M must be positive semi-definite; its smallest eigenvalue is {ev.min():.3g}"
            )
        object.__setattr__(self, "M", M)

    def __call__(self, target: np.ndarray, score: np.ndarray) -> np.ndarray:
        d = target - score
        if d.ndim == 1:
            d = np.stack([-d, d], axis=1)
        if d.shape[1] != self.M.shape[0]:
            raise CalibrationInputError(
                f"M is {self.M.shape[0]}x{self.M.shape[0]} but the lens has {d.shape[1]} columns"
            )
        q = np.einsum("bi,ij,bj->b", d, self.M, d)
        return np.sqrt(np.maximum(q, 0.0))


_NAMED: dict[str, Divergence] = {
    "l1": Lp(1),
    "tvd": TVD(),
    "l2": Lp(2, root=True),
    "squared_l2": Lp(2, root=False),
    "kl": KL(),
}


def get_divergence(divergence: str | Divergence | Callable[..., Any]) -> Divergence:
    """Resolve a divergence by name (``"l1"``, ``"tvd"``, ``"l2"``,
    ``"squared_l2"``, ``"kl"``) or pass a :class:`Divergence` through.

    A plain callable ``f(target, score) -> (B,)`` is wrapped as a divergence.

    Examples
    --------
    >>> from calipers.pipeline.divergences import get_divergence
    >>> get_divergence("squared_l2").root is None, get_divergence("l2").root
    (True, 2.0)
    """
    if isinstance(divergence, Divergence):
        return divergence
    if isinstance(divergence, str) and divergence in _NAMED:
        return _NAMED[divergence]
    if callable(divergence):
        fn = divergence

        class _Wrapped(Divergence):
            def __call__(self, target: np.ndarray, score: np.ndarray) -> np.ndarray:
                return np.asarray(fn(target, score), dtype=np.float64)

        return _Wrapped()
    raise CalibrationInputError(
        f"unknown divergence {divergence!r}; use one of {sorted(_NAMED)} or Lp, KL, Bregman, "
        "InterInterval, Mahalanobis"
    )
