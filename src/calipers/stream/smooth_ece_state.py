"""Mergeable state for SmoothECE (Błasiok & Nakkiran 2023): streamed kernel-grid masses.

:func:`calipers.smece` sees the data only through the linear split of every
row's weight ``w`` and ``w (score - target)`` onto the nodes of its kernel grid
(module :mod:`calipers.metrics.smooth_ece`). The grid has ``E = 1001`` nodes for every
bandwidth ``s >= 0.01`` and ``E = max(2000, round(20/s)) // 2 + 1`` nodes
below, so the masses depend on the bandwidth only through ``E``.

The fixed-point search of ``smece`` (10 bisection steps on [0, 1], Błasiok &
Nakkiran 2023) only evaluates bandwidths that are multiples of ``2**-10``, and
never one below ``1e-3``; below 0.01 these are ``k/1024`` for ``k = 2..10``,
whose grids have 1025, 1139, 1281, 1464, 1707, 2049, 2561, 3414 and 5121
nodes. A :class:`SmoothECEState` keeps the two rows of masses of each of these
ten grid sizes (``GRID_SIZES``: 41 524 floats, 332 KB in memory and about 1 MB
of JSON, whatever the number of rows): batches add, states merge, and
:meth:`SmoothECEState.compute` runs the same FFT smoothing and fixed-point
search as ``smece``, so it gives the in-memory value up to the order of
summation of the masses (relative 1e-12 in the tests) for every fixed point.

An explicit ``bandwidth`` is exact when its grid is stored: every ``s >=
0.01``, the ``k/1024`` above, and any other bandwidth with one of those grid
sizes. Other bandwidths (e.g. ``s = 0.003``, 3334 nodes, or ``s < 2/1024``)
raise :class:`~calipers.validation.CalibrationInputError`, naming the stored
ones; :func:`calipers.smece` on a seeded subsample computes them.

An update splits each row onto all ten grids, chunk by chunk so that the
per-grid passes stay in cache: it costs several times the single-grid
binning (see the large-data guide for measured times).
"""

from __future__ import annotations

import json
from typing import Any, Literal

import numpy as np

from ..metrics.smooth_ece import (
    SEARCH_EPS,
    SEARCH_STEPS,
    _check_bandwidth,
    _fixed_point,
    _Grid,
    _grid_size,
    _SmoothECE,
)
from ..pipeline.lenses import lens_arrays
from ..validation import CalibrationInputError, check_predictions

__all__ = ["SmoothECEState"]

_FORMAT = "calipers.SmoothECEState/2"
#: Kernel-grid nodes of every bandwidth >= 0.01.
N_NODES = 1001
#: Smallest bandwidth whose kernel grid has N_NODES nodes.
MIN_STATE_BANDWIDTH = 0.01
#: Bandwidths below 0.01 that the fixed-point search may evaluate: k / 2**10 >= 1e-3.
SEARCH_BANDWIDTHS_BELOW = tuple(
    k / 2**SEARCH_STEPS
    for k in range(1, 2**SEARCH_STEPS)
    if SEARCH_EPS <= k / 2**SEARCH_STEPS < MIN_STATE_BANDWIDTH
)
#: Grid sizes whose masses a state keeps (ascending): those of every bandwidth the
#: search may evaluate (multiples of 2**-10 from 1e-3 on), which covers every s >= 0.01.
GRID_SIZES = tuple(
    sorted(
        {
            _grid_size(k / 2**SEARCH_STEPS)
            for k in range(1, 2**SEARCH_STEPS + 1)
            if k / 2**SEARCH_STEPS >= SEARCH_EPS
        }
    )
)
#: Rows per chunk of an update (the per-grid passes then work in cache).
_CHUNK = 1 << 16


def _split_onto_grids(
    f: np.ndarray, values: list[np.ndarray | None], sizes: tuple[int, ...]
) -> dict[int, np.ndarray]:
    """The masses of :func:`calipers.metrics.smooth_ece._bin_masses` for every grid size in ``sizes``.

    The same linear split (node ``j = min(floor(f (E - 1)), E - 2)`` clipped
    at 0 receives ``1 - (f (E - 1) - j)`` of each value, node ``j + 1`` the
    rest; a row None means unit values), done chunk by chunk of rows with
    buffers reused across the grids; equal to ``_bin_masses`` up to the
    order of summation.
    """
    out = {E: np.zeros((len(values), E)) for E in sizes}
    k0 = min(f.size, _CHUNK)
    s_buf, idx_buf, t_buf = np.empty(k0), np.empty(k0, dtype=np.intp), np.empty(k0)
    for a0 in range(0, f.size, _CHUNK):
        fc = f[a0 : a0 + _CHUNK]
        k = fc.size
        s, idx, t = s_buf[:k], idx_buf[:k], t_buf[:k]
        vc = [None if v is None else v[a0 : a0 + _CHUNK] for v in values]
        for E in sizes:
            m = E - 1
            np.multiply(fc, float(m), out=s)
            np.copyto(idx, s, casting="unsafe")  # truncation == floor for s >= 0
            np.clip(idx, 0, m - 1, out=idx)
            s -= idx  # the share of the upper node
            acc = out[E]
            for r, v in enumerate(vc):
                a = np.bincount(idx, v, minlength=m)
                b = np.bincount(idx, s if v is None else np.multiply(s, v, out=t), minlength=m)
                acc[r, :-1] += a - b
                acc[r, 1:] += b
    return out


def _stored_bandwidths() -> str:
    """The bandwidths a state resolves, in words (for error messages)."""
    ks = [round(b * 2**SEARCH_STEPS) for b in SEARCH_BANDWIDTHS_BELOW]
    return (
        f"every bandwidth >= {MIN_STATE_BANDWIDTH} ({N_NODES} nodes) and, below it, "
        f"k/{2**SEARCH_STEPS} for k = {ks[0]}..{ks[-1]} (the ones the fixed-point search "
        f"may try) or any bandwidth sharing one of their grid sizes {GRID_SIZES[1:]}"
    )


class _MassGrid(_Grid):
    """The FFT form of :class:`calipers.metrics.smooth_ece._Grid`, built from stored masses."""

    def __init__(self, masses: np.ndarray) -> None:  # noqa: D107
        self.n_nodes = E = masses.shape[1]
        self.period = N = 2 * (E - 1)
        periodic = np.concatenate([masses, masses[:, E - 2 : 0 : -1]], axis=1)
        self.masses_hat = np.fft.rfft(periodic, axis=1)
        self.nodes = np.linspace(0.0, 1.0, E)
        d = np.arange(E // 2 - (E - 1), E // 2 + 1)
        self.tap_index = (-d) % N
        self.tap_offset = ((E // 2 - (E - 1) / 2) - d) / (E - 1)


class _StateEvaluator(_SmoothECE):
    """smECE_s from the stored masses (one FFT grid per grid size used); refuses others."""

    def __init__(self, masses: dict[int, np.ndarray]) -> None:  # noqa: D107
        self._masses = masses
        self._grids: dict[int, _Grid] = {}
        self._values: dict[float, float] = {}

    def grid(self, n_nodes: int) -> _Grid:
        g = self._grids.get(n_nodes)
        if g is None:
            g = self._grids[n_nodes] = _MassGrid(self._masses[n_nodes])
        return g

    def __call__(self, sigma: float) -> float:
        E = _grid_size(sigma)
        if E not in self._masses:
            raise CalibrationInputError(
                f"smECE at bandwidth {sigma:g} needs a kernel grid of {E} nodes, which a "
                f"SmoothECEState does not keep; it resolves {_stored_bandwidths()}. Use one "
                "of those, or calipers.smece on a seeded subsample"
            )
        return super().__call__(sigma)


class SmoothECEState:
    """Mergeable, serialisable SmoothECE (Błasiok & Nakkiran 2023) of streamed batches.

    Holds the kernel-grid masses of :func:`calipers.smece` (two rows, weight
    and weight times residual) for the ten grid sizes ``GRID_SIZES`` that the
    fixed-point search and every bandwidth ``>= 0.01`` use; see the module
    docstring for what is exact (every fixed point; explicit bandwidths whose
    grid is stored) and what is refused.

    Parameters
    ----------
    lens : {"auto", "top_label", "binary"}, default "auto"
        As in :func:`calipers.smece`.

    Attributes
    ----------
    masses : dict of int to ndarray of shape (2, E)
        Grid size ``E`` to the masses of weight (row 0, in units of rows
        or of ``sample_weight``) and of weight times ``score - target``.
    shape : list or None
        ``[n_classes, binary]`` of the first batch (None before any).

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.stream.smooth_ece_state import SmoothECEState
    >>> rng = np.random.default_rng(0)
    >>> P = rng.dirichlet(np.ones(4), size=2000); y = rng.integers(0, 4, 2000)
    >>> a = SmoothECEState(); a.update(P[:700], y[:700])
    >>> b = SmoothECEState(); b.update(P[700:], y[700:])
    >>> c = SmoothECEState.from_json(a.to_json()) + b
    >>> bool(np.isclose(c.compute(), cp.smece(P, y), rtol=1e-12, atol=0))
    True
    """

    def __init__(self, lens: Literal["auto", "top_label", "binary"] = "auto") -> None:
        if lens not in ("auto", "top_label", "binary"):
            raise CalibrationInputError(
                f"lens must be 'auto', 'top_label' or 'binary'; got {lens!r}"
            )
        self.lens = lens
        self.masses: dict[int, np.ndarray] = {E: np.zeros((2, E)) for E in GRID_SIZES}
        self.shape: list[Any] | None = None  # [n_classes, binary] of the first batch

    def update(
        self, probs: Any, labels: Any, sample_weight: Any = None, *, logits: bool = False
    ) -> None:
        """Add a batch (validated by :func:`calipers.check_predictions`).

        Parameters
        ----------
        probs, labels, sample_weight, logits
            As in :func:`calipers.smece`.

        Examples
        --------
        >>> from calipers.stream.smooth_ece_state import SmoothECEState
        >>> st = SmoothECEState(); st.update([0.2, 0.9], [0, 1])
        >>> float(st.masses[1001][0].sum()), float(st.masses[5121][0].sum())
        (2.0, 2.0)
        """
        P = check_predictions(probs, labels, logits=logits, sample_weight=sample_weight)
        shape = [int(P.n_classes), bool(P.binary)]
        if self.shape is None:
            self.shape = shape
        elif self.shape != shape:
            raise CalibrationInputError(
                f"this state holds batches of {self.shape[0]} classes (binary={self.shape[1]}); "
                f"the batch has {shape[0]} (binary={shape[1]})"
            )
        if int(P.probs.shape[0]) == 0:
            return
        f, y, w = lens_arrays(P, self.lens)
        f = np.ascontiguousarray(f, dtype=np.float64)
        resid = f - np.asarray(y, dtype=np.float64)
        if P.sample_weight is None:
            values: list[np.ndarray | None] = [None, resid]
        else:
            w = np.asarray(w, dtype=np.float64)
            values = [w, w * resid]
        for E, m in _split_onto_grids(f, values, GRID_SIZES).items():
            self.masses[E] += m

    def merge(self, other: SmoothECEState) -> SmoothECEState:
        """A new state with the masses of both (same lens and classes).

        Examples
        --------
        >>> from calipers.stream.smooth_ece_state import SmoothECEState
        >>> a = SmoothECEState(); a.update([0.2], [0]); b = SmoothECEState(); b.update([0.9], [1])
        >>> float((a + b).masses[1001][0].sum())
        2.0
        """
        if not isinstance(other, SmoothECEState) or other.lens != self.lens:
            raise CalibrationInputError("cannot merge SmoothECE states with different lenses")
        if None not in (self.shape, other.shape) and self.shape != other.shape:
            raise CalibrationInputError(
                f"cannot merge a state of {self.shape} (classes, binary) with one of {other.shape}"
            )
        out = SmoothECEState(self.lens)  # type: ignore[arg-type]
        out.masses = {E: self.masses[E] + other.masses[E] for E in GRID_SIZES}
        out.shape = self.shape if self.shape is not None else other.shape
        return out

    __add__ = merge

    def compute(self, bandwidth: float | None = None) -> float:
        """SmoothECE of all data seen (as :func:`calipers.smece`).

        Parameters
        ----------
        bandwidth : float, optional
            Default None: the fixed point ``s* = smECE_{s*}`` (Błasiok &
            Nakkiran 2023), by the bisection of :func:`calipers.smece`
            (always exact: every bandwidth it may try is stored). A number
            gives ``smECE_s`` when its kernel grid is stored: every ``s >=
            0.01`` and the ``k/1024``, ``k = 2..10`` (or a bandwidth with one
            of their grid sizes); others raise
            :class:`~calipers.validation.CalibrationInputError`.

        Returns
        -------
        float

        Examples
        --------
        >>> from calipers.stream.smooth_ece_state import SmoothECEState
        >>> st = SmoothECEState(); st.update([0.2, 0.6, 0.9], [0, 1, 1])
        >>> round(st.compute(bandwidth=0.1), 6)   # smece(..., bandwidth=0.1) gives 0.224314
        0.224314
        >>> round(st.compute(bandwidth=3 / 1024), 6)   # smece gives the same
        0.233326
        """
        if not self.masses[N_NODES][0].sum() > 0:
            raise CalibrationInputError("the state holds no samples (or only zero weights)")
        ev = _StateEvaluator(self.masses)
        if bandwidth is not None:
            return ev(_check_bandwidth(bandwidth))
        return ev(_fixed_point(ev, SEARCH_EPS))

    def to_json(self) -> str:
        """The state as JSON (floats written exactly with ``float.hex``; about 1 MB).

        Examples
        --------
        >>> from calipers.stream.smooth_ece_state import SmoothECEState
        >>> st = SmoothECEState(); st.update([0.25], [1])
        >>> float(SmoothECEState.from_json(st.to_json()).masses[1001][1, 250])
        -0.75
        """
        return json.dumps(
            {
                "format": _FORMAT,
                "lens": self.lens,
                "shape": self.shape,
                "masses": {
                    str(E): [[float(v).hex() for v in row] for row in self.masses[E]]
                    for E in GRID_SIZES
                },
            }
        )

    @classmethod
    def from_json(cls, text: str) -> SmoothECEState:
        """Read a state written by :meth:`to_json` (exact round trip).

        Examples
        --------
        >>> from calipers.stream.smooth_ece_state import SmoothECEState
        >>> st = SmoothECEState(); st.update([0.2, 0.9], [0, 1])
        >>> SmoothECEState.from_json(st.to_json()).to_json() == st.to_json()
        True
        """
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise CalibrationInputError(
                f"not a {_FORMAT} document (states written before the grids below "
                f"bandwidth {MIN_STATE_BANDWIDTH} were kept cannot be read)"
            )
        st = cls(data["lens"])
        st.shape = data["shape"]
        grids = data.get("masses")
        want = [str(E) for E in GRID_SIZES]
        if not isinstance(grids, dict) or set(grids) != set(want):
            got = sorted(grids) if isinstance(grids, dict) else type(grids).__name__
            raise CalibrationInputError(f"masses must be kept for grid sizes {want}; got {got}")
        for E in GRID_SIZES:
            rows = grids[str(E)]
            shape: tuple[int, ...] | None = None
            if isinstance(rows, list) and all(isinstance(r, list) for r in rows):
                shape = (len(rows), *{len(r) for r in rows})
            if shape != (2, E):
                raise CalibrationInputError(
                    f"masses of grid size {E} must have shape (2, {E}); got {shape}"
                )
            m = np.array([[float.fromhex(v) for v in row] for row in rows])
            st.masses[E] = m
        return st

    def __repr__(self) -> str:
        w = float(self.masses[N_NODES][0].sum())
        return f"SmoothECEState(lens={self.lens!r}, weight={w!r})"
