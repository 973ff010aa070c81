"""The standard report: calibration never alone (Chidambaram & Ge (2024) §6).

A :class:`Report` holds, for one or many models (and, when asked, the same
models after each recalibration method, Chidambaram & Ge (2024) Table 1), the suite the
papers say must be reported together:

==================  ==========================================================
column              what (function)
==================  ==========================================================
``accuracy``        top-1 accuracy (:func:`calipers.accuracy`)
``nll``             negative log-likelihood, nats (:func:`calipers.nll`; +inf
                    when a true class has probability 0 — reported, not hidden)
``brier``           multi-class Brier score, sum over classes
                    (:func:`calipers.brier`); also the calibration upper bound
                    U_Brier of Gruber & Buettner (2022) Thm 4.3 / Example 4.4
``rbs``             root Brier score, sqrt(U_Brier) (Gruber & Buettner (2022) §4)
``ece``             top-label ECE, 15 equal-width bins, L1 (Guo et al. 2017)
``ace``             Nixon et al.'s adaptive calibration error (15 ranges)
``smece``           SmoothECE (Błasiok & Nakkiran; :func:`calipers.smece`)
``ce_kl``           top-label CE_KL, Beta-kernel leave-one-out estimate
                    (Popordanoska et al. (2024) eq. 10 on the confidence lens)
``ce_l2sq``         top-label CE_2^2, same estimator (Popordanoska et al. (2024) eq. 7)
``refinement_kl``   REF_KL of the same estimate (Popordanoska et al. (2024) eq. 15)
``ece_p_value``     p-value of the ECE under top-label calibration: the
                    correctness of every row is redrawn as
                    Bernoulli(confidence) ``null_resamples`` times (the
                    consistency resampling of Vaicenavicius et al. 2019 for
                    the top-label problem, O(n) per draw)
==================  ==========================================================

The kernel estimates are quadratic in n; rows beyond ``kernel_max_n`` are
subsampled (seeded, without replacement) for them only, as Chidambaram & Ge (2024) did for
its kernel estimates; the report's settings record this.

Flags (Chidambaram & Ge (2024) §3's pitfall, said by the report itself):

* a recalibrated row whose ECE is lower than its model's uncalibrated row while
  its NLL or Brier score is higher ("calibration error fell but the proper score
  got worse" — mean replacement is the canonical example);
* an ECE whose p-value under the calibrated null exceeds 0.05 ("within the
  noise of a calibrated model").
"""

from __future__ import annotations

import html
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._backend import to_numpy
from .dirichlet_kernel import DirichletKernel
from .lenses import top_label_arrays
from .metrics import ace, ece
from .proper_calibration_error import _slice_terms
from .scores import accuracy, brier, nll
from .smooth_ece import smece
from .validation import CalibrationInputError, Predictions, check_predictions

__all__ = ["Report", "ReportRow", "report", "COLUMNS"]

#: Column names, in order, with a short human label.
COLUMNS: dict[str, str] = {
    "accuracy": "Accuracy",
    "nll": "NLL",
    "brier": "Brier",
    "rbs": "RBS",
    "ece": "ECE",
    "ace": "ACE",
    "smece": "SmoothECE",
    "ce_kl": "CE_KL",
    "ce_l2sq": "CE_2^2",
    "refinement_kl": "REF_KL",
    "ece_p_value": "ECE p-value",
}

UNCALIBRATED = "uncalibrated"

_CSS = (
    "body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;"
    "color:#222}table.calipers-report{border-collapse:collapse;font-size:0.9em}"
    "table.calipers-report th,table.calipers-report td{border-bottom:1px solid #ddd;"
    "padding:4px 8px;text-align:right}table.calipers-report td:nth-child(-n+2),"
    "table.calipers-report th:nth-child(-n+2){text-align:left}tr.flagged{background:#fff4e5}"
    ".figures{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}figure img{max-width:420px}"
    "figcaption{font-size:0.8em;color:#555}"
)


@dataclass
class ReportRow:
    """One model (after one recalibration method, or none) and its suite."""

    model: str
    method: str
    n: int
    metrics: dict[str, float]
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


def _json_number(v: float) -> Any:
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")


def _fmt(v: float, places: int = 4) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    return f"{v:.{places}f}"


@dataclass
class Report:
    """Rows of the standard suite; render with ``to_markdown``, ``to_json``, ``to_latex``,
    ``to_dataframe``, ``to_html`` (or display in a notebook)."""

    rows: list[ReportRow]
    settings: dict[str, Any]
    columns: tuple[str, ...] = tuple(COLUMNS)
    figures: dict[str, Any] = field(default_factory=dict, repr=False)

    # ---------------------------------------------------------------- access

    def row(self, model: str, method: str = UNCALIBRATED) -> ReportRow:
        """The row of ``model`` after ``method`` (default: uncalibrated)."""
        for r in self.rows:
            if r.model == model and r.method == method:
                return r
        raise KeyError(f"no row for model {model!r}, method {method!r}")

    # ---------------------------------------------------------------- renderings

    def _cell(self, r: ReportRow, c: str) -> str:
        s = _fmt(r.metrics[c], 3 if c == "ece_p_value" else 4)
        if c in r.intervals:
            lo, hi = r.intervals[c]
            s += f" [{_fmt(lo)}, {_fmt(hi)}]"
        return s

    def to_markdown(self) -> str:
        """A Markdown table (one row per model x method), then the flags."""
        head = ["model", "method", "n", *(COLUMNS[c] for c in self.columns)]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        for r in self.rows:
            cells = [r.model, r.method, str(r.n), *(self._cell(r, c) for c in self.columns)]
            lines.append("| " + " | ".join(cells) + " |")
        notes = [f"- **{r.model} / {r.method}**: {f}" for r in self.rows for f in r.flags]
        return "\n".join(lines + ([""] + notes if notes else [])) + "\n"

    def to_json(self, indent: int | None = 2) -> str:
        """JSON document (schema: ``calipers_report`` version, ``settings``, ``columns``,
        ``rows`` of ``{model, method, n, metrics, intervals, flags}``; non-finite numbers
        are the strings ``"inf"``, ``"-inf"``, ``"nan"``)."""
        doc = {
            "calipers_report": 1,
            "settings": self.settings,
            "columns": list(self.columns),
            "rows": [
                {
                    "model": r.model,
                    "method": r.method,
                    "n": r.n,
                    "metrics": {c: _json_number(r.metrics[c]) for c in self.columns},
                    "intervals": {
                        c: [_json_number(a), _json_number(b)] for c, (a, b) in r.intervals.items()
                    },
                    "flags": r.flags,
                }
                for r in self.rows
            ],
        }
        return json.dumps(doc, indent=indent)

    def to_latex(self) -> str:
        """A LaTeX ``tabular`` (booktabs rules)."""
        esc = lambda s: s.replace("_", r"\_").replace("%", r"\%").replace("&", r"\&")  # noqa: E731
        head = ["Model", "Method", "$n$", *(esc(COLUMNS[c]) for c in self.columns)]
        lines = [
            r"\begin{tabular}{ll" + "r" * (len(head) - 2) + "}",
            r"\toprule",
            " & ".join(head) + r" \\",
            r"\midrule",
        ]
        for r in self.rows:
            cells = [esc(r.model), esc(r.method), str(r.n)]
            cells += [self._cell(r, c).replace("∞", r"$\infty$") for c in self.columns]
            lines.append(" & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(lines) + "\n"

    def to_dataframe(self) -> Any:
        """A pandas DataFrame indexed by (model, method); needs pandas."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("Report.to_dataframe needs pandas: pip install pandas") from e
        recs = [{"model": r.model, "method": r.method, "n": r.n, **r.metrics} for r in self.rows]
        return pd.DataFrame.from_records(recs).set_index(["model", "method"])

    def _table_html(self) -> str:
        head = "".join(
            f"<th>{html.escape(h)}</th>"
            for h in ["model", "method", "n", *(COLUMNS[c] for c in self.columns)]
        )
        body = []
        for r in self.rows:
            cells = [r.model, r.method, str(r.n), *(self._cell(r, c) for c in self.columns)]
            cls = ' class="flagged"' if r.flags else ""
            body.append(
                f"<tr{cls}>" + "".join(f"<td>{html.escape(x)}</td>" for x in cells) + "</tr>"
            )
        notes = "".join(
            f"<li><b>{html.escape(r.model)} / {html.escape(r.method)}</b>: {html.escape(f)}</li>"
            for r in self.rows
            for f in r.flags
        )
        out = f'<table class="calipers-report"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
        return out + (f'<ul class="calipers-flags">{notes}</ul>' if notes else "")

    def _repr_html_(self) -> str:
        return self._table_html()

    def to_html(self, title: str = "calipers report") -> str:
        """One self-contained HTML page: the table, the flags, the settings and every
        figure embedded as a data URI (viewable offline, no network access)."""
        import base64

        figs = []
        for key, png in self.figures.items():
            model, method, kind = key.split("__")
            b64 = base64.b64encode(png).decode("ascii")
            cap = html.escape(f"{model} / {method}: {FIGURE_KINDS.get(kind, kind)}")
            figs.append(
                f'<figure><img alt="{cap}" src="data:image/png;base64,{b64}">'
                f"<figcaption>{cap}</figcaption></figure>"
            )
        settings = "".join(
            f"<li><b>{html.escape(str(k))}</b>: {html.escape(str(v))}</li>"
            for k, v in self.settings.items()
        )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>"
            "<p>Accuracy, proper scores and calibration errors reported together "
            "(Chidambaram & Ge (2024) §6); lower is better except accuracy and the p-value.</p>"
            f"{self._table_html()}<h2>Settings</h2><ul>{settings}</ul>"
            + (f'<h2>Figures</h2><div class="figures">{"".join(figs)}</div>' if figs else "")
            + "</body></html>\n"
        )

    def save(self, directory: str | Any) -> list[str]:
        """Write ``report.html``, ``report.json``, ``report.md``, ``report.tex`` and
        ``figures/*.png`` into ``directory`` (created if needed), each file atomically.
        Returns the paths written."""
        from pathlib import Path

        from .cli import write_atomic

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in (
            ("report.html", self.to_html()),
            ("report.json", self.to_json()),
            ("report.md", self.to_markdown()),
            ("report.tex", self.to_latex()),
        ):
            write_atomic(out / name, text)
            written.append(str(out / name))
        if self.figures:
            (out / "figures").mkdir(exist_ok=True)
            for key, png in self.figures.items():
                write_atomic(out / "figures" / f"{key}.png", png)
                written.append(str(out / "figures" / f"{key}.png"))
        return written


# ----------------------------------------------------------------------------- computing


def _subsample(n: int, m: int, rng: np.random.Generator) -> np.ndarray | None:
    return None if n <= m else np.sort(rng.choice(n, size=m, replace=False))


def _suite(
    P: Predictions,
    *,
    kernel_max_n: int,
    kernel_bandwidth: float,
    null_resamples: int,
    seed: int,
) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    m: dict[str, float] = {}
    m["accuracy"] = float(accuracy(P, None))
    m["nll"] = float(nll(P, None))
    m["brier"] = float(brier(P, None))
    m["rbs"] = math.sqrt(m["brier"])
    m["ece"] = float(ece(P, None))
    m["ace"] = float(ace(P, None))
    m["smece"] = float(smece(P, None))
    conf, correct, w = top_label_arrays(P)
    idx = _subsample(len(conf), kernel_max_n, rng)
    c_k, r_k = (conf, correct) if idx is None else (conf[idx], correct[idx])
    # the top-label problem as a binary one (P(correct) = confidence, the "binary"
    # lens of proper_calibration_error); one kernel regression serves both divergences
    r = DirichletKernel(kernel_bandwidth).regress(c_k, r_k, None)
    kl = _slice_terms(c_k, r_k, None, "kl", "scalar", kernel_bandwidth, 1e-7, None, r=r)
    l2 = _slice_terms(c_k, r_k, None, "squared_l2", "scalar", kernel_bandwidth, 1e-7, None, r=r)
    m["ce_kl"] = float(kl["direct"])
    m["ce_l2sq"] = float(l2["direct"])
    m["refinement_kl"] = float(kl["refinement"])
    m["ece_p_value"] = _ece_null_p_value(
        conf, correct, P.sample_weight, m["ece"], null_resamples, rng
    )
    return m


def _ece_null_p_value(
    conf: np.ndarray, correct: np.ndarray, w: Any, observed: float, B: int, rng: np.random.Generator
) -> float:
    if B <= 0:
        return math.nan
    from .binning import EqualWidth
    from .calibration_error import calibration_error

    ww = None if w is None else np.asarray(to_numpy(w), dtype=np.float64)
    est = EqualWidth(15)
    exceed = 0
    for _ in range(B):
        fake = (rng.random(conf.shape[0]) < conf).astype(np.float64)
        # top-label ECE of (conf, fake correctness): the 'binary' lens on P(correct) = conf
        t = calibration_error(
            conf,
            fake.astype(np.int64),
            lens="binary",
            estimator=est,
            sample_weight=ww,
            validate=False,
        )
        exceed += t >= observed - 1e-15
    return (1 + exceed) / (1 + B)


def _bootstrap(
    P: Predictions, B: int, rng: np.random.Generator, **kw: Any
) -> dict[str, tuple[float, float]]:
    probs = to_numpy(P.probs)
    labels = to_numpy(P.labels)
    w = None if P.sample_weight is None else to_numpy(P.sample_weight)
    n = probs.shape[0]
    draws: dict[str, list[float]] = {}
    for _ in range(B):
        i = rng.integers(0, n, n)
        Pb = check_predictions(
            probs[i], labels[i], sample_weight=None if w is None else w[i], validate=False
        )
        for k, v in _suite(Pb, null_resamples=0, seed=int(rng.integers(2**31)), **kw).items():
            draws.setdefault(k, []).append(v)
    out = {}
    for k, vals in draws.items():
        a = np.asarray(vals)
        if k == "ece_p_value" or not np.all(np.isfinite(a)):
            continue
        out[k] = (float(np.quantile(a, 0.025)), float(np.quantile(a, 0.975)))
    return out


def _as_pair(name: str, value: Any) -> tuple[Any, Any]:
    if isinstance(value, Predictions):
        return value, None
    if not (isinstance(value, Sequence) and len(value) == 2):
        raise CalibrationInputError(
            f"model {name!r}: give (scores, labels) or a calipers.Predictions; got {type(value).__name__}"
        )
    return value[0], value[1]


def report(
    models: Mapping[str, Any],
    *,
    logits: bool | Mapping[str, bool] = False,
    calibration: Mapping[str, Any] | None = None,
    recalibrators: Sequence[Any] = (),
    n_bootstrap: int = 0,
    null_resamples: int = 200,
    kernel_max_n: int = 5000,
    kernel_bandwidth: float = 0.02,
    figures: bool = False,
    progress: bool = False,
    seed: int = 0,
) -> Report:
    """Compute the standard suite for every model (and every recalibration of it).

    Chidambaram & Ge (2024) §6: report accuracy, a calibration error and the matching proper
    score together; Chidambaram & Ge (2024) Table 1 layout (rows = model x method) when
    ``recalibrators`` are given.

    Parameters
    ----------
    models : mapping of str to (scores, labels) or Predictions
        The test predictions of each model.
    logits : bool or mapping of str to bool, default False
        Whether each model's scores (test and calibration) are logits.
    calibration : mapping of str to (scores, labels), optional
        Each model's calibration split; needed for ``recalibrators``.
    recalibrators : sequence of Recalibrator, default ()
        Unfitted recalibrators (e.g. ``cp.TemperatureScaling()``); each is
        cloned, fitted on the model's calibration split and evaluated on its
        test predictions.
    n_bootstrap : int, default 0
        Percentile 95 % bootstrap intervals from this many resamples of the rows.
    null_resamples : int, default 200
        Draws of the calibrated null for ``ece_p_value`` (0 disables it).
    kernel_max_n : int, default 5000
        Rows used for the kernel estimates (seeded subsample beyond it).
    kernel_bandwidth : float, default 0.02
        Beta-kernel bandwidth (Popordanoska et al.'s (2024) CIFAR value).
    figures : bool, default False
        Also draw, per row, the reliability diagram, the smooth reliability
        diagram and the calibration-sharpness diagram (needs matplotlib); they
        are embedded in :meth:`Report.to_html` and written by :meth:`Report.save`.
    progress : bool, default False
        Show a progress bar on stderr (needs tqdm; silently none without it).
    seed : int, default 0

    A recalibrator that cannot be applied to a model (e.g. a logit method given
    probabilities with exact zeros) gives a row of NaN with the reason as a flag.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(400, 3)) * 2
    >>> y = rng.integers(0, 3, 400)
    >>> rep = cp.report({"model": (z, y)}, logits=True, null_resamples=50)
    >>> rep.row("model").metrics["ece"] == cp.ece(z, y, logits=True)
    True
    >>> print(rep.to_markdown().splitlines()[0][:51])
    | model | method | n | Accuracy | NLL | Brier | RBS
    """
    if not models:
        raise CalibrationInputError("report needs at least one model")
    for name, v in (("n_bootstrap", n_bootstrap), ("null_resamples", null_resamples)):
        if int(v) < 0:
            raise CalibrationInputError(f"{name} must be >= 0; got {v!r}")
    if kernel_max_n < 2:
        raise CalibrationInputError(f"kernel_max_n must be >= 2; got {kernel_max_n!r}")
    if recalibrators and not calibration:
        raise CalibrationInputError(
            "recalibrators need a calibration split per model (calibration=...)"
        )
    kw: dict[str, Any] = {"kernel_max_n": kernel_max_n, "kernel_bandwidth": kernel_bandwidth}
    rows: list[ReportRow] = []
    figs: dict[str, bytes] = {}
    for mi, (name, value) in enumerate(models.items()):
        is_logits = logits.get(name, False) if isinstance(logits, Mapping) else bool(logits)
        scores, labels = _as_pair(name, value)
        P = (
            scores
            if isinstance(scores, Predictions)
            else check_predictions(scores, labels, logits=is_logits)
        )
        variants: list[tuple[str, Predictions | str]] = [(UNCALIBRATED, P)]
        if recalibrators:
            if name not in calibration:  # type: ignore[operator]
                raise CalibrationInputError(f"no calibration split for model {name!r}")
            cs, cl = _as_pair(name, calibration[name])  # type: ignore[index]
            soft: dict[str, Any] = {}  # softmax of the logits, computed once per model
            for rc in recalibrators:
                try:
                    fit_on, apply_to, kind = cs, scores, is_logits
                    if is_logits and getattr(rc, "input", "logits") == "probs":
                        if not soft:
                            soft["cal"] = to_numpy(check_predictions(cs, cl, logits=True).probs)
                            soft["test"] = to_numpy(P.probs)
                        fit_on, apply_to, kind = soft["cal"], soft["test"], False
                    fitted = type(rc)(**rc.get_params()).fit(fit_on, cl, logits=kind)
                    probs = fitted.predict_proba(apply_to, logits=kind)
                    Q: Predictions | str = check_predictions(probs, labels, validate=False)
                except CalibrationInputError as exc:
                    Q = f"not applicable: {exc}"
                variants.append((type(rc).__name__, Q))
        for vi, (method, Qv) in enumerate(_progress(variants, progress, name)):
            if isinstance(Qv, str):
                nan = dict.fromkeys(COLUMNS, math.nan)
                rows.append(ReportRow(name, method, 0, nan, flags=[Qv]))
                continue
            s = seed + 1000 * mi + vi
            metrics = _suite(Qv, null_resamples=null_resamples, seed=s, **kw)
            row = ReportRow(name, method, int(Qv.n_samples), metrics)
            if n_bootstrap:
                row.intervals = _bootstrap(Qv, int(n_bootstrap), np.random.default_rng(s + 7), **kw)
            rows.append(row)
            if figures:
                figs.update(_figures(name, method, Qv))
    _flag(rows)
    settings = {
        "ece": "top-label, 15 equal-width bins, L1",
        "kernel": f"top-label Beta kernel, leave-one-out, bandwidth {kernel_bandwidth}, "
        f"at most {kernel_max_n} rows (seeded subsample)",
        "null_resamples": null_resamples,
        "n_bootstrap": n_bootstrap,
        "seed": seed,
    }
    return Report(rows, settings, figures=figs)


#: Diagram kinds drawn per row with ``figures=True`` (file stem -> title).
FIGURE_KINDS = {
    "reliability": "Reliability diagram",
    "smooth": "Smooth reliability diagram",
    "sharpness": "Calibration-sharpness diagram",
}


def _figures(model: str, method: str, Q: Predictions) -> dict[str, bytes]:
    import io

    from .diagrams import (
        calibration_sharpness_diagram,
        reliability_diagram,
        smooth_reliability_diagram,
    )

    out = {}
    makers: dict[str, Any] = {
        "reliability": reliability_diagram,
        "smooth": smooth_reliability_diagram,
        "sharpness": calibration_sharpness_diagram,
    }
    import matplotlib.pyplot as plt

    for kind, make in makers.items():
        fig = make(Q, title=f"{model} / {method}")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=150)
        plt.close(fig)
        out[f"{_slug(model)}__{_slug(method)}__{kind}"] = buf.getvalue()
    return out


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in s)


def _progress(items: list[Any], on: bool, name: str) -> Any:
    if not on:
        return items
    try:
        from tqdm import tqdm
    except ImportError:
        return items
    # disable=None: no bar when stderr is not a terminal (logs, CI)
    return tqdm(
        items, desc=f"report: {name}", unit="row", leave=False, file=sys.stderr, disable=None
    )


def _flag(rows: list[ReportRow]) -> None:
    base = {r.model: r for r in rows if r.method == UNCALIBRATED}
    for r in rows:
        p = r.metrics.get("ece_p_value", math.nan)
        if p > 0.05:
            r.flags.append(
                f"ECE {r.metrics['ece']:.4f} is within the noise of a calibrated model (p = {p:.3f})"
            )
        b = base.get(r.model)
        if b is None or r is b:
            continue
        worse = [k for k in ("nll", "brier") if r.metrics[k] > b.metrics[k]]
        if worse and not r.metrics["ece"] < b.metrics["ece"]:
            what = " and ".join(
                f"{COLUMNS[k]} {b.metrics[k]:.4f} -> {r.metrics[k]:.4f}" for k in worse
            )
            r.flags.append(
                f"recalibration made the proper score worse ({what}) without lowering the "
                "ECE: the method does not help on this split (overfitting a small "
                "calibration split is the usual cause)"
            )
        if r.metrics["ece"] < b.metrics["ece"]:
            if worse:
                what = " and ".join(COLUMNS[k] for k in worse)
                r.flags.append(
                    f"calibration error fell (ECE {b.metrics['ece']:.4f} -> {r.metrics['ece']:.4f}) "
                    f"but the proper score got worse ({what}): the Chidambaram & Ge (2024) pitfall"
                )
