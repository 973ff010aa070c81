"""Device check: the PyTorch path of the kernel estimators on CUDA (run on a GPU machine).

    PYTHONPATH=src python benchmarks/gpu_check.py

Times canonical CE_KL (Dirichlet kernel, h = 0.02) on CUDA float64 at n = 10 000 and
50 000 (k = 10) and class-wise at k = 100, n = 10 000, against the NumPy path on the
same machine's CPU at n = 10 000, and checks the values agree; then the unbiased SKCE
(k = 10) at n = 10 000 and 100 000 on CUDA, against NumPy at n = 10 000.
"""

from __future__ import annotations

import sys
import time
from functools import partial

import torch

sys.path.insert(0, "benchmarks")
from bench_dirichlet import synthetic  # noqa: E402

import calipers as cp  # noqa: E402


def timed(f, sync=True):
    f()
    if sync:
        torch.cuda.synchronize()
    t = time.perf_counter()
    v = f()
    if sync:
        torch.cuda.synchronize()
    return time.perf_counter() - t, float(v)


def main() -> None:
    print(torch.cuda.get_device_name(0), torch.__version__)
    for n, k, lens in (
        (10_000, 10, "canonical"),
        (50_000, 10, "canonical"),
        (10_000, 100, "classwise"),
    ):
        p, y = synthetic(n, k)
        pt, yt = torch.tensor(p, device="cuda"), torch.tensor(y, device="cuda")
        tg, vg = timed(partial(cp.ce_kl, pt, yt, bandwidth=0.02, lens=lens))
        line = f"{lens:>9} n={n:>6} k={k:>3}: cuda {tg:8.3f} s  value {vg:.15f}"
        if n == 10_000 and k == 10:
            tc, vc = timed(partial(cp.ce_kl, p, y, bandwidth=0.02, lens=lens), sync=False)
            line += f" | numpy cpu {tc:8.3f} s value {vc:.15f} rel.diff {abs(vg - vc) / vc:.1e}"
        print(line, flush=True)
    for n in (10_000, 100_000):
        p, y = synthetic(n, 10)
        pt, yt = torch.tensor(p, device="cuda"), torch.tensor(y, device="cuda")
        tg, vg = timed(partial(cp.skce, pt, yt))
        line = f"     skce n={n:>6} k= 10: cuda {tg:8.3f} s  value {vg:.15e}"
        if n == 10_000:
            tc, vc = timed(partial(cp.skce, p, y), sync=False)
            line += (
                f" | numpy cpu {tc:8.3f} s value {vc:.15e} rel.diff {abs(vg - vc) / abs(vc):.1e}"
            )
        print(line, flush=True)


if __name__ == "__main__":
    main()
