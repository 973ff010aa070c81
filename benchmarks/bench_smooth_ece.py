"""Side-by-side timing of calipers' SmoothECE against relplot 1.0.3, in one process.

Usage::

    python benchmarks/bench_smooth_ece.py            # n = 10**4, 10**5, 10**6; 9 rounds
    python benchmarks/bench_smooth_ece.py --quick    # n = 10**4, 10**5; 5 rounds

For every n, two cases on the same data (k = 10 classes, the recipe of
the standard benchmark recipe: logits = 3 N(0, 1), labels ~ softmax(logits),
probs = softmax(1.5 logits), float64):

* fixed-point SmoothECE: ``relplot.multiclass_logits_to_confidences(p, y,
  probs=True)`` + ``relplot.smECE`` (baseline) against ``calipers.smece(p, y)``
  (with and without validation), and the two cores on precomputed
  (confidence, correctness) arrays;
* fixed bandwidth 0.05: the same with ``relplot.smECE_sigma(f, y, 0.05)`` and
  ``smece(p, y, bandwidth=0.05)``.

Every implementation is called once (warm-up; its value is recorded), then all
implementations of a case are called in turn, round after round, so that a
drift of the machine's speed hits all of them alike. The table shows the
median and min wall time, the median of the per-round ratios to the baseline,
the value each returned and its difference from calipers' value.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from calipers.metrics.smooth_ece import _smece_arrays, smece  # noqa: E402


def make_multiclass(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """the standard benchmark recipe: probs = softmax(1.5 z), labels ~ softmax(z), z = 3 N(0, 1)."""
    rng = np.random.default_rng(seed)
    z = 3.0 * rng.standard_normal((n, k))
    q = np.exp(z - z.max(1, keepdims=True))
    q /= q.sum(1, keepdims=True)
    labels = np.minimum((rng.random(n)[:, None] > np.cumsum(q, 1)).sum(1), k - 1)
    p = np.exp(1.5 * (z - z.max(1, keepdims=True)))
    p /= p.sum(1, keepdims=True)
    return p, labels.astype(np.int64)


@dataclass
class Impl:
    name: str
    fn: Callable[[], Any]
    value: float = float("nan")
    times: list[float] = field(default_factory=list)


def run(impls: list[Impl], rounds: int) -> None:
    for im in impls:  # warm-up, value
        v = im.fn()
        im.value = float(v[0] if isinstance(v, tuple) else v)
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            for im in impls:
                t0 = time.perf_counter()
                im.fn()
                im.times.append(time.perf_counter() - t0)
    finally:
        gc.enable()


def report(title: str, impls: list[Impl], ref_name: str) -> None:
    base = impls[0]
    ref = next(i for i in impls if i.name == ref_name).value
    print(f"\n{title}")
    print(
        f"   {'implementation':<62} {'median ms':>10} {'min ms':>9} {'x base':>7} "
        f"{'value':>18} {'diff vs calipers':>17}"
    )
    for im in impls:
        ratio = statistics.median(a / b for a, b in zip(im.times, base.times, strict=True))
        print(
            f"   {im.name:<62} {statistics.median(im.times) * 1e3:>10.2f} "
            f"{min(im.times) * 1e3:>9.2f} {ratio:>7.3f} {im.value:>18.15f} "
            f"{im.value - ref:>+17.2e}"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 10**4, 10**5; 5 rounds")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sigma", type=float, default=0.05)
    args = ap.parse_args(argv)
    try:
        import relplot
    except ImportError:
        print("relplot is not installed: nothing to compare against")
        return
    sizes = [10**4, 10**5] if args.quick else [10**4, 10**5, 10**6]
    rounds = args.rounds or (5 if args.quick else 9)
    s = args.sigma
    for n in sizes:
        bench_size(relplot, n, rounds, s, args.seed)


def bench_size(relplot: Any, n: int, rounds: int, s: float, seed: int) -> None:
    """Both cases (fixed-point and fixed bandwidth) at one sample size."""
    p, y = make_multiclass(n, 10, seed)

    def reduce(p: np.ndarray = p, y: np.ndarray = y) -> tuple[np.ndarray, np.ndarray]:
        return relplot.multiclass_logits_to_confidences(p, y, probs=True)

    f, c = reduce()
    f = np.ascontiguousarray(f, dtype=np.float64)
    c = np.ascontiguousarray(c, dtype=np.float64)
    fixed = [
        Impl(
            "relplot: multiclass_logits_to_confidences + smECE",
            lambda: relplot.smECE(*reduce()),
        ),
        Impl("calipers.smece(p, y)", lambda: smece(p, y)),
        Impl("calipers.smece(p, y, validate=False)", lambda: smece(p, y, validate=False)),
        Impl("core: relplot.smECE(conf, correct)", lambda: relplot.smECE(f, c)),
        Impl("core: calipers _smece_arrays(conf, correct)", lambda: _smece_arrays(f, c)),
    ]
    run(fixed, rounds)
    _, sig_ref = relplot.smECE(f, c, return_width=True)
    _, sig_cal = _smece_arrays(f, c)
    report(
        f"n = {n:,}, k = 10: SmoothECE, fixed-point bandwidth "
        f"(relplot sigma* = {sig_ref!r}, calipers sigma* = {sig_cal!r}); {rounds} rounds",
        fixed,
        "calipers.smece(p, y)",
    )
    at_sigma = [
        Impl(
            f"relplot: multiclass_logits_to_confidences + smECE_sigma({s})",
            lambda: relplot.smECE_sigma(*reduce(), s),
        ),
        Impl(f"calipers.smece(p, y, bandwidth={s})", lambda: smece(p, y, bandwidth=s)),
        Impl(
            f"calipers.smece(p, y, bandwidth={s}, validate=False)",
            lambda: smece(p, y, bandwidth=s, validate=False),
        ),
        Impl(
            f"core: relplot.smECE_sigma(conf, correct, {s})",
            lambda: relplot.smECE_sigma(f, c, s),
        ),
        Impl(
            f"core: calipers _smece_arrays(conf, correct, bandwidth={s})",
            lambda: _smece_arrays(f, c, bandwidth=s),
        ),
    ]
    run(at_sigma, rounds)
    report(
        f"n = {n:,}, k = 10: smECE at fixed bandwidth {s}; {rounds} rounds",
        at_sigma,
        f"calipers.smece(p, y, bandwidth={s})",
    )


if __name__ == "__main__":
    main()
