"""Every registered recalibrator on real predictions: test metrics before and after.

For each data set the methods are fitted on the calibration part and evaluated
on the test part; the table prints (x 100, as Chidambaram & Ge (2024) Tables 1-6) accuracy,
NLL, Brier (sum over classes), top-label ECE (15 equal-width bins, (lo, hi])
and SmoothECE (Błasiok & Nakkiran 2023), plus the fitting time.

Data sets:

* DenseNet-40 on CIFAR-10 (Kull et al. 2019 logits): validation split (5000) ->
  test split (10000); logits.
* cleanlab 20 Newsgroups (Northcutt et al. 2021): out-of-sample probabilities
  (7532 x 20, exactly 0 on the true class in 61 rows), split 50/50 with
  ``calibration_split(seed=0)``. Logit methods cannot use these probabilities
  (log 0) and are reported as not applicable.
* the embedded default (``calipers.datasets.load_default_predictions``): three
  scikit-learn models on digits, its ``is_calibration`` split; logits where
  the model has them (logistic regression), else probabilities.
* binary: cleanlab IMDB (25000 x 2) probabilities of class 1, split 50/50 with
  ``calibration_split(seed=0)``; every method that handles binary ``(n,)``
  scores. Its metrics use the two columns ``[1 - p, p]`` so that Brier is the
  same two-class sum as elsewhere.

The shared data folder is ``$CALIPERS_SHARED_DATA`` or ``<repo>/../shared/data``;
data sets whose files are missing are skipped with a note.

Usage::

    python scripts/recalibration_table.py [--out table.md] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import pkgutil
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import calipers as cp
import calipers.recalibration as recal
from calipers.datasets import load_default_predictions
from calipers.recalibration import base
from calipers.recalibration.split import calibration_split_indices
from calipers.validation import CalibrationInputError

ROOT = Path(__file__).resolve().parents[1]


def _import_all_methods() -> list[str]:
    """Import every module of calipers.recalibration so that all methods register."""
    notes = []
    for mod in pkgutil.iter_modules(recal.__path__):
        try:
            importlib.import_module(f"{recal.__name__}.{mod.name}")
        except Exception as exc:  # a module being written elsewhere: report, go on
            notes.append(f"module {mod.name} failed to import: {type(exc).__name__}: {exc}")
    return notes


@dataclass
class Problem:
    name: str
    cal: np.ndarray
    y_cal: np.ndarray
    test: np.ndarray
    y_test: np.ndarray
    logits: bool


def _data_dir(arg: str | None) -> Path | None:
    if arg:
        return Path(arg)
    env = os.environ.get("CALIPERS_SHARED_DATA")
    p = Path(env) if env else ROOT.parent / "shared" / "data"
    return p if p.is_dir() else None


def _npz(d: Path | None, name: str) -> dict[str, np.ndarray] | None:
    if d is None or not (d / name).is_file():
        return None
    with np.load(d / name, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def problems(d: Path | None, notes: list[str]) -> Iterator[Problem]:
    val, test = _npz(d, "densenet40_c10_val.npz"), _npz(d, "densenet40_c10_test.npz")
    if val is None or test is None:
        notes.append("DenseNet-40 CIFAR-10 logits not found: skipped")
    else:
        yield Problem(
            "DenseNet-40, CIFAR-10 (logits; val 5000 -> test 10000)",
            val["logits"],
            val["labels"],
            test["logits"],
            test["labels"],
            True,
        )
    news = _npz(d, "labelerrors_20news.npz")
    if news is None:
        notes.append("labelerrors_20news.npz not found: skipped")
    else:
        cal, te = calibration_split_indices(news["labels"], calibration_size=0.5, seed=0)
        yield Problem(
            f"cleanlab 20 Newsgroups (probabilities; calibration_split 50/50 seed 0: "
            f"{len(cal)} -> {len(te)})",
            news["probs"][cal],
            news["labels"][cal],
            news["probs"][te],
            news["labels"][te],
            False,
        )
    dp = load_default_predictions()
    c = dp.is_calibration
    for m in dp.model_names:
        has_logits = m in dp.logits
        s = dp.logits[m] if has_logits else dp.probs[m]
        yield Problem(
            f"embedded default: digits, {m} ({'logits' if has_logits else 'probabilities'}; "
            f"is_calibration {int(c.sum())} -> {int((~c).sum())})",
            s[c],
            dp.labels[c],
            s[~c],
            dp.labels[~c],
            has_logits,
        )
    imdb = _npz(d, "labelerrors_imdb.npz")
    if imdb is None:
        notes.append("labelerrors_imdb.npz not found: binary table skipped")
    else:
        p1 = imdb["probs"][:, 1] / imdb["probs"].sum(axis=1)  # rows sum to 1 only within 2e-5
        cal, te = calibration_split_indices(imdb["labels"], calibration_size=0.5, seed=0)
        yield Problem(
            f"binary: cleanlab IMDB (P(y = 1), rows renormalised; calibration_split 50/50 "
            f"seed 0: {len(cal)} -> {len(te)})",
            p1[cal],
            imdb["labels"][cal],
            p1[te],
            imdb["labels"][te],
            False,
        )


def _probs(scores: np.ndarray, logits: bool) -> np.ndarray:
    if scores.ndim == 1:
        p = 1 / (1 + np.exp(-scores)) if logits else scores
        return np.stack([1 - p, p], axis=1)
    if not logits:
        return scores
    z = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def metrics(P: np.ndarray, y: np.ndarray) -> list[float]:
    return [
        100 * cp.accuracy(P, y),
        100 * cp.nll(P, y),
        100 * cp.brier(P, y),
        100 * cp.ece(P, y, n_bins=15),
        100 * cp.smece(P, y),
    ]


def _fmt(v: float) -> str:
    return "∞" if math.isinf(v) else f"{v:.2f}"


HEADER = "| method | acc | NLL | Brier | ECE₁₅ | SmoothECE | fit s |\n|---|---:|---:|---:|---:|---:|---:|"


def table(pb: Problem, methods: list[str]) -> str:
    lines = [f"### {pb.name}", "", HEADER]
    base_m = metrics(_probs(pb.test, pb.logits), pb.y_test)
    lines.append("| uncalibrated | " + " | ".join(_fmt(v) for v in base_m) + " | |")
    foot: list[str] = []
    for name in methods:
        rc = base._REGISTRY[name]()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            try:
                rc.fit(pb.cal, pb.y_cal, logits=pb.logits)
                Q = rc.predict_proba(pb.test)
            except CalibrationInputError as exc:
                msg = str(exc)
                lines.append(f"| {name} | n/a | | | | | |")
                foot.append(f"{name}: {msg[:160]}{'…' if len(msg) > 160 else ''}")
                continue
            dt = time.perf_counter() - t0
        m = metrics(Q if Q.ndim == 2 else np.stack([1 - Q, Q], axis=1), pb.y_test)
        lines.append(f"| {name} | " + " | ".join(_fmt(v) for v in m) + f" | {dt:.3f} |")
        for w in caught:
            if issubclass(w.category, RuntimeWarning):
                foot.append(f"{name} warned: {w.message}")
    lines.append("")
    lines += [f"- {f}" for f in foot]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="also write the Markdown to this file")
    ap.add_argument(
        "--data-dir", help="shared data folder (default: $CALIPERS_SHARED_DATA or ../shared/data)"
    )
    args = ap.parse_args(argv)
    notes = _import_all_methods()
    methods = sorted(
        n for n, c in base._REGISTRY.items() if c.__module__.startswith("calipers.recalibration")
    )
    out = [
        "## Recalibration on real predictions (test split, all metrics x 100)",
        "",
        f"Registered methods: {', '.join(methods)}.",
        "",
    ]
    for pb in problems(_data_dir(args.data_dir), notes):
        out.append(table(pb, methods))
    if notes:
        out += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    text = "\n".join(out)
    sys.stdout.write(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
