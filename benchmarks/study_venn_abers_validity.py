"""Validity of inductive Venn-Abers predictors on a predictor of known calibration.

Usage::

    python benchmarks/study_venn_abers_validity.py             # under two minutes
    python benchmarks/study_venn_abers_validity.py --runs 40   # faster
    python benchmarks/study_venn_abers_validity.py --markdown  # the tables as Markdown

The predictor (seeded; every run draws a fresh calibration set and a fresh test
set of ``--n-test`` rows): ``z ~ N(0, 1.5^2)``, the score is
``s = sigmoid(2 z)`` (over-confident) and the label is drawn with the true
probability ``P(y = 1 | s) = sigmoid(z) = sigmoid(logit(s) / 2)``, known.

For each calibration size (100, 1000, 10 000) and ``--runs`` runs,
:class:`calipers.VennAbers` is fitted on the calibration set and the test set
gets ``(p0, p1)`` and the merge ``p = p1 / (1 - p0 + p1)``. Reported:

(a) the Venn guarantee (Vovk & Petej 2014): the probability chosen by the true
    label, ``p_y`` (``p1`` if ``y = 1`` else ``p0``), is calibrated over the
    joint draw of the calibration set and the test object, not given one
    calibration set. The binned calibration error (10 equal-width bins of
    P(y = 1), |mean label - mean probability| weighted by the bin's share) is
    computed on the pairs of all runs pooled (the guarantee's reading: each
    pair is one draw of calibration set and test object) and, beside it, per
    run (given its calibration set: no guarantee), mean over runs; each is
    compared with the same number for the true probabilities (perfectly
    calibrated: their error is the noise level at that sample size), for the
    merged ``p``, and for the raw scores;
(a') the guarantee read exactly: ``--draws`` independent draws of a
    calibration set of 100 (and 1000) rows and ONE test object each; the binned
    error of the ``--draws`` pairs ``(p_y, y)`` beside that of ``(truth, y)``
    on the same objects (the noise level of a perfectly calibrated predictor
    at that number of pairs) and of the merged ``p``;
(b) how often the true ``P(y = 1 | s)`` lies in ``[p0, p1]``, and the mean width
    ``p1 - p0``: the interval is not a confidence interval, and its coverage
    of the true probability is not guaranteed;
(c) the held-out log loss and Brier score of the merged ``p`` beside isotonic
    regression (calipers' default, Laplace-smoothed, and scikit-learn's
    unsmoothed form) and Platt scaling, fitted on the same calibration set, and
    of the true probabilities (the floor).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import calipers as cp
from calipers.recalibration.venn_abers import venn_abers_tables


def _draw(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z = 1.5 * rng.standard_normal(n)
    s = 1.0 / (1.0 + np.exp(-2.0 * z))
    truth = 1.0 / (1.0 + np.exp(-z))
    y = (rng.random(n) < truth).astype(np.int64)
    return s, y, truth


def _binned_error(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """sum_b (n_b / n) |mean(y_b) - mean(p_b)|, equal-width bins of [0, 1]."""
    b = np.minimum((p * bins).astype(np.int64), bins - 1)
    gap = np.bincount(b, weights=y, minlength=bins) - np.bincount(b, weights=p, minlength=bins)
    return float(np.abs(gap).sum() / len(p))


def _log_loss(p: np.ndarray, y: np.ndarray) -> float:
    q = np.where(y == 1, p, 1.0 - p)
    return float(-np.mean(np.log(np.clip(q, 1e-300, None))))


def _brier(p: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((p - y) ** 2))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--n-test", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    sizes = (100, 1000, 10_000)
    rows_a, rows_b, rows_c = [], [], []
    t0 = time.perf_counter()
    for n_cal in sizes:
        err: dict[str, list[float]] = {k: [] for k in ("p_y", "truth", "merged", "scores")}
        pooled: dict[str, list[np.ndarray]] = {k: [] for k in ("p_y", "truth", "merged", "y")}
        cover, width = [], []
        scores: dict[str, list[tuple[float, float]]] = {
            k: [] for k in ("Venn-Abers p", "isotonic", "isotonic (unsmoothed)", "Platt", "truth")
        }
        for _ in range(args.runs):
            s_cal, y_cal, _ = _draw(n_cal, rng)
            s, y, truth = _draw(args.n_test, rng)
            va = cp.VennAbers().fit(s_cal, y_cal, logits=False)
            p0, p1 = va.predict_interval(s, logits=False)
            p = p1 / (1.0 - p0 + p1)
            p_y = np.where(y == 1, p1, p0)
            err["p_y"].append(_binned_error(p_y, y))
            err["truth"].append(_binned_error(truth, y))
            err["merged"].append(_binned_error(p, y))
            err["scores"].append(_binned_error(s, y))
            for k, v in (("p_y", p_y), ("truth", truth), ("merged", p), ("y", y)):
                pooled[k].append(v)
            cover.append(float(np.mean((p0 <= truth) & (truth <= p1))))
            width.append(float(np.mean(p1 - p0)))
            fits = {
                "Venn-Abers p": p,
                "isotonic": cp.IsotonicRegression().fit(s_cal, y_cal, logits=False),
                "isotonic (unsmoothed)": cp.IsotonicRegression(smoothing="none").fit(
                    s_cal, y_cal, logits=False
                ),
                "Platt": cp.PlattScaling().fit(s_cal, y_cal, logits=False),
                "truth": truth,
            }
            for name, f in fits.items():
                q = f if isinstance(f, np.ndarray) else f.predict_proba(s, logits=False)
                scores[name].append((_log_loss(q, y), _brier(q, y)))
        yy = np.concatenate(pooled["y"])
        rows_a.append(
            (
                n_cal,
                *(_binned_error(np.concatenate(pooled[k]), yy) for k in ("p_y", "truth", "merged")),
                *(float(np.mean(err[k])) for k in ("p_y", "truth", "merged", "scores")),
            )
        )
        rows_b.append((n_cal, float(np.mean(cover)), float(np.mean(width))))
        for name, vals in scores.items():
            v = np.array(vals)
            rows_c.append((n_cal, name, float(v[:, 0].mean()), float(v[:, 1].mean())))
    rows_x = []
    for n_cal in (100, 1000):
        got = np.empty((args.draws, 4))
        for i in range(args.draws):
            s_cal, y_cal, _ = _draw(n_cal, rng)
            s, y, truth = _draw(1, rng)
            c, t0_, t1_ = venn_abers_tables(s_cal, y_cal)
            p0 = t0_[np.searchsorted(c, s, side="right")][0]
            p1 = t1_[np.searchsorted(c, s, side="left")][0]
            got[i] = (p1 if y[0] == 1 else p0, truth[0], p1 / (1 - p0 + p1), y[0])
        rows_x.append((n_cal, *(_binned_error(got[:, j], got[:, 3]) for j in range(3))))
    elapsed = time.perf_counter() - t0

    def table(head: list[str], rows: list[tuple]) -> None:
        if args.markdown:
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
        else:
            print("  ".join(f"{h:>14}" for h in head))
        for r in rows:
            cells = [f"{x:.4f}" if isinstance(x, float) else str(x) for x in r]
            if args.markdown:
                print("| " + " | ".join(cells) + " |")
            else:
                print("  ".join(f"{c:>14}" for c in cells))
        print()

    print(
        f"over-confident logistic scores, {args.runs} runs per size, "
        f"{args.n_test} test rows, seed {args.seed}\n"
    )
    print("(a) binned calibration error (10 bins): all runs pooled | per run, mean over runs")
    table(
        [
            "n_cal",
            "pooled p_y",
            "pooled truth",
            "pooled merged",
            "run p_y",
            "run truth",
            "run merged",
            "run scores",
        ],
        rows_a,
    )
    print(f"(a') one test object per calibration set, {args.draws} draws: binned error")
    table(["n_cal", "p_y (Venn)", "truth (noise)", "merged p"], rows_x)
    print("(b) true P(y = 1 | s) inside [p0, p1], and the mean width p1 - p0")
    table(["n_cal", "coverage", "mean width"], rows_b)
    print("(c) held-out log loss and Brier score, mean over runs")
    table(["n_cal", "method", "log loss", "Brier"], rows_c)
    print(f"{elapsed:.1f} s")


if __name__ == "__main__":
    main()
