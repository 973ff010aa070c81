"""Inductive Venn-Abers fit + predict: calipers vs the ``venn-abers`` package.

Usage::

    python benchmarks/bench_venn_abers.py                 # n = 10**4 (seconds)
    python benchmarks/bench_venn_abers.py --n 1000000     # n = 10**6 (calipers ~10 s;
                                                          #   the peer is O(n * corners))
    python benchmarks/bench_venn_abers.py --n 1000000 --skip-peer-above 200000

One process, the same data for both (seeded): ``n`` calibration scores
``s ~ U(0, 1)`` with labels drawn with probability ``s**2``, and ``n`` test
scores. Timed: fit on the calibration scores plus ``(p0, p1)`` of the test
scores, best of ``--repeats``; calipers through the public
:class:`calipers.VennAbers` (input checks included), the peer through
``venn_abers.VennAbers`` on ``(n, 2)`` probabilities. Printed: each time, the
ratio peer / calipers (above 1: calipers is faster) and the largest difference
between the two ``(p0, p1)`` (they compute the same tables).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import calipers as cp


def _best(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--skip-peer-above", type=int, default=None, help="do not time the peer above this n"
    )
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    s = rng.random(args.n)
    y = (rng.random(args.n) < s**2).astype(np.int64)
    t = rng.random(args.n)

    def ours() -> tuple[np.ndarray, np.ndarray]:
        va = cp.VennAbers().fit(s, y, logits=False)
        return va.predict_interval(t, logits=False)

    t_ours, (p0, p1) = _best(ours, args.repeats)
    print(f"n = {args.n}: calipers.VennAbers fit + predict_interval {t_ours:.3f} s")
    if args.skip_peer_above is not None and args.n > args.skip_peer_above:
        print("peer skipped (--skip-peer-above)")
        return
    try:
        from venn_abers import VennAbers as PeerVennAbers
    except ImportError:
        print("venn-abers not installed: peer skipped")
        return

    def peer() -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            va = PeerVennAbers().fit(np.c_[1 - s, s], y)
            return va.predict_proba(np.c_[1 - t, t])[1]

    t_peer, pp = _best(peer, 1 if args.n > 100_000 else args.repeats)
    diff = max(np.abs(p0 - pp[:, 0]).max(), np.abs(p1 - pp[:, 1]).max())
    print(f"n = {args.n}: venn_abers.VennAbers fit + predict_proba {t_peer:.3f} s")
    print(f"ratio peer / calipers {t_peer / t_ours:.1f}x; largest |difference| {diff:.1e}")


if __name__ == "__main__":
    main()
