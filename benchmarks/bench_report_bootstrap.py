"""Wall time of ``calipers report --bootstrap 200`` with seven recalibration methods.

    python benchmarks/bench_report_bootstrap.py                       # the working tree only
    python benchmarks/bench_report_bootstrap.py --before /tmp/calipers-head/src
    python benchmarks/bench_report_bootstrap.py --n 2000 --bootstrap 50   # a quick look

Data (seeded): ``z = 3 N(0, 1)`` of shape (2 n, k), labels drawn from ``softmax(z)``
(inverse CDF), model logits ``1.5 z`` (over-confident), float64. The first ``n`` rows
are the calibration file, the last ``n`` the test file (both ``.npz`` with ``logits``
and ``labels``, in a temporary directory). The command timed is, in a fresh process,

    python -m calipers report test.npz --calibration val.npz \\
        --recalibrate ts,vs,bcts,ets,hb,ir,mrr --bootstrap 200 --format json

i.e. eight rows (uncalibrated + seven methods), each with the full suite, the ECE
null p-value (200 draws) and bootstrap intervals. ``--before DIR`` also times the code
in ``DIR`` (put on ``PYTHONPATH``), e.g. a ``git worktree add /tmp/calipers-head
<commit>`` of the commit before the fast bootstrap; the working tree is timed with
``PYTHONPATH=src``. Each timing is one run (the old code takes minutes); the machine's
CPU count is printed with it. ``--repeat`` repeats the after-timing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

METHODS = "ts,vs,bcts,ets,hb,ir,mrr"


def make_files(directory: Path, n: int, k: int, seed: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    z = 3 * rng.standard_normal((2 * n, k))
    e = np.exp(z - z.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    y = (rng.random(2 * n)[:, None] > np.cumsum(p, 1)).sum(1).clip(0, k - 1)
    logits = 1.5 * z
    val, test = directory / "val.npz", directory / "test.npz"
    np.savez(val, logits=logits[:n], labels=y[:n])
    np.savez(test, logits=logits[n:], labels=y[n:])
    return val, test


def time_report(src: str, val: Path, test: Path, bootstrap: int) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": src}
    cmd = [
        sys.executable,
        "-m",
        "calipers",
        "report",
        str(test),
        "--calibration",
        str(val),
        "--recalibrate",
        METHODS,
        "--bootstrap",
        str(bootstrap),
        "--format",
        "json",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return dt, json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="rows per file (default 10 000)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--before", metavar="SRC", default=None, help="also time the code in SRC")
    ap.add_argument("--repeat", type=int, default=1, help="timings of the working tree")
    a = ap.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    print(
        f"calipers report, {a.n} calibration + {a.n} test rows x {a.k} classes, methods "
        f"{METHODS}, --bootstrap {a.bootstrap}; {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory() as tmp:
        val, test = make_files(Path(tmp), a.n, a.k, a.seed)
        runs = [("before", a.before)] if a.before else []
        runs += [("after", here)] * a.repeat
        for label, src in runs:
            dt, doc = time_report(src, val, test, a.bootstrap)
            ts = next(r for r in doc["rows"] if r["method"] == "TemperatureScaling")
            ace_ci = ts["intervals"].get("ace")
            print(
                f"{label:>6} ({src}): {dt:7.1f} s   TS ACE {float(ts['metrics']['ace']):.4f} "
                f"interval {ace_ci}"
            )


if __name__ == "__main__":
    main()
