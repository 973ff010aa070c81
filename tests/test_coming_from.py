"""docs/coming-from.md, row by row: each peer call against the calipers call said to reproduce it.

The page and these tests share one source of truth:

* ``CASES`` below holds every table row of the page (library, their call, the calipers
  call, the agreement column) and how to compare the two results;
* the texts are *evaluated*: their call in a namespace made by the page's own import block
  for that library, the calipers call in a namespace holding ``np``, ``cp`` and the
  helper functions of the page's "Helpers" block (executed from the page itself);
* ``test_every_case_is_a_row_of_the_page`` and ``test_every_row_of_the_page_is_a_case``
  check that the page's tables and ``CASES`` are the same set of rows.

Each case runs, for every number of bins ``B`` it lists, on seeded data made for that
``B``: scores on and next to every rule's version of the edges (``j / B``, the peers'
``linspace`` / ``arange`` / ``torch.linspace`` edges, relplot's division thresholds, their
float32 roundings), at 0 and 1, with ties, and bin gaps of alternating sign, so that a
score put in the wrong bin changes the error (``test_the_data_tells_every_pair_of_edge_
rules_apart`` checks that it does); then again with the inputs cast to float32 where the
row claims float32. A case is skipped only when its library is not installed
(``pytest.importorskip`` inside the test).
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers as cp

PAGE = Path(__file__).resolve().parents[1] / "docs" / "coming-from.md"

#: the modules whose absence skips a library's cases
MODULES = {
    "scikit-learn": ("sklearn.calibration",),
    "torchmetrics": ("torch", "torchmetrics.functional.classification"),
    "netcal": ("netcal.metrics",),
    "relplot": ("relplot",),
    "uncertainty-calibration": ("calibration.utils",),
    "MAPIE": ("mapie.metrics.calibration",),
    "pycalib": ("pycalib.metrics",),
}


# ----------------------------------------------------------------------------- the page


@functools.lru_cache(maxsize=1)
def _sections() -> dict[str, str]:
    """``## heading`` -> the text of that section."""
    text = PAGE.read_text(encoding="utf-8")
    parts = re.split(r"^## +(.+?)\s*$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def _python_blocks(section: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)


def _table_rows(section: str) -> list[tuple[str, str, str]]:
    """Rows ``| `theirs` | `ours` | agreement |`` of a section's tables."""
    rows = []
    for line in section.splitlines():
        m = re.match(r"^\| `([^`]+)` \| `([^`]+)` \| (.+?) \|$", line.strip())
        if m:
            rows.append((m.group(1), m.group(2), m.group(3)))
    return rows


@functools.lru_cache(maxsize=1)
def _helper_namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {}
    for block in _python_blocks(_sections()["Helpers"]):
        exec(compile(block, f"{PAGE.name} (Helpers)", "exec"), ns)
    return ns


def _helpers() -> dict[str, Any]:
    """Namespace of the calipers side: ``np``, ``cp`` and the page's helper functions."""
    return dict(_helper_namespace())


def _peer_namespace(library: str) -> dict[str, Any]:
    """Import the library (skip if absent), then run the page's import block for it."""
    for name in MODULES[library]:
        mod = pytest.importorskip(name)
    if library == "uncertainty-calibration" and not hasattr(mod, "get_ece"):
        pytest.skip("the installed 'calibration' package is not uncertainty-calibration")
    ns: dict[str, Any] = {"np": np}
    for block in _python_blocks(_sections()[library]):
        exec(compile(block, f"{PAGE.name} ({library})", "exec"), ns)
    return ns


# ----------------------------------------------------------------------------- data


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _edge_variants(b: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores on and next to the edges ``j / b``, as every rule of the page computes them.

    Returns ``(values, j)``: ``j / b`` itself, NumPy's ``linspace`` edges, pycalib's
    ``arange`` and ``1 + 1e-8`` edges, torch's ``linspace`` edges in float32 and float64,
    relplot's division thresholds, the float32 rounding of ``j / b`` and the neighbouring
    doubles of ``j / b``, each tagged with the ``j`` of the edge it belongs to.
    """
    h = _helpers()
    by_rule = [
        np.arange(b + 1) / b,
        np.linspace(0, 1, b + 1),
        np.linspace(0, 1 + 1e-8, b + 1),
        np.r_[0.0, np.arange(1 / b, 1 + 1 / b, 1 / b)][: b + 1],
        (np.arange(b + 1) / b).astype(np.float32).astype(np.float64),
        np.nextafter(np.arange(b + 1) / b, 0),
        np.nextafter(np.arange(b + 1) / b, 1),
    ]
    for dt in (np.float64, np.float32):
        e = h["relplot_bins"](b, dt).edges[:-1]  # the last is the closing 1.0
        by_rule.append(np.r_[e, np.ones(b + 1 - e.size)])
    try:
        import torch

        for tdt in (torch.float32, torch.float64):
            by_rule.append(torch.linspace(0, 1, b + 1, dtype=tdt).double().numpy())
    except ImportError:
        pass
    vals = np.concatenate(by_rule)
    j = np.tile(np.arange(b + 1), len(by_rule))
    keep = (vals >= 0) & (vals <= 1)
    vals, j = vals[keep], j[keep]
    _, first = np.unique(vals, return_index=True)
    return vals[first], j[first]


@dataclass
class Data:
    """One seeded data set in one dtype: the names the table's texts use."""

    P: np.ndarray  # (n, K) probabilities
    Z: np.ndarray  # (n, K) logits of P
    p: np.ndarray  # (m,) P(y = 1)
    y: np.ndarray  # labels of P's rows, or of p's
    kind: str


_CACHE: dict[tuple[str, str, int], Data] = {}
K = 4


def _target_rate(score: np.ndarray, b: int) -> np.ndarray:
    """P(target = 1 | score) away from the edges.

    With ``b`` bins: the score minus or plus 0.4, so that the gaps of neighbouring bins
    have opposite signs.
    Moving a score across an edge then changes even the L1 error; with one sign everywhere
    every binning gives the same ECE, and a wrong edge rule would go unnoticed. The scores
    of the first bin are too high and those of the last too low, the opposite of a score
    of exactly 0 (which can only be too low) and of 1 (only too high), so that a bin of
    their own changes the error too; for odd ``b`` that breaks the alternation at the
    last inner edge. Without bins (``b = 0``): a smooth curve that crosses the diagonal
    about a dozen times.
    """
    if b == 0:
        return 0.1 + 0.8 * np.clip(score + 0.25 * np.sin(2 * np.pi * 6.3 * score), 0, 1)
    i = np.minimum((score * b).astype(int), b - 1)
    too_high = (i % 2 == 0) & (i != b - 1)  # score above the frequency: target 1 is rare
    return np.clip(np.where(too_high, score - 0.4, score + 0.4), 0, 1)


def _clusters(b: int, dtype: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """1 to 6 copies of every variant of every edge of ``b`` bins (as scores of ``dtype``),
    with 0/1 targets drawn with probability the score, one flipped where their sum
    equals the copies' scores' sum (always at 0 and 1): moving them to another bin then
    changes that bin's gap."""
    v, _ = _edge_variants(b)
    v = np.unique(v.astype(dtype)).astype(np.float64)
    k = rng.integers(1, 7, v.size)
    t = [(rng.random(c) < x).astype(np.int64) for c, x in zip(k, v, strict=True)]
    for tt, x in zip(t, v, strict=True):
        if abs(tt.size * x - tt.sum()) < 1e-9:  # an integer sum: flip one target
            tt[0] = 1 - tt[0]
    return np.repeat(v, k), np.concatenate(t)


def make_data(kind: str, dtype: str, b: int = 0) -> Data:
    """``kind``: "multiclass", "binary", "continuous" (binary, no ties) or "discrete";
    ``b``: the number of bins the data is made to test (clusters of scores on and next to
    their edges; 0: none)."""
    key = (kind, dtype, b)
    if key in _CACHE:
        return _CACHE[key]
    kinds = {"multiclass": 0, "binary": 1, "continuous": 2, "discrete": 3}
    rng = np.random.default_rng([kinds[kind], b])
    n = max(600, 100 * b)
    P = np.full((1, K), 1 / K)
    y = np.zeros(1, dtype=np.int64)
    p = np.array([0.5])
    if kind in ("multiclass", "discrete"):
        if kind == "multiclass":
            z = 2.0 * rng.standard_normal((n // 2, K))
            P1 = _softmax(rng.choice([0.6, 1.6], size=(n // 2, 1)) * z)  # under-/over-confident
            q = rng.dirichlet(np.full(K, 0.6), n // 3)
            P2 = rng.multinomial(60, q) / 60  # entries j / 60: edges, ties, exact 0 and 1
            P = np.concatenate([P1, P2])
            correct = rng.random(len(P)) < _target_rate(P.max(axis=1), b)
            if b:
                c, t = _clusters(b, dtype, rng)
                c, t = c[c > 0.3], t[c > 0.3]  # confidences that are the arg-max of a row
                P3 = np.repeat(((1 - c) / (K - 1))[:, None], K, axis=1)
                P3[np.arange(c.size), rng.integers(0, K, c.size)] = c
                P = np.concatenate([P, P3])
                correct = np.r_[correct, t == 1]
        else:
            P = rng.multinomial(10, rng.dirichlet(np.full(K, 0.8), 400)) / 10
            correct = rng.random(len(P)) < _target_rate(P.max(axis=1), b)
        pred = P.argmax(axis=1)
        y = np.where(correct, pred, (pred + rng.integers(1, K, len(P))) % K)
    elif kind == "binary":
        p = np.r_[rng.random(2 * n // 3), rng.integers(0, 61, n // 3) / 60]
        y = (rng.random(p.size) < _target_rate(p, b)).astype(np.int64)
        if b:
            c, t = _clusters(b, dtype, rng)
            p, y = np.r_[p, c], np.r_[y, t]
    elif kind == "continuous":
        p = rng.beta(2, 2, n)
        y = (rng.random(p.size) < _target_rate(p, 0)).astype(np.int64)
    else:  # pragma: no cover
        raise ValueError(kind)
    with np.errstate(divide="ignore"):
        Z = np.log(np.clip(P, 1e-9, None))
    d = Data(P.astype(dtype), Z.astype(dtype), p.astype(dtype), y, kind)
    _CACHE[key] = d
    return d


# ----------------------------------------------------------------------------- cases


def _value(x: Any) -> np.ndarray:
    """A result as a float64 array (torch tensors, NumPy scalars, Python floats)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _table_pair(t: Any) -> np.ndarray:
    return np.stack([_value(t["observed"]), _value(t["mean_score"])])


def _curve_pair(r: Any) -> np.ndarray:
    prob_true, prob_pred = r
    return np.stack([_value(prob_true), _value(prob_pred)])


@dataclass(frozen=True)
class Case:
    """One row of docs/coming-from.md and how to check it.

    ``theirs`` and ``ours`` are the table's texts, evaluated with the names of
    :class:`Data` and ``B`` (the number of bins, each of ``bins`` in turn). ``tol64`` /
    ``tol32``: the largest absolute difference allowed on float64 / float32 inputs
    (0.0: bit-identical; None: that dtype is not run). ``adapt_theirs`` /
    ``adapt_ours`` turn the two results into comparable arrays; ``keep`` selects the
    rows of the data a case is run on; ``intervals(B)`` is the number of intervals the
    peer makes of ``B`` (the data puts scores on their edges).
    """

    library: str
    theirs: str
    ours: str
    agreement: str
    data: str = "multiclass"
    bins: tuple[int, ...] = (5, 10, 15)
    tol64: float | None = 1e-12
    tol32: float | None = None
    rel: bool = False
    adapt_theirs: Callable[[Any], np.ndarray] = _value
    adapt_ours: Callable[[Any], np.ndarray] = _value
    keep: Callable[[Data, int], np.ndarray] | None = None
    before: Callable[[], None] | None = field(default=None)
    intervals: Callable[[int], int] = staticmethod(lambda b: b)  # type: ignore[assignment]

    @property
    def id(self) -> str:
        return f"{self.library}: {self.theirs}"

    def compute(self, theirs_ns: dict[str, Any], ours_ns: dict[str, Any], d: Data, b: int):
        """Evaluate both texts on the data; return (theirs, ours) as float64 arrays."""
        binary = d.kind in ("binary", "continuous")
        m = self.keep(d, b) if self.keep is not None else slice(None)
        if binary:
            names: dict[str, Any] = {"p": d.p[m], "y": d.y[m]}
        else:
            names = {"P": d.P[m], "Z": d.Z[m], "y": d.y[m]}
            if d.kind == "discrete":
                names["Pd"] = names.pop("P")
        names["B"] = b
        if self.before is not None:
            self.before()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # peers' deprecation and precision chatter
            theirs = eval(self.theirs, {**theirs_ns, **names})
        ours = eval(self.ours, {**ours_ns, **names})
        return self.adapt_theirs(theirs), self.adapt_ours(ours)


def _pycalib_gaps(b: int) -> np.ndarray:
    """Scores in no bin, or in two, of pycalib's confidence bins (one-ulp gaps/overlaps
    between ``arange`` upper edges and the lower edges ``upper - 1 / b``)."""
    size = 1 / b
    upper = np.arange(size, 1 + size, size)
    lower = upper - size
    return np.r_[lower[1:][lower[1:] != upper[:-1]], upper[:-1][lower[1:] != upper[:-1]]]


def _pycalib_keep_conf(d: Data, b: int) -> np.ndarray:
    return ~np.isin(d.P.max(axis=1).astype(np.float64), _pycalib_gaps(b))


def _pycalib_keep_all(d: Data, b: int) -> np.ndarray:
    return ~np.isin(d.P.astype(np.float64), _pycalib_gaps(b)).any(axis=1)


def _mapie_intervals(b: int) -> int:
    """MAPIE's ``num_bins=b`` makes ``b - 1`` intervals."""
    return b - 1


def _seed_global() -> None:
    """uncertainty-calibration draws from NumPy's global generator: seed it, for a
    reproducible test."""
    np.random.seed(0)  # noqa: NPY002


SK = "scikit-learn"
TM = "torchmetrics"
NC = "netcal"
RP = "relplot"
UC = "uncertainty-calibration"
MA = "MAPIE"
PC = "pycalib"

# the agreement column: the tolerances the tests use, and what the page says about them
EXACT = "exact"
F64 = "1e-12"
F32 = "1e-12; float32: 1e-6"
F64_ONLY = "1e-12 (float64 only)"

NETCAL = 'cp.FixedEdges(np.linspace(0, 1, B + 1), closed="left")'
MAPIE = "cp.FixedEdges(np.r_[0, np.linspace(0, 1, B)])"
PYCALIB_BINARY = 'cp.FixedEdges(np.linspace(0, 1 + 1e-8, B + 1), closed="left")'
TORCH_P = "torch.as_tensor(p), torch.as_tensor(y)"
TORCH_P_MC = "torch.as_tensor(P), torch.as_tensor(y), num_classes=P.shape[1]"
NO_BINS = (0,)  # metrics without bins: B is not used

CASES: list[Case] = [
    # ------------------------------------------------------------------ scikit-learn
    Case(
        SK,
        "calibration_curve(y, p, n_bins=B)",
        "cp.reliability_table(p, y, estimator=cp.FixedEdges(np.linspace(0, 1, B + 1)))",
        EXACT,
        data="binary",
        tol64=0.0,
        tol32=0.0,
        adapt_theirs=_curve_pair,
        adapt_ours=_table_pair,
    ),
    Case(
        SK,
        'calibration_curve(y, p, n_bins=B, strategy="quantile")',
        "cp.reliability_table(p, y, estimator=cp.FixedEdges(np.percentile(p, np.linspace(0, 1, B + 1) * 100)))",
        EXACT,
        data="binary",
        tol64=0.0,
        tol32=0.0,
        adapt_theirs=_curve_pair,
        adapt_ours=_table_pair,
    ),
    Case(
        SK,
        "calibration_curve(P.argmax(1) == y, P.max(1), n_bins=B)",
        "cp.reliability_table(P, y, estimator=cp.FixedEdges(np.linspace(0, 1, B + 1)))",
        EXACT,
        tol64=0.0,
        tol32=0.0,
        adapt_theirs=_curve_pair,
        adapt_ours=_table_pair,
    ),
    Case(
        SK, "brier_score_loss(y, p)", "cp.brier(p, y)", F32, data="binary", bins=NO_BINS, tol32=1e-6
    ),
    Case(
        SK,
        "brier_score_loss(y, np.stack([1 - p, p], axis=1))",
        "cp.brier(p, y)",
        F32,
        data="binary",
        bins=NO_BINS,
        tol32=1e-6,
    ),
    Case(SK, "brier_score_loss(y, P)", "cp.brier(P, y)", F32, bins=NO_BINS, tol32=1e-6),
    Case(
        SK,
        "log_loss(y, p)",
        "cp.nll(p, y, clip=np.finfo(p.dtype).eps)",
        F32,
        data="binary",
        bins=NO_BINS,
        tol32=1e-6,
    ),
    Case(
        SK,
        "log_loss(y, P)",
        "cp.nll(P, y, clip=np.finfo(P.dtype).eps)",
        F32,
        bins=NO_BINS,
        tol32=1e-6,
    ),
    Case(
        SK,
        "d2_brier_score(y, P)",
        "1 - cp.brier(P, y) / cp.murphy_decomposition(P, y).uncertainty",
        F32,
        bins=NO_BINS,
        tol32=1e-6,
    ),
    Case(
        SK,
        "d2_log_loss_score(y, P)",
        "1 - cp.nll(P, y, clip=np.finfo(P.dtype).eps) / cp.nll(np.tile(np.bincount(y) / len(y), (len(y), 1)), y)",
        F32,
        bins=NO_BINS,
        tol32=1e-6,
    ),
    # ------------------------------------------------------------------ torchmetrics
    Case(
        TM,
        f"binary_calibration_error({TORCH_P}, n_bins=B)",
        "cp.calibration_error(p, y, estimator=torchmetrics_bins(B, p.dtype))",
        F32,
        data="binary",
        tol32=1e-6,
    ),
    Case(
        TM,
        f'binary_calibration_error({TORCH_P}, n_bins=B, norm="l2")',
        'cp.calibration_error(p, y, estimator=torchmetrics_bins(B, p.dtype), divergence="l2")',
        F32,
        data="binary",
        tol32=1e-6,
    ),
    Case(
        TM,
        f'binary_calibration_error({TORCH_P}, n_bins=B, norm="max")',
        'cp.calibration_error(p, y, estimator=torchmetrics_bins(B, p.dtype), aggregate="max")',
        F32,
        data="binary",
        tol32=1e-6,
    ),
    Case(
        TM,
        f"multiclass_calibration_error({TORCH_P_MC}, n_bins=B)",
        "cp.calibration_error(P.astype(np.float32), y, estimator=torchmetrics_bins(B))",
        "1e-6",
        tol64=1e-6,
        tol32=1e-6,
    ),
    Case(
        TM,
        f'multiclass_calibration_error({TORCH_P_MC}, n_bins=B, norm="l2")',
        'cp.calibration_error(P.astype(np.float32), y, estimator=torchmetrics_bins(B), divergence="l2")',
        "1e-6",
        tol64=1e-6,
        tol32=1e-6,
    ),
    Case(
        TM,
        f'multiclass_calibration_error({TORCH_P_MC}, n_bins=B, norm="max")',
        'cp.calibration_error(P.astype(np.float32), y, estimator=torchmetrics_bins(B), aggregate="max")',
        "1e-6",
        tol64=1e-6,
        tol32=1e-6,
    ),
    # ------------------------------------------------------------------ netcal
    Case(NC, "ECE(B).measure(P, y)", f"cp.calibration_error(P, y, estimator={NETCAL})", F64_ONLY),
    Case(
        NC,
        "ECE(B).measure(P.astype(np.float64), y)",
        f"cp.calibration_error(P, y, estimator={NETCAL})",
        F64,
        tol32=1e-12,
    ),
    Case(
        NC,
        "ECE(B).measure(p, y)",
        f"cp.calibration_error(p, y, estimator={NETCAL})",
        F64_ONLY,
        data="binary",
    ),
    Case(
        NC,
        "ECE(B).measure(np.stack([1 - p, p], axis=1), y)",
        f'cp.calibration_error(np.stack([1 - p, p], axis=1), y, lens="binary", estimator={NETCAL})',
        F64_ONLY,
        data="binary",
    ),
    Case(
        NC,
        "MCE(B).measure(P, y)",
        f'cp.calibration_error(P, y, estimator={NETCAL}, aggregate="max")',
        F64_ONLY,
    ),
    Case(
        NC,
        "ACE(B).measure(P, y)",
        f'cp.calibration_error(P, y, estimator={NETCAL}, aggregate="mean")',
        F64_ONLY,
    ),
    Case(
        NC,
        "ECE(B, equal_intervals=False).measure(P, y)",
        'cp.calibration_error(P, y, estimator=cp.FixedEdges(np.r_[0, np.quantile(P.max(1), np.linspace(0, 1, B + 1))[1:-1], 1], closed="left"))',
        F32,
        tol32=1e-6,
    ),
    Case(NC, "MMCE().measure(P, y)", "cp.mmce(P, y)", F32, bins=NO_BINS, tol32=1e-6),
    Case(
        NC,
        "MMCE().measure(np.stack([1 - p, p], axis=1), y)",
        'cp.mmce(p, y, lens="top_label")',
        F32,
        data="binary",
        bins=NO_BINS,
        tol32=1e-6,
    ),
    # ------------------------------------------------------------------ relplot
    Case(
        RP,
        "smECE(p, y)",
        "cp.smece(p, y)",
        "1e-12; float32: 1e-8",
        data="binary",
        bins=NO_BINS,
        tol32=1e-8,
    ),
    Case(
        RP,
        "smECE_sigma(p, y, 0.05)",
        "cp.smece(p, y, bandwidth=0.05)",
        "1e-12; float32: 1e-8",
        data="binary",
        bins=NO_BINS,
        tol32=1e-8,
    ),
    Case(
        RP,
        "smECE(*multiclass_logits_to_confidences(P, y, probs=True))",
        "cp.smece(P, y)",
        "1e-12; float32: 1e-8",
        bins=NO_BINS,
        tol32=1e-8,
    ),
    Case(
        RP,
        "smECE(*multiclass_logits_to_confidences(Z, y))",
        "cp.smece(Z, y, logits=True)",
        "1e-12; float32: 1e-7",
        bins=NO_BINS,
        tol32=1e-7,
    ),
    Case(
        RP,
        "binnedECE(p, y, nbins=B)",
        "cp.calibration_error(p, y, estimator=relplot_bins(B, p.dtype))",
        F64,
        data="binary",
        tol32=1e-12,
    ),
    Case(
        RP,
        "binnedECEw(p, y, nbins=B)",
        "cp.calibration_error(p, y, estimator=relplot_bins(B, p.dtype)) + 1 / B",
        F64,
        data="binary",
        tol32=1e-12,
    ),
    Case(
        RP,
        "binnedECE(*multiclass_logits_to_confidences(P, y, probs=True), nbins=B)",
        "cp.calibration_error(P, y, estimator=relplot_bins(B, P.dtype))",
        F64,
        tol32=1e-12,
    ),
    # ------------------------------------------------------------------ uncertainty-calibration
    Case(UC, "get_ece(P, y, num_bins=B)", "cp.ece(P, y, n_bins=B)", F64_ONLY),
    Case(
        UC,
        "get_ece(P.astype(np.float32), y, num_bins=B)",
        "cp.ece(P.astype(np.float32).astype(np.float64), y, n_bins=B)",
        "1e-6",
        tol64=1e-6,
    ),
    Case(UC, "get_ece(p, y, num_bins=B)", "cp.ece(p, y, n_bins=B)", F64_ONLY, data="binary"),
    Case(
        UC,
        'get_ece(P, y, num_bins=B, mode="marginal")',
        "cp.classwise_ece(P, y, n_bins=B)",
        F64_ONLY,
    ),
    Case(
        UC,
        "get_ece_em(P, y, num_bins=B)",
        'cp.calibration_error(P, y, estimator=cp.EqualMass(B, "kumar"))',
        F32,
        tol32=1e-6,
    ),
    Case(
        UC,
        "get_top_calibration_error(P, y)",
        "cp.debiased_calibration_error(P, y)",
        F32,
        bins=NO_BINS,
        tol32=1e-6,
    ),
    Case(
        UC,
        "get_calibration_error(P, y)",
        'cp.debiased_calibration_error(P, y, lens="classwise")',
        F64,
        bins=NO_BINS,
        tol32=1e-12,
    ),
    Case(
        UC,
        "get_calibration_error(P, y, debias=False)",
        'cp.calibration_error(P, y, lens="classwise", estimator=cp.EqualMass(15, "kumar"), divergence="l2")',
        F64,
        bins=NO_BINS,
        tol32=1e-12,
    ),
    Case(
        UC,
        "get_top_calibration_error(Pd, y)",
        "cp.debiased_calibration_error(Pd, y, estimator=uc_discrete_bins(Pd.max(1)))",
        F32,
        data="discrete",
        bins=NO_BINS,
        tol32=1e-6,
    ),
    Case(
        UC,
        "get_top_calibration_error(P, y, p=1)",
        'cp.debiased_calibration_error(P, y, p=1, method="normal")',
        "Monte Carlo: 4e-3",
        bins=NO_BINS,
        tol64=4e-3,
        tol32=4e-3,
        before=_seed_global,
    ),
    # ------------------------------------------------------------------ MAPIE
    Case(
        MA,
        "top_label_ece(y, P, num_bins=B)",
        f'cp.top_label_ece(P, y, estimator={MAPIE}, class_aggregate="mean")',
        F32,
        bins=(5, 16, 50),
        intervals=_mapie_intervals,
        tol32=1e-6,
    ),
    Case(
        MA,
        "expected_calibration_error(P.argmax(1) == y, P, num_bins=B)",
        f"cp.calibration_error(P, y, estimator={MAPIE})",
        F32,
        bins=(5, 16, 50),
        intervals=_mapie_intervals,
        tol32=1e-6,
    ),
    Case(
        MA,
        "expected_calibration_error(y, p, num_bins=B)",
        f"cp.calibration_error(p, y, estimator={MAPIE})",
        F32,
        data="binary",
        bins=(5, 16, 50),
        intervals=_mapie_intervals,
        tol32=1e-6,
    ),
    Case(
        MA,
        "expected_calibration_error(y, P, num_bins=B, classwise=True, class_labels=y)",
        f"cp.classwise_ece(P, y, estimator={MAPIE})",
        F32,
        bins=(5, 16, 50),
        intervals=_mapie_intervals,
        tol32=1e-6,
    ),
    Case(
        MA,
        'expected_calibration_error(P.argmax(1) == y, P, num_bins=B, split_strategy="quantile")',
        "cp.calibration_error(P, y, estimator=cp.FixedEdges(np.r_[0, np.percentile(P.max(1), np.linspace(0, 1, B) * 100)]))",
        F32,
        bins=(5, 16, 50),
        intervals=_mapie_intervals,
        tol32=1e-6,
    ),
    Case(
        MA,
        'expected_calibration_error(P.argmax(1) == y, P, num_bins=B, split_strategy="array split")',
        "cp.calibration_error(P, y, estimator=cp.FixedEdges(np.r_[0, np.sort([c.max() for c in np.array_split(P.max(1), B)[:-1]]), 1]))",
        F32,
        bins=(5, 16, 50),
        intervals=_mapie_intervals,
        tol32=1e-6,
    ),
    Case(
        MA,
        "kolmogorov_smirnov_statistic(y, p)",
        "cp.ks_calibration_error(p, y) / (np.sqrt(np.sum(p * (1 - p))) / len(p))",
        "relative 1e-7 (no ties)",
        data="continuous",
        bins=NO_BINS,
        tol64=1e-7,
        tol32=1e-7,
        rel=True,
    ),
    # ------------------------------------------------------------------ pycalib
    Case(
        PC,
        "conf_ECE(y, P, bins=B)",
        "cp.calibration_error(P, y, estimator=pycalib_bins(B))",
        F32,
        tol32=1e-6,
        keep=_pycalib_keep_conf,
    ),
    Case(
        PC,
        "ECE(y, P, bins=B)",
        "cp.calibration_error(P.ravel(), np.eye(P.shape[1])[y].ravel(), estimator=pycalib_bins(B))",
        F32,
        tol32=1e-6,
        keep=_pycalib_keep_all,
    ),
    Case(
        PC,
        "MCE(y, P, bins=B)",
        'cp.calibration_error(P, y, estimator=pycalib_bins(B), aggregate="max")',
        F32,
        tol32=1e-6,
        keep=_pycalib_keep_conf,
    ),
    Case(
        PC,
        "binary_ECE(y, p, bins=B)",
        f"cp.calibration_error(p, y, estimator={PYCALIB_BINARY})",
        F32,
        data="binary",
        tol32=1e-6,
    ),
    Case(
        PC,
        "binary_ECE(y, p, power=2, bins=B)",
        f"cp.calibration_error(p, y, estimator={PYCALIB_BINARY}, divergence=cp.Lp(2, root=False))",
        F32,
        data="binary",
        tol32=1e-6,
    ),
    Case(
        PC,
        "binary_MCE(y, p, bins=B)",
        f'cp.calibration_error(p, y, estimator={PYCALIB_BINARY}, aggregate="max")',
        F32,
        data="binary",
        tol32=1e-6,
    ),
    Case(
        PC,
        "classwise_ECE(y, P, bins=B)",
        f"cp.classwise_ece(P, y, estimator={PYCALIB_BINARY})",
        F32,
        tol32=1e-6,
    ),
    Case(
        PC,
        "classwise_MCE(y, P, bins=B)",
        f'max(cp.calibration_error(P, y, lens=cp.single_class(k), estimator={PYCALIB_BINARY}, aggregate="max") for k in range(P.shape[1]))',
        F32,
        tol32=1e-6,
    ),
    Case(
        PC,
        "brier_score(np.eye(P.shape[1])[y], P)",
        'cp.brier(P, y, reduction="mean")',
        F32,
        bins=NO_BINS,
        tol32=1e-6,
    ),
    Case(
        PC,
        "cross_entropy(y, P)",
        "cp.nll(P, y, clip=np.finfo(P.dtype).eps)",
        F32,
        bins=NO_BINS,
        tol32=1e-6,
    ),
    Case(
        PC,
        "accuracy(np.eye(P.shape[1])[y], P)",
        "cp.accuracy(P, y)",
        EXACT,
        bins=NO_BINS,
        tol64=0.0,
        tol32=0.0,
    ),
]


# ----------------------------------------------------------------------------- tests


RUNS = [
    pytest.param(case, dtype, id=f"{case.id} [{dtype}]")
    for case in CASES
    for dtype in ("float64", "float32")
    if (case.tol64 if dtype == "float64" else case.tol32) is not None
]


@pytest.mark.oracle
@pytest.mark.parametrize(("case", "dtype"), RUNS)
def test_case(case: Case, dtype: str) -> None:
    """The page's row: their call and the calipers call agree to the row's tolerance."""
    tol = case.tol64 if dtype == "float64" else case.tol32
    assert tol is not None
    theirs_ns = _peer_namespace(case.library)
    ours_ns = _helpers()
    for b in case.bins:
        d = make_data(case.data, dtype, case.intervals(b) if b else 0)
        theirs, ours = case.compute(theirs_ns, ours_ns, d, b)
        assert theirs.shape == ours.shape, (b, theirs.shape, ours.shape)
        if tol == 0.0:
            np.testing.assert_array_equal(ours, theirs, err_msg=f"B = {b}")
        else:
            np.testing.assert_allclose(
                ours,
                theirs,
                rtol=tol if case.rel else 0,
                atol=0 if case.rel else tol,
                err_msg=f"B = {b}",
            )


def test_every_case_is_a_row_of_the_page() -> None:
    sections = _sections()
    for case in CASES:
        assert case.library in sections, f"no section '## {case.library}' in {PAGE.name}"
        rows = _table_rows(sections[case.library])
        assert (case.theirs, case.ours, case.agreement) in rows, (
            f"{PAGE.name}, section {case.library}: no row "
            f"| `{case.theirs}` | `{case.ours}` | {case.agreement} |"
        )


def test_every_row_of_the_page_is_a_case() -> None:
    cases = {(c.library, c.theirs, c.ours, c.agreement) for c in CASES}
    for heading, text in _sections().items():
        for row in _table_rows(text):
            assert (heading, *row) in cases, f"{PAGE.name}, section {heading}: untested row {row}"


def test_case_texts_are_unique() -> None:
    ids = [(c.library, c.theirs, c.ours) for c in CASES]
    assert len(ids) == len(set(ids))


# ----------------------------------------------------------------------------- the data


def _rules(b: int, dtype: str) -> dict[str, Any]:
    """Every binning rule of the page for ``b`` bins (torchmetrics' only with torch)."""
    h = _helpers()
    rules = {
        "calipers (lo, hi]": cp.EqualWidth(b),
        "calipers [lo, hi)": cp.EqualWidth(b, "left"),
        "linspace (lo, hi]": cp.FixedEdges(np.linspace(0, 1, b + 1)),
        "linspace [lo, hi)": cp.FixedEdges(np.linspace(0, 1, b + 1), closed="left"),
        "relplot": h["relplot_bins"](b, dtype),
        "pycalib": h["pycalib_bins"](b),
        "pycalib binary": cp.FixedEdges(np.linspace(0, 1 + 1e-8, b + 1), closed="left"),
        "MAPIE": cp.FixedEdges(np.r_[0, np.linspace(0, 1, b + 1)]),
    }
    try:
        import torch  # noqa: F401

        rules["torchmetrics"] = h["torchmetrics_bins"](b, dtype)
    except ImportError:
        pass
    return rules


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_the_data_tells_every_pair_of_edge_rules_apart(kind: str, dtype: str) -> None:
    """Wherever two rules put the scores of the test data into different bins, the two
    errors differ for at least one of the bin counts every case is run with: a case
    whose calipers call used another library's rule would fail. (For one bin count alone
    the L1 changes of scores moved at two edges can cancel exactly.)"""
    bins = (5, 10, 15)
    parts_differ: dict[tuple[str, str], bool] = {}
    values_differ: dict[tuple[str, str], bool] = {}
    for b in bins:
        d = make_data(kind, dtype, b)
        x = d.p if kind == "binary" else d.P
        score = x if kind == "binary" else x.max(axis=1)
        rules = _rules(b, dtype)
        parts, values = {}, {}
        for name, est in rules.items():
            ids, _ = est.assign(score, None)
            parts[name] = np.unique(np.asarray(ids), return_inverse=True)[1]  # the partition
            values[name] = cp.calibration_error(x, d.y, estimator=est)
        names = sorted(rules)
        for i, a in enumerate(names):
            for c in names[i + 1 :]:
                key = (a, c)
                parts_differ[key] = parts_differ.get(key, False) or not np.array_equal(
                    parts[a], parts[c]
                )
                values_differ[key] = values_differ.get(key, False) or (
                    abs(values[a] - values[c]) > 1e-9
                )
    for key, differ in parts_differ.items():
        if differ:
            assert values_differ[key], key
    # the pairs that must differ on this data do
    assert parts_differ[("calipers (lo, hi]", "calipers [lo, hi)")]
    assert parts_differ[("calipers (lo, hi]", "linspace (lo, hi]")]
    assert parts_differ[("linspace [lo, hi)", "relplot")]


@pytest.mark.oracle
def test_pycalib_leaves_scores_in_its_gaps_out() -> None:
    """The page: with 15 bins, pycalib's conf_ECE puts a confidence of exactly 0.4 in no bin."""
    metrics = pytest.importorskip("pycalib.metrics")
    assert 0.4 in _pycalib_gaps(15) and 0.8 in _pycalib_gaps(15)
    P = np.array([[0.4, 0.3, 0.3], [0.9, 0.05, 0.05]])
    y = np.array([1, 0])
    # |0 - 0.4| / 2 is missing: only the second row's |1 - 0.9| / 2 is counted
    assert metrics.conf_ECE(y, P, bins=15) == pytest.approx(0.05, abs=1e-15)
    h = _helpers()
    assert cp.calibration_error(P, y, estimator=h["pycalib_bins"](15)) == pytest.approx(0.25)


@pytest.mark.oracle
def test_netcal_float32_counts_and_means_use_different_edges() -> None:
    """The page: netcal counts a float32 0.7 in [0.6, 0.7) and averages it in [0.7, 0.8)."""
    metrics = pytest.importorskip("netcal.metrics")
    p = np.array([0.7])
    y = np.array([1])
    assert metrics.ECE(10).measure(p, y) == pytest.approx(0.3, abs=1e-12)
    assert metrics.ECE(10).measure(p.astype(np.float32), y) == 0.0  # neither bin has both
    est = cp.FixedEdges(np.linspace(0, 1, 11), closed="left")
    assert cp.calibration_error(p.astype(np.float32), y, estimator=est) == pytest.approx(0.3)


@pytest.mark.oracle
def test_relplot_puts_one_in_the_last_bin_for_float32_and_15_bins() -> None:
    """The page: int(1.0 / (1 / 15)) is 14 in float32, so 1.0 joins the last bin."""
    h = _helpers()
    assert int(np.float32(1.0) / np.float32(1 / 15)) == 14
    assert h["relplot_bins"](15, np.float32).n_bins == 15
    assert h["relplot_bins"](15, np.float64).n_bins == 16
    assert h["relplot_bins"](10).edges[3] == np.nextafter(0.3, 1)  # 0.3 / 0.1 < 3
    relplot = pytest.importorskip("relplot.metrics")
    p = np.array([0.95, 1.0])
    y = np.array([1, 0])
    # one bin: |1.95 - 1| / 2; two bins: (|0.95 - 1| + |1 - 0|) / 2
    assert relplot.binnedECE(p.astype(np.float32), y, nbins=15) == pytest.approx(0.475, abs=1e-7)
    assert relplot.binnedECE(p, y, nbins=15) == pytest.approx(0.525, abs=1e-12)
