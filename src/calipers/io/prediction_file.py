"""What a prediction file holds once read, and the error raised when it cannot be read.

:class:`PredictionFile` is the result of :func:`calipers.io.read_predictions`;
:class:`PredictionFileError` (a :class:`ValueError`) is raised for any file that
cannot be read, with a message saying how to fix it. ``_Read`` is what each
format reader hands back to :func:`~calipers.io.read_predictions`: the array,
whether it holds probabilities or logits, the labels (if any), a note saying how
they were found, and how the kind was decided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from ..validation import Predictions


Kind = Literal["probs", "logits"]

KindBasis = Literal["argument", "name", "values", "default"]


class PredictionFileError(ValueError):
    """A prediction or labels file cannot be read, with a message saying how to fix it.

    A subclass of :class:`ValueError`.
    """


@dataclass(frozen=True, eq=False)
class PredictionFile:
    """Arrays read from a prediction file by :func:`read_predictions`.

    Attributes
    ----------
    probs : numpy.ndarray or None
        ``(n, k)`` probabilities (or ``(n,)`` P(y = 1)) when ``kind == "probs"``.
    logits : numpy.ndarray or None
        ``(n, k)`` (or ``(n,)``) logits when ``kind == "logits"``.
    labels : numpy.ndarray or None
        ``(n,)`` labels, or None when the file holds none and no labels file
        was given.
    source : str
        The path that was read (and the labels file, when one was given).
    kind : {"probs", "logits"}
        Which of ``probs`` and ``logits`` is set.
    note : str
        How the arrays were found (keys or columns used, and how the kind was
        decided), for messages and report headers.
    kind_basis : {"argument", "name", "default", "values"}, default "default"
        How ``kind`` was decided: given by the caller (``logits=`` or an
        explicit key), by a key or column name, by the format's convention,
        or detected from the values of a bare array (see :mod:`calipers.io`).
        When ``"values"``, :attr:`note` says what was detected and why.

    Examples
    --------
    >>> import numpy as np
    >>> pf = PredictionFile(probs=np.array([[0.8, 0.2]]), logits=None,
    ...                     labels=np.array([0]), source="x.npz", kind="probs", note="")
    >>> pf.array.shape, pf.n_samples, pf.kind_basis
    ((1, 2), 1, 'default')
    """

    probs: np.ndarray | None
    logits: np.ndarray | None
    labels: np.ndarray | None
    source: str
    kind: Kind
    note: str
    kind_basis: KindBasis = "default"

    @property
    def array(self) -> np.ndarray:
        """The probabilities or the logits, whichever the file holds."""
        arr = self.logits if self.kind == "logits" else self.probs
        assert arr is not None
        return arr

    @property
    def n_samples(self) -> int:
        """Number of rows ``n``."""
        return int(self.array.shape[0])

    @property
    def detected(self) -> bool:
        """True when :attr:`kind` was detected from the values (``kind_basis == "values"``)."""
        return self.kind_basis == "values"

    def check(self, *, renormalize: bool = False, **kwargs: Any) -> Predictions:
        """Validate with :func:`calipers.check_predictions` and return :class:`~calipers.Predictions`.

        Parameters
        ----------
        renormalize : bool, default False
            Divide each probability row by its sum (never done silently).
        **kwargs
            Passed on to :func:`~calipers.check_predictions` (``sum_tol``,
            ``sample_weight``, ...).

        Raises
        ------
        PredictionFileError
            If the file holds no labels.
        calipers.CalibrationInputError
            If the values break a rule of the validation layer.

        Examples
        --------
        >>> import numpy as np
        >>> pf = PredictionFile(probs=None, logits=np.array([[2.0, 0.0]]),
        ...                     labels=np.array([0]), source="x.npz", kind="logits", note="")
        >>> P = pf.check()
        >>> np.round(P.probs, 4)
        array([[0.8808, 0.1192]])
        """
        from ..validation import check_predictions

        if self.labels is None:
            raise PredictionFileError(
                f"{self.source} holds no labels ({self.note}); give a labels file "
                "(labels_path=..., on the command line --labels FILE) or name the "
                "labels array (labels_key=..., --labels-key KEY)"
            )
        return check_predictions(
            self.array,
            self.labels,
            logits=self.kind == "logits",
            renormalize=renormalize,
            **kwargs,
        )


class _Read(NamedTuple):
    """What a format reader found."""

    arr: np.ndarray
    kind: Kind
    labels: np.ndarray | None
    note: str
    basis: KindBasis


def _err(msg: str) -> PredictionFileError:
    return PredictionFileError(msg)
