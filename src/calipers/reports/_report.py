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
``ece``             ECE, 15 equal-width bins, L1 (Guo et al. 2017): top label
                    for ``(n, k)`` input, positive class (P(y = 1) against y)
                    for 1-D binary input (:func:`calipers.ece`'s default lens)
``ace``             Nixon et al.'s adaptive calibration error (15 ranges)
``smece``           SmoothECE (Błasiok & Nakkiran; :func:`calipers.smece`)
``ce_kl``           CE_KL in the same lens, Beta-kernel leave-one-out estimate
                    (Popordanoska et al. (2024) eq. 10 on the lens's Bernoulli
                    problem: the kernel regression of the target on the score)
``ce_l2sq``         CE_2^2, same estimator (Popordanoska et al. (2024) eq. 7)
``refinement_kl``   REF_KL of the same estimate (Popordanoska et al. (2024) eq. 15)
``ece_p_value``     p-value of the ECE under calibration in the same lens: the
                    target of every row (correctness, or y for binary input)
                    is redrawn as Bernoulli(score) ``null_resamples`` times
                    (the consistency resampling of Vaicenavicius et al. 2019,
                    O(n) per draw)
==================  ==========================================================

The kernel estimates are quadratic in n; rows beyond ``kernel_max_n`` are
subsampled (seeded, without replacement) for them only, as Chidambaram & Ge (2024) did for
its kernel estimates; the report's settings record this.

With ``n_bootstrap`` every column gets a 95 % basic bootstrap interval (the
coverage study of docs/intervals.md chose it; the resamples are row weights, so
the whole suite costs a few matrix products per row instead of a recomputation
per resample).

Flags (Chidambaram & Ge (2024) §3's pitfall, said by the report itself):

* a recalibrated row whose ECE is lower than its model's uncalibrated row while
  its NLL or Brier score is higher beyond the noise ("calibration error fell but
  the proper score got worse" — mean replacement is the canonical example); a
  score counts as higher only when the 95 % paired interval of the difference
  (same test rows; bootstrap with ``n_bootstrap``, else a t-interval of the
  per-row differences) lies above 0, and likewise for "recalibration made the
  proper score worse";
* an ECE whose p-value under the calibrated null exceeds 0.05 ("within the
  noise of a calibrated model").
"""

from __future__ import annotations

import html
import json
import math
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._backend import to_numpy
from ..inference import _resampling as _rs
from ..inference._resampling import format_p_value
from ..inference._resampling import p_value_bound as _p_value_bound
from ..inference._verdict import Verdict
from ..metrics.binned import ace, ece
from ..metrics.scores import accuracy, brier, nll
from ..metrics.smooth_ece import smece
from ..pipeline.lenses import lens_arrays
from ..validation import CalibrationInputError, Predictions, check_predictions

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

#: Column names of :func:`calipers.reports.regression_report` (probabilistic
#: regression), with their labels; ``nll`` is shared with :data:`COLUMNS`.
REGRESSION_COLUMNS: dict[str, str] = {
    "nll": "NLL",
    "dss": "DSS",
    "crps": "CRPS",
    "pit_ks": "PIT KS",
    "interval_ce": "Interval CE",
    "ence": "ENCE",
    "mse_over_avg_var": "MSE/AvgVar",
    "se_var_ratio": "SE/Var ratio",
    "skce": "SKCE",
    "nll_improvement": "ΔNLL",
    "dss_improvement": "ΔDSS",
    "crps_improvement": "ΔCRPS",
}

#: The label of every column a report may have (classification and regression).
_LABELS: dict[str, str] = {**COLUMNS, **REGRESSION_COLUMNS}

#: The sentence under the title of the LaTeX and HTML renderings of the standard report.
_INTRO = (
    "Accuracy, proper scores and calibration errors reported together "
    "(Chidambaram & Ge (2024) §6); lower is better except accuracy and the p-value."
)

#: The column labels in LaTeX (math where the label has sub- or superscripts).
_LATEX_COLUMNS: dict[str, str] = {
    "ce_kl": r"$\mathrm{CE}_{\mathrm{KL}}$",
    "ce_l2sq": r"$\mathrm{CE}_{2}^{2}$",
    "refinement_kl": r"$\mathrm{REF}_{\mathrm{KL}}$",
    "ece_p_value": r"ECE $p$-value",
    "nll_improvement": r"$\Delta$NLL",
    "dss_improvement": r"$\Delta$DSS",
    "crps_improvement": r"$\Delta$CRPS",
}

#: A bulleted list in LaTeX that needs no font beyond Computer Modern's Type 1 fonts.
_LATEX_LIST = r"\begin{list}{$\bullet$}{\setlength{\itemsep}{0pt}}"

UNCALIBRATED = "uncalibrated"

_CSS = (
    "body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;"
    "color:#222}table.calipers-report{border-collapse:collapse;font-size:0.9em}"
    "table.calipers-report th,table.calipers-report td{border-bottom:1px solid #ddd;"
    "padding:4px 8px;text-align:right}table.calipers-report td:nth-child(-n+2),"
    "table.calipers-report th:nth-child(-n+2){text-align:left}tr.flagged{background:#fff4e5}"
    "ul.calipers-summary li{margin-bottom:0.3em}"
    ".figure-row{margin:1em 0}.figure-row h3{font-size:1em;margin:0 0 0.3em 0}"
    ".figure-grid{display:grid;gap:1em;max-width:1320px}figure{margin:0}"
    "figure img{width:100%;height:auto}"
    "figcaption{font-size:0.8em;color:#555}details{margin:1em 0}"
    "details>summary{cursor:pointer;font-weight:bold}"
)


@dataclass
class ReportRow:
    """One model (after one recalibration method, or none) and its suite.

    ``not_applicable`` is the reason the method could not be applied to the model
    (the row then has no numbers); the renderings show such a row as a note under
    the table, and the JSON lists it under ``"not_applicable"``.

    ``intervals`` holds the 95 % bootstrap interval of each column (basic
    bootstrap, see docs/intervals.md) when ``n_bootstrap`` was given;
    ``differences`` holds, for a recalibrated row, ``(difference, low, high)`` of
    its NLL and Brier score minus the uncalibrated row's: a 95 % paired interval on
    the same test rows (the bootstrap's when ``n_bootstrap`` was given, else a
    paired t-interval of the per-row differences). The flags read them.

    ``verdicts`` holds, per column with a verdict (``ece``, ``ce_kl``, ``ce_l2sq``), a
    :class:`calipers.Verdict`: whether the estimate resolves a calibration error at
    this n (consistency resampling; :func:`calipers.verdict`).
    """

    model: str
    method: str
    n: int
    metrics: dict[str, float]
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    not_applicable: str | None = None
    differences: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    verdicts: dict[str, Verdict] = field(default_factory=dict)


def _md_cell(s: str) -> str:
    """Text for one Markdown line or table cell (whitespace collapsed, ``|`` escaped)."""
    return " ".join(s.split()).replace("|", r"\|")


def _sentence(text: str) -> str:
    """``text`` with its first letter upper case (the rest unchanged: "NLL" stays)."""
    return text[:1].upper() + text[1:]


def _json_number(v: float) -> Any:
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")


def _fmt(v: float, places: int = 4) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    return f"{v:.{places}f}"


def _fmt_p_value(p: float, n_resamples: int | None) -> str:
    """A resampling p-value: three decimals, or the floor bound (``"< 0.005"``) when
    ``p`` is at the floor ``1/(B+1)`` of ``n_resamples = B`` draws."""
    if math.isnan(p):
        return "nan"
    return format_p_value(p, n_resamples)


#: Heading of the verdicts under the notes, and what they answer.
_VERDICTS_HEAD = "Verdicts"
_VERDICTS_WHY = (
    "(is the estimate beyond what a calibrated model with the same predictions gives? "
    "consistency resampling, Vaicenavicius et al. 2019; the recommended number is the "
    "estimate corrected for the estimator's bias at a calibration curve fitted to the "
    "data, after Roelofs et al. 2022)"
)

#: Heading of the per-model summary that opens every rendering, and what it says.
_SUMMARY_HEAD = "Summary"
_SUMMARY_WHY = (
    "(per model: the lowest-NLL method, its ECE's verdict and recommended value [95 % "
    "interval], proper scores made worse)"
)

#: Heading of the appendix (Markdown, LaTeX) or collapsed section (HTML) that holds the
#: notes and the per-metric verdicts, after the figures.
_APPENDIX_HEAD = "Appendix: notes and verdicts"

#: The proper scores whose paired differences decide "got worse" in the summary
#: (negatively oriented: lower is better).
_PROPER_SCORES = ("nll", "brier", "dss", "crps")

#: What each verdict of :mod:`calipers.inference` means, as the per-model summary says it:
#: the meaning first (a reader skimming the first screen must not read "resolved" as
#: "fixed"), the verdict's own name in parentheses.
_SUMMARY_VERDICTS: dict[str, str] = {
    "resolved": "miscalibrated beyond noise and estimator bias (resolved)",
    "not_distinguishable": (
        "within the noise of a calibrated model at this n (not distinguishable)"
    ),
    "cannot_resolve": "not calibrated, but its size is not resolved at this n (cannot resolve)",
}

#: How ``report()`` words the reason of a method that cannot apply, as a flag.
_NOT_APPLICABLE = "not applicable: "


@dataclass
class Report:
    """Rows of the standard suite; render with ``to_markdown``, ``to_json``, ``to_latex``,
    ``to_dataframe``, ``to_html`` (or display in a notebook)."""

    rows: list[ReportRow]
    settings: dict[str, Any]
    columns: tuple[str, ...] = tuple(COLUMNS)
    figures: dict[str, Any] = field(default_factory=dict, repr=False)
    intro: str = _INTRO

    # ---------------------------------------------------------------- access

    def row(self, model: str, method: str = UNCALIBRATED) -> ReportRow:
        """The row of ``model`` after ``method`` (default: uncalibrated)."""
        for r in self.rows:
            if r.model == model and r.method == method:
                return r
        raise KeyError(f"no row for model {model!r}, method {method!r}")

    # ---------------------------------------------------------------- renderings

    def _null_resamples(self) -> int | None:
        """``B`` of the ECE p-value (``settings["null_resamples"]``), if known and > 0."""
        b = self.settings.get("null_resamples")
        return int(b) if isinstance(b, (int, np.integer)) and b > 0 else None

    @staticmethod
    def _na_reason(r: ReportRow) -> str | None:
        """Why ``r`` has no numbers (a method that cannot apply to the model), or None.

        ``r.not_applicable`` when set; otherwise a row with n = 0, every metric NaN
        and the reason as its first flag ``"not applicable: ..."``."""
        if r.not_applicable is not None:
            return r.not_applicable
        if (
            r.n == 0
            and r.flags
            and r.flags[0].startswith(_NOT_APPLICABLE)
            and all(math.isnan(v) for v in r.metrics.values())
        ):
            return r.flags[0][len(_NOT_APPLICABLE) :]
        return None

    def _table_rows(self) -> list[ReportRow]:
        """The rows with numbers (not-applicable rows become notes instead)."""
        return [r for r in self.rows if self._na_reason(r) is None]

    def _not_applicable(self) -> list[tuple[ReportRow, str]]:
        return [(r, why) for r in self.rows if (why := self._na_reason(r)) is not None]

    def _notes(self) -> list[tuple[str | None, str]]:
        """The notes under the table, as plain text ``(subject or None, text)``: the
        methods that could not be applied, what a p-value at the resampling floor
        means, then every flag."""
        notes: list[tuple[str | None, str]] = [
            (f"{r.model} / {r.method}", f"not applicable: {why}")
            for r, why in self._not_applicable()
        ]
        b = self._null_resamples()
        if (
            b is not None
            and "ece_p_value" in self.columns
            and any(
                _fmt_p_value(r.metrics["ece_p_value"], b) != _fmt(r.metrics["ece_p_value"], 3)
                for r in self._table_rows()
            )
        ):
            notes.append(
                (
                    None,
                    f"ECE p-value {_p_value_bound(b)}: none of the {b} draws of the "
                    f"calibrated null reached the observed ECE; {b} draws cannot give a "
                    f"p-value below 1/({b} + 1) = {1 / (b + 1):.4g}",
                )
            )
        for r in self.rows:
            why = self._na_reason(r)
            for f in r.flags:
                if why is None or f != _NOT_APPLICABLE + why:
                    notes.append((f"{r.model} / {r.method}", f))
        return notes

    def _verdict_notes(self) -> list[tuple[str, str, str]]:
        """One ``(model / method, column, text)`` per verdict (:mod:`calipers.inference`),
        in row order; the text (the estimate, the verdict, the reason and the bandwidth
        sensitivity) follows the column's label, which each format writes its own way."""
        out = []
        for r in self._table_rows():
            for c, v in r.verdicts.items():
                reason = v.reason[:1].upper() + v.reason[1:]
                text = (
                    f" {_fmt(v.estimate)}: {v.verdict}. Recommended {_fmt(v.recommended)} "
                    f"(95% interval [{_fmt(v.interval[0])}, {_fmt(v.interval[1])}]). {reason}"
                )
                if v.bandwidth_sensitivity:
                    vals = [x for _, x in v.bandwidth_sensitivity]
                    lo, hi = v.bandwidth_sensitivity[0][0], v.bandwidth_sensitivity[-1][0]
                    text += (
                        f". Over bandwidths {lo:.3g} to {hi:.3g} the estimate ranges "
                        f"{_fmt(min(vals))} to {_fmt(max(vals))}"
                        + (" (more than it resolves)" if v.bandwidth_flag else "")
                    )
                out.append((f"{r.model} / {r.method}", c, text))
        return out

    def _summary(self) -> list[tuple[str, str]]:
        """One ``(model, text)`` per model, in row order: what a reader needs first.

        The method with the lowest NLL (a proper score: Chidambaram & Ge (2024) §6 judge
        recalibration by one; ties go to the earlier row, the uncalibrated one first), its
        NLL and ECE before and after (and whether the NLL change lies within its 95 %
        paired interval's noise); the verdict of that row's ECE (:mod:`calipers.inference`),
        or its p-value without verdicts; the methods whose NLL, Brier, DSS or CRPS got
        worse beyond the noise (the paired interval of the difference above 0, as the
        flags read it); the methods that could not be applied."""
        table = self._table_rows()
        out: list[tuple[str, str]] = []
        for model in dict.fromkeys(r.model for r in self.rows):
            mine = [r for r in table if r.model == model]
            if not mine:
                continue
            base = next((r for r in mine if r.method == UNCALIBRATED), mine[0])
            parts: list[str] = []
            best = base
            if len(mine) > 1 and "nll" in self.columns:

                def rank(v: float) -> float:
                    return math.inf if math.isnan(v) else v

                best = min(
                    mine,
                    key=lambda r: (rank(r.metrics["nll"]), rank(r.metrics.get("brier", math.nan))),
                )
                if best is base:
                    parts.append(f"no method lowered the NLL ({_fmt(base.metrics['nll'])})")
                else:
                    change = [f"NLL {_fmt(base.metrics['nll'])} -> {_fmt(best.metrics['nll'])}"]
                    d = best.differences.get("nll")
                    if d is not None and math.isfinite(d[1]) and math.isfinite(d[2]):
                        if d[1] <= 0 <= d[2]:
                            change[0] += " (within the noise)"
                    if "ece" in self.columns:
                        change.append(
                            f"ECE {_fmt(base.metrics['ece'])} -> {_fmt(best.metrics['ece'])}"
                        )
                    parts.append(f"best by NLL: {best.method} ({', '.join(change)})")
            v = best.verdicts.get("ece")
            who = "" if best is base or len(mine) == 1 else "its "
            if v is not None:
                meaning = _SUMMARY_VERDICTS.get(v.category, v.verdict)
                parts.append(
                    f"{who}ECE {_fmt(v.estimate)} (recommended {_fmt(v.recommended)} "
                    f"[{_fmt(v.interval[0])}, {_fmt(v.interval[1])}]): {meaning}"
                )
            elif "ece_p_value" in self.columns and not math.isnan(
                best.metrics.get("ece_p_value", math.nan)
            ):
                p = _fmt_p_value(best.metrics["ece_p_value"], self._null_resamples())
                parts.append(f"{who}ECE {_fmt(best.metrics['ece'])}, p-value {p}")
            elif "ece" in self.columns:
                parts.append(f"{who}ECE {_fmt(best.metrics['ece'])} (no verdict without draws)")
            elif len(mine) == 1 and "nll" in self.columns:
                parts.append(f"NLL {_fmt(best.metrics['nll'])}")
            recal = [r for r in mine if r is not base]
            worse = []
            for r in recal:
                keys = [
                    _LABELS[k]
                    for k in _PROPER_SCORES
                    if k in r.differences and r.differences[k][1] > 0
                ]
                if keys:
                    worse.append(f"{r.method} ({', '.join(keys)})")
            if worse:
                parts.append("proper score worse beyond the noise: " + ", ".join(worse))
            elif recal:
                parts.append("no proper score worse beyond the noise")
            na = [r.method for r, _ in self._not_applicable() if r.model == model]
            if na:
                parts.append(f"not applicable: {', '.join(na)}")
            text = "; ".join(parts)
            out.append((model, text[:1].upper() + text[1:] + "." if text else ""))
        return out

    def _summary_why(self) -> str:
        """What the summary says, in parentheses (no ECE verdict without an ECE column)."""
        if "ece" in self.columns:
            return _SUMMARY_WHY
        return "(per model: the lowest-NLL method, methods that worsened a proper score)"

    def _pointer(self, figures: bool) -> str | None:
        """The line under the table that says where the notes and verdicts went
        (``figures``: whether the rendering shows figures between them)."""
        n_notes, n_verdicts = len(self._notes()), len(self._verdict_notes())
        if not (n_notes or n_verdicts):
            return None
        what = []
        if n_notes:
            what.append(f"{n_notes} note{'s' * (n_notes != 1)} (flags, methods not applied)")
        if n_verdicts:
            what.append(f"{n_verdicts} per-metric verdict{'s' * (n_verdicts != 1)}")
        where = "after the figures" if figures else "below"
        return f"{' and '.join(what)}: in the {_APPENDIX_HEAD.split(':')[0].lower()}, {where}."

    def _value(self, r: ReportRow, c: str) -> str:
        if c == "ece_p_value":
            return _fmt_p_value(r.metrics[c], self._null_resamples())
        return _fmt(r.metrics[c])

    def _cell(self, r: ReportRow, c: str) -> str:
        s = self._value(r, c)
        if c in r.intervals:
            lo, hi = r.intervals[c]
            s += f" [{_fmt(lo)}, {_fmt(hi)}]"
        return s

    def to_markdown(self, *, figure_dir: str | None = None) -> str:
        """The report as Markdown: what a reader needs first, the prose last.

        A summary per model (:meth:`_summary`: the method with the lowest NLL, whether its
        ECE resolves a calibration error, which methods made a proper score worse), the
        table (one row per model x method), with ``figure_dir`` the figures (one table row
        per model and method, the images under ``figure_dir``: ``"figures"`` in what
        :meth:`save` writes), then an appendix: the notes (methods that could not be
        applied, the p-value floor, the flags) and the per-metric verdicts.
        """

        lines = self._markdown_head(self._pointer(figure_dir is not None and bool(self.figures)))
        if figure_dir is not None and self.figures:
            lines += ["", "## Figures", "", *self._markdown_figures(figure_dir.rstrip("/"))]
        notes = [
            f"- **{' '.join(s.split())}**: {' '.join(t.split())}" if s else f"- {t}"
            for s, t in self._notes()
        ]
        verdicts = [
            f"- **{_md_cell(s)}**: {COLUMNS[c]} {_md_cell(t)}" for s, c, t in self._verdict_notes()
        ]
        if notes or verdicts:
            lines += ["", f"## {_APPENDIX_HEAD}"]
        if notes:
            lines += ["", *notes]
        if verdicts:
            lines += ["", f"**{_VERDICTS_HEAD}** {_VERDICTS_WHY}", "", *verdicts]
        return "\n".join(lines) + "\n"

    def _markdown_head(self, pointer: str | None) -> list[str]:
        """Markdown lines of the summary, the table and the ``pointer`` line under it."""
        lines: list[str] = []
        summary = self._summary()
        if summary:
            lines += [f"**{_SUMMARY_HEAD}** {self._summary_why()}", ""]
            lines += [f"- **{_md_cell(m)}**: {_md_cell(t)}" for m, t in summary]
            lines.append("")
        head = ["model", "method", "n", *(_LABELS[c] for c in self.columns)]
        lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        for r in self._table_rows():
            cells = [_md_cell(r.model), _md_cell(r.method), str(r.n)]
            cells += [self._cell(r, c) for c in self.columns]
            lines.append("| " + " | ".join(cells) + " |")
        if pointer is not None:
            lines += ["", pointer[:1].upper() + pointer[1:]]
        return lines

    def to_summary(self) -> str:
        """The short form of :meth:`to_markdown`: the summary per model and the table.

        What ``calipers report --out DIR`` prints while the whole report goes to ``DIR``:
        a line per model (the method with the lowest NLL, a proper score as Chidambaram &
        Ge (2024) §6 ask; its ECE's verdict; the methods that made a proper score worse
        beyond the noise; the methods that could not be applied), the table, and one line
        that counts the notes and per-metric verdicts left to the full report.

        Returns
        -------
        str
            Markdown, one line per model plus the table (rows + 2 lines) and at most five
            more lines.

        Examples
        --------
        >>> import numpy as np
        >>> import calipers as cp
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(0.05, 0.95, 500)
        >>> y = (rng.uniform(size=500) < p).astype(int)
        >>> print(cp.report({"m": (p, y)}, null_resamples=50).to_summary().splitlines()[2])
        - **m**: ECE 0.0510 (recommended 0.0000 [0.0000, 0.0165]): within the noise of a calibrated model at this n (not distinguishable).
        """
        lines = self._markdown_head(None)
        n_notes, n_verdicts = len(self._notes()), len(self._verdict_notes())
        if n_notes or n_verdicts:
            lines += [
                "",
                f"Not shown here: {n_notes} note{'s' * (n_notes != 1)} and {n_verdicts} "
                f"per-metric verdict{'s' * (n_verdicts != 1)} (in the full report).",
            ]
        return "\n".join(lines) + "\n"

    def _figure_groups(self) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
        """The figures by (model, method) slug, in order: ``[(key, kind title, caption)]``."""
        groups: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
        for key in self.figures:
            group, caption = self._figure_caption(key)
            kind = key.rsplit("__", 2)[-1]
            groups.setdefault(group, []).append((key, FIGURE_KINDS.get(kind, kind), caption))
        return groups

    def _figure_row_title(self, group: tuple[str, str]) -> str:
        names = {(_slug(r.model), _slug(r.method)): (r.model, r.method) for r in self.rows}
        return " / ".join(names.get(group, group))

    def _markdown_figures(self, figure_dir: str) -> list[str]:
        """A Markdown table of the figures: one row per model and method, a column per kind."""
        from urllib.parse import quote

        groups = self._figure_groups()
        kinds = list(dict.fromkeys(k for figs in groups.values() for _, k, _ in figs))
        lines = [
            "| model / method | " + " | ".join(kinds) + " |",
            "|---|" + "|".join("---" for _ in kinds) + "|",
        ]
        for group, figs in groups.items():
            by_kind = {k: (key, cap) for key, k, cap in figs}
            cells = [" ".join(self._figure_row_title(group).split()).replace("|", r"\|")]
            for k in kinds:
                if k not in by_kind:
                    cells.append("")
                    continue
                key, cap = by_kind[k]
                alt = cap.replace("|", r"\|").replace("[", "(").replace("]", ")")
                cells.append(f"![{alt}]({quote(f'{figure_dir}/{key}.png')})")
            lines.append("| " + " | ".join(cells) + " |")
        return lines

    def to_json(self, indent: int | None = 2) -> str:
        """JSON document, schema version 2: ``calipers_report`` (2), ``settings``,
        ``columns``, ``ece_p_value_floor`` (``{null_resamples, floor, meaning}``, or null
        without resampling: a p-value equal to ``floor`` = 1/(B+1) means that no draw
        reached the observed ECE, p <= floor), ``rows`` of ``{model, method, n,
        metrics, intervals, flags}`` and ``not_applicable``, the methods that could not
        be applied, as ``{model, method, reason}``. Non-finite numbers are the strings
        ``"inf"``, ``"-inf"``, ``"nan"``. (Version 1 listed the not-applicable methods
        as rows of NaN.)"""
        nres = self._null_resamples()
        floor = None
        if nres is not None and "ece_p_value" in self.columns:
            floor = {
                "null_resamples": nres,
                "floor": 1.0 / (nres + 1),
                "meaning": f"the smallest p-value {nres} draws can give; an ece_p_value equal "
                f"to it means no draw reached the observed ECE (printed "
                f"'{_p_value_bound(nres)}')",
            }
        doc = {
            "calipers_report": 2,
            "settings": self.settings,
            "columns": list(self.columns),
            "ece_p_value_floor": floor,
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
                    "verdicts": {c: v.to_dict() for c, v in r.verdicts.items()},
                }
                for r in self._table_rows()
            ],
            "not_applicable": [
                {"model": r.model, "method": r.method, "reason": why}
                for r, why in self._not_applicable()
            ],
        }
        return json.dumps(doc, indent=indent)

    def to_latex(
        self,
        standalone: bool = True,
        *,
        title: str = "calipers report",
        figure_dir: str | None = None,
    ) -> str:
        """LaTeX source of the report.

        By default a complete document (``\\documentclass`` to ``\\end{document}``)
        that compiles with ``pdflatex`` using only Debian's ``texlive-latex-base``
        (packages ``geometry`` and ``graphicx``): the title, the table (shrunk to the
        page width when wider), the notes, the settings and, with ``figure_dir``, the
        figures. ``standalone=False`` gives the table and its notes alone, to
        ``\\input`` into a document of one's own: a ``tabular`` with ``\\hline`` rules
        followed by a bulleted ``list`` of the notes, needing no package. (The bullets
        are ``$\\bullet$``: LaTeX's default ``\\textbullet`` is a TS1 glyph that pdflatex
        draws with a bitmap font unless cm-super is installed.)

        Every piece of text is escaped to pure ASCII, so model and method names may
        hold any character (LaTeX specials, accents, symbols; a character with no
        LaTeX spelling prints as ``[U+XXXX]``). ``figure_dir`` is the folder of the
        PNG figures relative to the ``.tex`` file (``"figures"`` in what :meth:`save`
        writes).
        """
        from ._latex import latex_escape as esc

        tabular, notes = self._latex_tabular(), self._latex_notes()
        if not standalone:
            return tabular + notes
        if figure_dir is not None and not re.fullmatch(r"[A-Za-z0-9_.\-/]+", figure_dir):
            raise ValueError(
                "figure_dir must be a relative path of ASCII letters, digits and _ - . / "
                f"(LaTeX reads it as it is); got {figure_dir!r}"
            )
        settings = "".join(
            f"\\item \\textbf{{{esc(str(k))}}}: {esc(str(v))}\n" for k, v in self.settings.items()
        )
        parts = [
            "% calipers report: compile with pdflatex (needs only texlive-latex-base)\n"
            "\\documentclass[a4paper,10pt]{article}\n"
            "\\usepackage[landscape,margin=1.5cm]{geometry}\n"
            "\\usepackage{graphicx}\n"
            "\\newsavebox{\\calipersbox}\n"
            "\\begin{document}\n",
            f"\\section*{{{esc(title)}}}\n",
            esc(self.intro) + "\n\n",
            self._latex_summary(),
            "\\medskip\\noindent\\sbox{\\calipersbox}{\\small\\setlength{\\tabcolsep}{4pt}%\n"
            + tabular
            + "}%\n\\ifdim\\wd\\calipersbox>\\linewidth"
            "\\resizebox{\\linewidth}{!}{\\usebox{\\calipersbox}}"
            "\\else\\usebox{\\calipersbox}\\fi\n",
        ]
        pointer = self._pointer(figure_dir is not None and bool(self.figures))
        if pointer is not None:
            parts.append(
                "\\par\\smallskip{\\footnotesize\\noindent "
                + esc(pointer[:1].upper() + pointer[1:])
                + "}\n"
            )
        if figure_dir is not None and self.figures:
            parts.append(self._latex_figures(figure_dir.rstrip("/")))
        if notes:
            parts.append(f"\\subsection*{{{esc(_APPENDIX_HEAD)}}}\n" + notes)
        if settings:
            parts.append(f"\\subsection*{{Settings}}\n{_LATEX_LIST}\n{settings}\\end{{list}}\n")
        parts.append("\\end{document}\n")
        return "".join(parts)

    def _latex_summary(self) -> str:
        """The per-model summary (:meth:`_summary`) as a bulleted list, or nothing."""
        from ._latex import latex_escape as esc

        items = [f"\\item \\textbf{{{esc(m)}}}: {esc(t)}\n" for m, t in self._summary()]
        if not items:
            return ""
        return (
            f"\\noindent\\textbf{{{esc(_SUMMARY_HEAD)}}} {esc(self._summary_why())}\n"
            + _LATEX_LIST
            + "\n"
            + "".join(items)
            + "\\end{list}\n"
        )

    def _latex_tabular(self) -> str:
        from ._latex import latex_escape as esc

        def value(r: ReportRow, c: str) -> str:
            v = esc(self._value(r, c))
            if c not in r.intervals:
                return v
            lo, hi = (esc(_fmt(x)) for x in r.intervals[c])
            return (
                f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{v}\\\\"
                f"{{\\scriptsize[{lo}, {hi}]}}\\end{{tabular}}"
            )

        head = ["Model", "Method", "$n$"]
        head += [_LATEX_COLUMNS.get(c) or esc(_LABELS.get(c, c)) for c in self.columns]
        lines = [
            "\\begin{tabular}{ll" + "r" * (len(head) - 2) + "}",
            "\\hline",
            " & ".join(head) + " \\\\",
            "\\hline",
        ]
        for r in self._table_rows():
            cells = [esc(r.model), esc(r.method), str(r.n), *(value(r, c) for c in self.columns)]
            lines.append(" & ".join(cells) + " \\\\")
        lines += ["\\hline", "\\end{tabular}"]
        return "\n".join(lines) + "\n"

    def _latex_notes(self) -> str:
        """The notes as a bulleted list, then the verdicts (:meth:`_latex_verdicts`)."""
        from ._latex import latex_escape as esc

        items = [
            f"\\item \\textbf{{{esc(s)}}}: {esc(t)}\n" if s else f"\\item{{}} {esc(t)}\n"
            for s, t in self._notes()
        ]
        if not items:
            return self._latex_verdicts()
        return (
            "\\par\\smallskip{\\footnotesize\n"
            + _LATEX_LIST
            + "\n"
            + "".join(items)
            + "\\end{list}}\n"
            + self._latex_verdicts()
        )

    def _latex_verdicts(self) -> str:
        from ._latex import latex_escape as esc

        items = [
            f"\\item \\textbf{{{esc(s)}}}: {_LATEX_COLUMNS.get(c) or esc(COLUMNS[c])}{esc(t)}\n"
            for s, c, t in self._verdict_notes()
        ]
        if not items:
            return ""
        return (
            "\\par\\smallskip{\\footnotesize\\noindent\\textbf{"
            + esc(_VERDICTS_HEAD)
            + "} "
            + esc(_VERDICTS_WHY)
            + "\n"
            + _LATEX_LIST
            + "\n"
            + "".join(items)
            + "\\end{list}}\n"
        )

    def _latex_figures(self, figure_dir: str) -> str:
        from ._latex import latex_escape as esc

        groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
        skipped = []
        for key in self.figures:
            if not re.fullmatch(r"[A-Za-z0-9_.\-]+", key):
                skipped.append(f"{figure_dir}/{key}.png")
                continue
            group, caption = self._figure_caption(key)
            groups.setdefault(group, []).append((key, caption))
        out = ["\\subsection*{Figures}\n"]
        for group, figs in groups.items():
            out.append(
                "\\par\\medskip\\noindent{\\small\\textbf{"
                + esc(self._figure_row_title(group))
                + "}}\\nopagebreak\n"
            )
            for i, (key, caption) in enumerate(figs):
                sep = "\\hfill\n" if i % 3 else "\\par\\noindent\n"
                out.append(
                    f"{sep}\\begin{{minipage}}[t]{{0.32\\linewidth}}\\centering\n"
                    f"\\includegraphics[width=\\linewidth,height=0.38\\textheight,"
                    f"keepaspectratio]{{{figure_dir}/{key}.png}}\\\\\n"
                    f"{{\\footnotesize {esc(caption)}}}\n\\end{{minipage}}\n"
                )
        if skipped:
            out.append(
                "\\par\\medskip\\noindent "
                + esc(
                    "Not shown here (file names LaTeX cannot read; open them directly): "
                    + ", ".join(skipped)
                )
                + "\n"
            )
        return "".join(out)

    def to_dataframe(self) -> Any:
        """A pandas DataFrame indexed by (model, method); needs pandas."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("Report.to_dataframe needs pandas: pip install pandas") from e
        recs = [{"model": r.model, "method": r.method, "n": r.n, **r.metrics} for r in self.rows]
        return pd.DataFrame.from_records(recs).set_index(["model", "method"])

    def _summary_html(self) -> str:
        items = "".join(
            f"<li><b>{html.escape(m)}</b>: {html.escape(t)}</li>" for m, t in self._summary()
        )
        if not items:
            return ""
        return (
            f"<h2>{_SUMMARY_HEAD}</h2><p>{html.escape(_sentence(self._summary_why()[1:-1]))}.</p>"
            f'<ul class="calipers-summary">{items}</ul>'
        )

    def _table_html(self, figures: bool = False) -> str:
        """The table alone, then the line that says where the notes and verdicts are."""
        head = "".join(
            f"<th>{html.escape(h)}</th>"
            for h in ["model", "method", "n", *(_LABELS[c] for c in self.columns)]
        )
        body = []
        for r in self._table_rows():
            cells = [r.model, r.method, str(r.n), *(self._cell(r, c) for c in self.columns)]
            cls = ' class="flagged"' if r.flags else ""
            body.append(
                f"<tr{cls}>" + "".join(f"<td>{html.escape(x)}</td>" for x in cells) + "</tr>"
            )
        out = f'<table class="calipers-report"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
        pointer = self._pointer(figures)
        if pointer is not None:
            text = pointer[:1].upper() + pointer[1:]
            out += f'<p class="calipers-pointer">{html.escape(text)}</p>'
        return out

    def _details_html(self, open_: bool = False) -> str:
        """The notes and the per-metric verdicts, in one collapsed ``<details>`` section."""
        notes = "".join(
            f"<li><b>{html.escape(s)}</b>: {html.escape(t)}</li>"
            if s
            else f"<li>{html.escape(t)}</li>"
            for s, t in self._notes()
        )
        verdicts = "".join(
            f"<li><b>{html.escape(s)}</b>: {html.escape(COLUMNS[c] + t)}</li>"
            for s, c, t in self._verdict_notes()
        )
        if not (notes or verdicts):
            return ""
        out = f'<details class="calipers-details"{" open" * open_}><summary>{html.escape(_sentence(_APPENDIX_HEAD.split(": ", 1)[1]))}</summary>'
        out += f'<ul class="calipers-flags">{notes}</ul>' if notes else ""
        if verdicts:
            why = html.escape(_VERDICTS_WHY)
            out += (
                f'<p><b>{_VERDICTS_HEAD}</b> {why}</p><ul class="calipers-verdicts">{verdicts}</ul>'
            )
        return out + "</details>"

    def _repr_html_(self) -> str:
        return self._summary_html() + self._table_html() + self._details_html()

    def _figure_caption(self, key: str) -> tuple[tuple[str, str], str]:
        """``((model slug, method slug), caption)`` of the figure ``key``
        (``model__method__kind``, slugs as the file names have them); the caption
        names the model and method as the rows do."""
        parts = key.rsplit("__", 2)
        if len(parts) != 3:
            return (key, ""), key
        model, method, kind = parts
        names = {(_slug(r.model), _slug(r.method)): (r.model, r.method) for r in self.rows}
        shown = " / ".join(names.get((model, method), (model, method)))
        return (model, method), f"{shown}: {FIGURE_KINDS.get(kind, kind)}"

    def to_html(self, title: str = "calipers report") -> str:
        """One self-contained HTML page, what a reader needs first: a summary per model
        (:meth:`_summary`), the table, the figures (embedded as data URIs, viewable
        offline; the figures of one model and method share a row), then the notes and
        the per-metric verdicts in a collapsed ``<details>`` section, and the settings."""
        import base64

        rows = []
        for group, figs in self._figure_groups().items():
            cells = []
            for key, kind, cap in figs:
                b64 = base64.b64encode(self.figures[key]).decode("ascii")
                cells.append(
                    f'<figure><img alt="{html.escape(cap)}" src="data:image/png;base64,{b64}">'
                    f"<figcaption>{html.escape(kind)}</figcaption></figure>"
                )
            cols = f"grid-template-columns:repeat({len(cells)},minmax(0,1fr))"
            rows.append(
                f'<section class="figure-row"><h3>{html.escape(self._figure_row_title(group))}'
                f'</h3><div class="figure-grid" style="{cols}">{"".join(cells)}</div></section>'
            )
        settings = "".join(
            f"<li><b>{html.escape(str(k))}</b>: {html.escape(str(v))}</li>"
            for k, v in self.settings.items()
        )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>"
            f"<p>{html.escape(self.intro)}</p>"
            f"{self._summary_html()}<h2>Table</h2>{self._table_html(bool(rows))}"
            + (f'<h2>Figures</h2><div class="figures">{"".join(rows)}</div>' if rows else "")
            + self._details_html()
            + (
                f"<details><summary>Settings</summary><ul>{settings}</ul></details>"
                if settings
                else ""
            )
            + "</body></html>\n"
        )

    def files(self) -> dict[str, str | bytes]:
        """Every file of a saved report: relative path -> content.

        ``report.html``, ``report.json``, ``report.md``, ``report.tex`` (a LaTeX
        document that compiles with ``pdflatex`` and shows the figures) and
        ``figures/*.png``.
        """
        out: dict[str, str | bytes] = {
            "report.html": self.to_html(),
            "report.json": self.to_json(),
            "report.md": self.to_markdown(figure_dir="figures" if self.figures else None),
            "report.tex": self.to_latex(figure_dir="figures" if self.figures else None),
        }
        for key, png in self.figures.items():
            out[f"figures/{key}.png"] = png
        return out

    def save(self, directory: str | Any, *, force: bool = False) -> list[str]:
        """Write :meth:`files` as the folder ``directory``, whole (:mod:`calipers.io.output`).

        The folder appears complete or not at all: it is written into a hidden
        sibling and renamed into place. A folder holding a previous calipers
        report is replaced as a whole (no figure of an earlier run is left);
        any other existing, non-empty folder is refused unless ``force=True``.
        Returns the paths written.
        """
        from ..io.output import write_folder_atomic

        return write_folder_atomic(directory, self.files(), force=force)


# ----------------------------------------------------------------------------- computing


#: The report's intervals: the basic (reverse-percentile) bootstrap interval, chosen by
#: the coverage study of docs/intervals.md (benchmarks/study_interval_coverage.py).
INTERVAL_METHOD = "basic"
#: Nominal coverage of every interval in the report (bootstrap and paired).
CONFIDENCE_LEVEL = 0.95
#: Bootstrap-interval columns (the p-value has none).
_INTERVAL_COLUMNS = tuple(c for c in COLUMNS if c != "ece_p_value")


def _subsample(n: int, m: int, rng: np.random.Generator) -> np.ndarray | None:
    return None if n <= m else np.sort(rng.choice(n, size=m, replace=False))


def _lens_name(P: Predictions) -> str:
    """The report's lens: positive class for 1-D P(y = 1), top label otherwise."""
    return "binary" if P.binary else "top_label"


def _lens_pair(P: Predictions) -> tuple[np.ndarray, np.ndarray]:
    """(score, target) of the report's lens, float64 NumPy."""
    s, t, _ = lens_arrays(P, _lens_name(P))
    return s, t


@dataclass
class _RowData:
    """What the bootstrap and the flags need of one row beyond its numbers."""

    P: Predictions
    terms: dict[str, np.ndarray]  # per-row NLL and Brier terms
    kernel_boot: np.ndarray | None  # (B, 3) kernel estimates on the kernel resamples
    verdicts: dict[str, Verdict] = field(default_factory=dict)


def _suite(
    P: Predictions,
    *,
    kernel_rows: np.ndarray | None,
    kernel_bandwidth: float,
    null_resamples: int,
    seed: int,
    kernel_counts: np.ndarray | None = None,
    with_verdicts: bool = False,
) -> tuple[dict[str, float], _RowData]:
    """The suite of one row.

    ``kernel_rows``: the kernel subsample (None: every row); ``kernel_counts``:
    bootstrap counts of those rows, evaluated in the same pass as the estimate (the
    kernel matrix is the costly part, so it is formed once for both).
    """
    rng = np.random.default_rng(seed)
    P = _rs.numpy_predictions(P)
    m: dict[str, float] = {}
    m["accuracy"] = float(accuracy(P, None))
    m["nll"] = float(nll(P, None))
    m["brier"] = float(brier(P, None))
    m["rbs"] = math.sqrt(m["brier"])
    m["ece"] = float(ece(P, None))
    m["ace"] = float(ace(P, None))
    m["smece"] = float(smece(P, None))
    s, t = _lens_pair(P)
    sk, tk = (s, t) if kernel_rows is None else (s[kernel_rows], t[kernel_rows])
    # the lens's problem as a binary one (P(target = 1) = score, the "binary" lens of
    # proper_calibration_error): the leave-one-out Beta-kernel regression of the
    # target on the score, both divergences and the refinement from one regression
    # (equal to proper_calibration_error(sk, tk, lens="binary") up to rounding)
    kev = _rs.beta_kernel_values(sk, tk, kernel_bandwidth)
    W = np.ones((1, len(sk)))
    if kernel_counts is not None:
        W = np.concatenate([W, kernel_counts])
    kv = kev(W)
    m["ce_kl"], m["ce_l2sq"], m["refinement_kl"] = (float(v) for v in kv[0])
    m["ece_p_value"], ece_null = _ece_null(s, t, P.sample_weight, null_resamples, rng)
    terms = {"nll": _rs._nll_terms(P, None), "brier": _rs._brier_terms(P, "sum")}
    verdicts = (
        _verdicts(
            m, s, t, P.sample_weight, ece_null, sk, tk, kernel_bandwidth, null_resamples, seed
        )
        if with_verdicts
        else {}
    )
    return m, _RowData(P, terms, None if kernel_counts is None else kv[1:], verdicts)


def _ece_null(
    score: np.ndarray, target: np.ndarray, w: Any, B: int, rng: np.random.Generator
) -> tuple[float, np.ndarray]:
    """p-value and null draws of the ECE (15 equal-width bins) under calibration of the lens.

    Every target is redrawn as Bernoulli(score) ``B`` times (Vaicenavicius et al. 2019's
    consistency resampling); the bins of the scores are fixed, so a batch of draws is
    one product with the sparse bin-indicator matrix. The observed statistic is computed
    by the same code (equal to :func:`calipers.ece` in the lens up to rounding).
    """
    if B <= 0:
        return math.nan, np.zeros(0)
    n = score.shape[0]
    stat = _ece_stat(score, w)
    observed = float(stat(target[None, :])[0])
    draws = []
    step = _rs.batch_rows(n, B)
    for b0 in range(0, B, step):
        r = min(step, B - b0)
        fake = (rng.random((r, n)) < score).astype(np.float64)
        draws.append(np.asarray(stat(fake), dtype=np.float64).reshape(-1))
    null = np.concatenate(draws)
    exceed = int(np.count_nonzero(null >= observed - 1e-15))
    return (1 + exceed) / (1 + B), null


def _ece_stat(score: np.ndarray, w: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The ECE (15 equal-width bins) of each row of a (draws x n) target matrix; soft
    targets (a row of probabilities) give the binned gap of their expectation."""
    from scipy import sparse

    from ..estimators.binning import EqualWidth

    n = score.shape[0]
    ww = np.ones(n) if w is None else np.asarray(to_numpy(w), dtype=np.float64)
    ids, nb = EqualWidth(15).assign(score, None)
    S = sparse.csr_matrix((ww, (np.arange(n), np.asarray(ids))), shape=(n, nb))
    total = ww.sum()

    def stat(T: np.ndarray) -> np.ndarray:
        return np.abs(np.asarray((T - score) @ S)).sum(axis=1) / total

    return stat


@dataclass
class _World:
    """Draws of a statistic at the calibration curve fitted to the lens's (score, target)."""

    draws: np.ndarray  # (B,) or (B, columns)
    estimand: Any  # a float, or one per column
    refits: np.ndarray
    model: str


def _world_draws(
    score: np.ndarray,
    target: np.ndarray,
    w: Any,
    B: int,
    rng: np.random.Generator,
    stat: Callable[[np.ndarray], np.ndarray],
    estimand: Callable[[np.ndarray], Any],
) -> _World | None:
    """``B`` draws of ``stat`` with targets ~ Bernoulli(q), q the fitted curve of the lens.

    :mod:`calipers.inference.bias_correction`: the curve (:class:`calipers.inference.calibration_world.
    CalibrationWorldFitter`, the calibrated identity left out) is refitted on every draw
    and ``estimand`` read at each refit. None when no curve could be fitted.
    """
    from ..inference.calibration_world import CalibrationWorldFitter

    ww = None if w is None else np.asarray(to_numpy(w), dtype=np.float64)
    fitter = CalibrationWorldFitter(score, sample_weight=ww)
    world = fitter.fit(target.astype(np.int64), include_identity=False)
    if world.calibrated:
        return None
    q = np.asarray(world.probs, dtype=np.float64)
    n = score.shape[0]
    draws, refits = [], []
    # half the null's batch: the refits' own arrays come on top of the draws'
    step = max(1, _rs.batch_rows(n, B) // 2)
    for b0 in range(0, B, step):
        r = min(step, B - b0)
        hit = rng.random((r, n)) < q  # kept as booleans: the refits read them
        draws.append(np.asarray(stat(hit.astype(np.float64)), dtype=np.float64))
        for j in range(r):
            refit = fitter.fit(hit[j].astype(np.int64), include_identity=False, start=world)
            refits.append(estimand(np.asarray(refit.probs, dtype=np.float64)))
    return _World(np.concatenate(draws), estimand(q), np.asarray(refits), world.model)


#: Bandwidth multiples of the report's kernel verdicts (each one kernel pass).
_REPORT_BANDWIDTH_FACTORS = (0.5, 1.0, 2.0)

#: Target columns per batch of the kernel verdict's null (rows x draws entries).
_KERNEL_NULL_ENTRIES = 1 << 20


def _kernel_stat(score: np.ndarray, bandwidth: float) -> Callable[[np.ndarray], np.ndarray]:
    """``(r, 2)``: CE_KL and CE_2^2 of the Beta-kernel estimate for each row of a
    (draws x n) target matrix.

    The scores, hence the kernel matrix, are the same for every row, so the
    leave-one-out regressions of all rows are one product with it
    (:meth:`calipers.DirichletKernel.regress` with a column per draw; Popordanoska et
    al. 2024 eq. 10-12, 15 on the lens's Bernoulli problem).
    """
    from ..estimators.dirichlet_kernel import DirichletKernel
    from ..inference._verdict import _draw_terms

    m = score.shape[0]
    # blocks of 2**20 kernel entries (8 MiB), as the report's own kernel estimates use
    kernel = DirichletKernel(bandwidth, block_size=max(1, (1 << 20) // max(m, 1)))

    def stat(T: np.ndarray) -> np.ndarray:
        Tm = np.ascontiguousarray(T.T)
        R = kernel.regress(score, Tm, None)
        out = np.empty((T.shape[0], 2))
        for c, div in enumerate(("kl", "squared_l2")):
            # every draw's terms at once, as _slice_terms computes each
            out[:, c] = _draw_terms(score, Tm, R, None, div, "scalar", 1e-7, "direct")
        return out

    return stat


def _kernel_estimand(score: np.ndarray, bandwidth: float) -> Callable[[np.ndarray], np.ndarray]:
    """CE_KL and CE_2^2 of the lens's Bernoulli problem when P(target = 1) is ``q``: the
    divergences of ``q`` from the score, exactly (Popordanoska et al. 2024, eq. 8)."""
    from ..metrics._proper_calibration_error import _slice_terms

    def theta(q: np.ndarray) -> np.ndarray:
        return np.array(
            [
                float(
                    _slice_terms(score, q, None, div, "scalar", bandwidth, 1e-7, None, r=q)[
                        "direct"
                    ]
                )
                for div in ("kl", "squared_l2")
            ]
        )

    return theta


def _kernel_null(
    score: np.ndarray, bandwidth: float, B: int, rng: np.random.Generator
) -> np.ndarray:
    """``(B, 2)``: CE_KL and CE_2^2 of the Beta-kernel estimate on ``B`` calibrated draws.

    The targets are redrawn as Bernoulli(score) (consistency resampling, Vaicenavicius
    et al. 2019); :func:`_kernel_stat` evaluates each batch in one kernel pass.
    """
    m = score.shape[0]
    stat = _kernel_stat(score, bandwidth)
    out = np.empty((B, 2))
    step = max(1, min(B, _KERNEL_NULL_ENTRIES // max(m, 1)))
    for b0 in range(0, B, step):
        r = min(step, B - b0)
        out[b0 : b0 + r] = stat((rng.random((m, r)) < score[:, None]).astype(np.float64).T)
    return out


def _verdicts(
    metrics: Mapping[str, float],
    s: np.ndarray,
    t: np.ndarray,
    w: Any,
    ece_null: np.ndarray,
    sk: np.ndarray,
    tk: np.ndarray,
    kernel_bandwidth: float,
    B: int,
    seed: int,
) -> dict[str, Verdict]:
    """The verdicts of the ECE and of the two kernel estimates (:mod:`calipers.inference`).

    ECE: from the draws of its p-value, and ``B`` draws at the calibration curve fitted
    to the lens's (score, target) pairs (:mod:`calipers.inference.bias_correction`: the bias
    there gives the recommended number and its interval). CE_KL and CE_2^2: the same
    two kinds of draws on the kernel rows, with their bandwidth sensitivity (the
    estimate at ``_REPORT_BANDWIDTH_FACTORS`` times the bandwidth: the ends of the range
    of :func:`calipers.verdict`, two kernel passes instead of four).
    """
    out: dict[str, Verdict] = {}
    if B <= 0:
        return out
    if ece_null.size and math.isfinite(metrics["ece"]):
        stat = _ece_stat(s, w)
        world = _world_draws(
            s,
            t,
            w,
            B,
            np.random.default_rng([seed, 12]),
            stat,
            lambda q: float(stat(q[None, :])[0]),
        )
        out["ece"] = Verdict.from_draws(
            "ECE",
            metrics["ece"],
            ece_null,
            n=s.shape[0],
            world_draws=None if world is None else world.draws,
            world_estimand=None if world is None else world.estimand,
            refit_estimands=None if world is None else world.refits,
            world_model=None if world is None else world.model,
        )
    knull = _kernel_null(sk, kernel_bandwidth, B, np.random.default_rng([seed, 11]))
    kstat = _kernel_stat(sk, kernel_bandwidth)

    def kbatch(T: np.ndarray) -> np.ndarray:
        out_ = np.empty((T.shape[0], 2))
        step = max(1, _KERNEL_NULL_ENTRIES // max(sk.shape[0], 1))
        for i0 in range(0, T.shape[0], step):
            out_[i0 : i0 + step] = kstat(T[i0 : i0 + step])
        return out_

    kworld = _world_draws(
        sk,
        tk,
        None,
        B,
        np.random.default_rng([seed, 13]),
        kbatch,
        _kernel_estimand(sk, kernel_bandwidth),
    )
    ones = np.ones((1, sk.shape[0]))
    sens: dict[str, list[tuple[float, float]]] = {"ce_kl": [], "ce_l2sq": []}
    for f in _REPORT_BANDWIDTH_FACTORS:
        h = kernel_bandwidth * f
        if f == 1.0:
            kv = (metrics["ce_kl"], metrics["ce_l2sq"])
        else:
            row = _rs.beta_kernel_values(sk, tk, h)(ones)[0]
            kv = (float(row[0]), float(row[1]))
        sens["ce_kl"].append((h, kv[0]))
        sens["ce_l2sq"].append((h, kv[1]))
    for c, key in enumerate(("ce_kl", "ce_l2sq")):
        if math.isfinite(metrics[key]) and np.all(np.isfinite(knull[:, c])):
            good = kworld is not None and bool(np.all(np.isfinite(kworld.draws[:, c])))
            out[key] = Verdict.from_draws(
                COLUMNS[key],
                metrics[key],
                knull[:, c],
                n=sk.shape[0],
                world_draws=kworld.draws[:, c] if good and kworld else None,
                world_estimand=float(kworld.estimand[c]) if good and kworld else None,
                refit_estimands=kworld.refits[:, c] if good and kworld else None,
                world_model=kworld.model if good and kworld else None,
                bandwidth=kernel_bandwidth,
                bandwidth_sensitivity=sens[key],
            )
    return out


def _paired_t(d: np.ndarray, w: np.ndarray | None) -> tuple[float, float, float]:
    """(mean, low, high): paired t-interval of the (weighted) mean of per-row differences.

    ``mean +- t_{n-1, 0.975} se`` with ``se = s / sqrt(n)`` (weights: the ratio-estimator
    standard error ``sqrt(n / (n - 1) sum w^2 (d - mean)^2) / sum w``). Non-finite
    differences decide by themselves: +inf anywhere (the recalibrated NLL is infinite,
    the uncalibrated one not) gives (inf, inf, inf); NaN (both infinite) gives NaN.
    """
    from scipy.special import stdtrit

    if np.isnan(d).any() or (np.isposinf(d).any() and np.isneginf(d).any()):
        return (math.nan, math.nan, math.nan)
    if np.isinf(d).any():
        v = math.inf if np.isposinf(d).any() else -math.inf
        return (v, v, v)
    n = d.shape[0]
    ww = np.ones(n) if w is None else w
    keep = ww > 0
    d, ww = d[keep], ww[keep]
    n = d.shape[0]
    mean = float(np.dot(ww, d) / ww.sum())
    if n < 2:
        return (mean, -math.inf, math.inf)
    se = math.sqrt(n / (n - 1) * float(np.sum(ww**2 * (d - mean) ** 2))) / float(ww.sum())
    q = float(stdtrit(n - 1, 0.5 + CONFIDENCE_LEVEL / 2))
    return (mean, mean - q * se, mean + q * se)


def _basic(estimate: float, boot: np.ndarray, floor: float | None) -> tuple[float, float] | None:
    """The basic interval (NaN-free finite draws only), clipped below at ``floor``."""
    if not math.isfinite(estimate) or not np.all(np.isfinite(boot)):
        return None
    parts = _rs.interval(estimate, boot, None, INTERVAL_METHOD, CONFIDENCE_LEVEL)
    lo, hi = parts.low, parts.high
    return (lo if floor is None else max(lo, floor), hi)


def _bootstrap(
    data: _RowData,
    metrics: Mapping[str, float],
    B: int,
    seed: int,
    *,
    paired: Mapping[str, np.ndarray],
    say: Any = None,
) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float, float]]]:
    """Basic 95 % bootstrap intervals of every column and paired ones of ``paired``.

    The resamples are multinomial row weights (docs/intervals.md): the same
    ``seed`` gives the same resamples for every row of a model, so the intervals of
    the differences ``paired`` (per-row NLL and Brier differences to the uncalibrated
    row) are paired. The kernel estimates resample their own (subsampled) rows; their
    values come from :func:`_suite` (``kernel_counts``). Returns ``(intervals,
    differences)``; a column whose value or resamples are not finite gets no interval.
    """
    P = data.P
    n = P.n_samples
    base = None if P.sample_weight is None else np.asarray(P.sample_weight, dtype=np.float64)
    evs: dict[str, Any] = {}
    for key, fn in (
        ("accuracy", accuracy),
        ("nll", nll),
        ("brier", brier),
        ("ece", ece),
        ("ace", ace),
        ("smece", smece),
    ):
        evs[key] = _rs.evaluator(fn, P, {})[0]
    for key, d in paired.items():
        if np.all(np.isfinite(d)):
            evs["diff_" + key] = _rs.mean_of_terms(d)
    vals: dict[str, list[np.ndarray]] = {k: [] for k in evs}
    done = 0
    for C in _rs.bootstrap_counts(np.random.default_rng(seed), n, B):
        W = C if base is None else C * base
        for k, ev in evs.items():
            vals[k].append(ev(W))
        done += C.shape[0]
        if say is not None:
            say(f"bootstrap {done}/{B} resamples")
    boot = {k: np.concatenate(v) for k, v in vals.items()}
    boot["rbs"] = np.sqrt(boot["brier"])
    if data.kernel_boot is not None:
        for j, key in enumerate(("ce_kl", "ce_l2sq", "refinement_kl")):
            boot[key] = data.kernel_boot[:, j]
    intervals: dict[str, tuple[float, float]] = {}
    for key in _INTERVAL_COLUMNS:
        if key not in boot:
            continue
        got = _basic(metrics[key], boot[key], 0.0)
        if got is not None:
            intervals[key] = got
    differences: dict[str, tuple[float, float, float]] = {}
    for key, d in paired.items():
        if "diff_" + key not in boot:
            differences[key] = _paired_t(d, base)
            continue
        est = float(_rs.mean_of_terms(d)(np.ones((1, n)) if base is None else base[None, :])[0])
        got = _basic(est, boot["diff_" + key], None)
        differences[key] = (est, *got) if got is not None else _paired_t(d, base)
    return intervals, differences


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
    classes: Any = None,
    calibration: Mapping[str, Any] | None = None,
    recalibrators: Sequence[Any] = (),
    n_bootstrap: int = 0,
    null_resamples: int = 200,
    kernel_max_n: int = 5000,
    kernel_bandwidth: float = 0.02,
    figures: bool = False,
    progress: bool = False,
    seed: int = 0,
    verdicts: bool = True,
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
    classes : array-like or fitted classifier, or mapping of str to those, optional
        The class of each column of the scores (test and calibration), in
        order (1-D scores: ``[negative, positive]``), or a fitted scikit-learn
        classifier (its ``classes_``); a mapping gives each model its own.
        Labels are then read as these classes (strings, any integers).
        Default: labels are column indices.
    calibration : mapping of str to (scores, labels), optional
        Each model's calibration split; needed for ``recalibrators``.
    recalibrators : sequence of Recalibrator, default ()
        Unfitted recalibrators (e.g. ``cp.TemperatureScaling()``); each is
        cloned, fitted on the model's calibration split and evaluated on its
        test predictions.
    n_bootstrap : int, default 0
        Basic 95 % bootstrap intervals (``[2 e - q(0.975), 2 e - q(0.025)]``,
        lower end clipped at 0) from this many resamples of the test rows, the same
        resamples for every method of a model (paired); the kernel estimates
        resample their own subsample. docs/intervals.md has the coverage they
        reach on predictors with a known calibration error and when not to trust
        them (near a calibration error of 0: read the ECE p-value).
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
        Report progress on stderr: a tqdm bar on a terminal; one line per step
        (fitting a method, the suite of a row, the bootstrap) when stderr is not a
        terminal (logs, CI).
    seed : int, default 0
    verdicts : bool, default True
        Give the ECE, CE_KL and CE_2^2 of every row a verdict (:func:`calipers.verdict`:
        "resolved", "not distinguishable from calibrated at this n" or "cannot
        resolve: the estimator's bias at this n exceeds the estimate's scale", with the
        reason), from ``null_resamples`` calibrated draws (none when it is 0): the
        ECE's are the draws of its p-value (no extra cost); the kernel estimates' cost
        one more kernel pass with ``null_resamples`` target columns on the kernel rows
        and two passes for the bandwidth sensitivity (bandwidth x 1/2 and x 2).
        Measured on 2 shared CPU cores at 5000 kernel rows and 200 draws (n = 10 000,
        10 classes): 4 s per row without verdicts, 11 s with; ``False`` turns them off.

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
    >>> md = rep.to_markdown()  # the summary per model, then the table
    >>> print(next(line for line in md.splitlines() if line.startswith("|"))[:51])
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
    kw: dict[str, Any] = {"kernel_bandwidth": kernel_bandwidth}
    rows: list[ReportRow] = []
    figs: dict[str, bytes] = {}
    lenses: set[str] = set()
    prog = _Progress(progress)
    for mi, (name, value) in enumerate(models.items()):
        is_logits = logits.get(name, False) if isinstance(logits, Mapping) else bool(logits)
        scores, labels = _as_pair(name, value)
        cls = classes.get(name) if isinstance(classes, Mapping) else classes
        P = (
            scores
            if isinstance(scores, Predictions)
            else check_predictions(scores, labels, logits=is_logits, classes=cls)
        )
        variants: list[tuple[str, Predictions | str]] = [(UNCALIBRATED, P)]
        if recalibrators:
            if name not in calibration:  # type: ignore[operator]
                raise CalibrationInputError(f"no calibration split for model {name!r}")
            cs, cl = _as_pair(name, calibration[name])  # type: ignore[index]
            if cls is not None and cl is not None and not isinstance(cs, Predictions):
                # the recalibrators take column indices: map the labels once
                cl = check_predictions(cs, cl, logits=is_logits, validate=False, classes=cls).labels
            soft: dict[str, Any] = {}  # softmax of the logits, computed once per model
            for ri, rc in enumerate(recalibrators):
                prog.line(f"{name}: fitting {type(rc).__name__} ({ri + 1}/{len(recalibrators)})")
                try:
                    fit_on, apply_to, kind = cs, scores, is_logits
                    if is_logits and getattr(rc, "input", "logits") == "probs":
                        if not soft:
                            soft["cal"] = to_numpy(check_predictions(cs, cl, logits=True).probs)
                            soft["test"] = to_numpy(P.probs)
                        fit_on, apply_to, kind = soft["cal"], soft["test"], False
                    fitted = type(rc)(**rc.get_params()).fit(fit_on, cl, logits=kind)
                    probs = fitted.predict_proba(apply_to, logits=kind)
                    Q: Predictions | str = check_predictions(probs, P.labels, validate=False)
                except CalibrationInputError as exc:
                    Q = f"not applicable: {exc}"
                    why = str(exc).split("; ", 1)[0].split(". ", 1)[0]
                    why = why.removeprefix(type(rc).__name__ + " ")
                    prog.line(f"{name}: {type(rc).__name__} not applicable: {why}")
                variants.append((type(rc).__name__, Q))
        lenses.add(_lens_name(P))
        # one kernel subsample and one set of bootstrap resamples per model: every
        # method is measured on the same rows, so the intervals of differences are paired
        kernel_rows = _subsample(P.n_samples, kernel_max_n, np.random.default_rng(seed + 1000 * mi))
        boot_seed = seed + 1000 * mi + 7
        kernel_counts = None
        if n_bootstrap:
            m_k = P.n_samples if kernel_rows is None else len(kernel_rows)
            kernel_counts = np.concatenate(
                list(_rs.bootstrap_counts(np.random.default_rng(boot_seed + 1), m_k, n_bootstrap))
            )
        prog.start(name, len(variants))
        base: _RowData | None = None
        for vi, (method, Qv) in enumerate(variants):
            where = f"[{vi + 1}/{len(variants)}] {name} / {method}"
            if isinstance(Qv, str):
                prog.line(f"{where}: not applicable, no suite (the reason is in the notes)")
                nan = dict.fromkeys(COLUMNS, math.nan)
                rows.append(ReportRow(name, method, 0, nan, flags=[Qv]))
                prog.advance()
                continue
            prog.line(f"{where}: suite")
            s = seed + 1000 * mi + vi
            metrics, data = _suite(
                Qv,
                kernel_rows=kernel_rows,
                null_resamples=null_resamples,
                seed=s,
                kernel_counts=kernel_counts,
                with_verdicts=verdicts,
                **kw,
            )
            row = ReportRow(name, method, int(Qv.n_samples), metrics, verdicts=data.verdicts)
            paired: dict[str, np.ndarray] = {}
            if base is not None:
                with np.errstate(invalid="ignore"):  # inf - inf: both NLLs infinite (NaN)
                    paired = {k: data.terms[k] - base.terms[k] for k in ("nll", "brier")}
            if n_bootstrap:
                row.intervals, row.differences = _bootstrap(
                    data,
                    metrics,
                    int(n_bootstrap),
                    boot_seed,
                    paired=paired,
                    say=lambda text, where=where: prog.line(f"{where}: {text}"),
                )
            else:
                w = data.P.sample_weight
                row.differences = {
                    k: _paired_t(d, None if w is None else np.asarray(w, dtype=np.float64))
                    for k, d in paired.items()
                }
            if base is None and method == UNCALIBRATED:
                base = data
            rows.append(row)
            if figures:
                prog.line(f"{where}: figures")
                figs.update(_figures(name, method, Qv))
            prog.advance()
        prog.close()
    _flag(rows)
    if lenses == {"binary"}:
        lens_text = "positive class, P(y = 1) against y"
    elif lenses == {"top_label"}:
        lens_text = "top label, max_k p_k against 1{argmax = y}"
    else:
        lens_text = "positive class (P(y = 1) against y) for 1-D input, top label otherwise"
    settings = {
        "ece": f"{lens_text}; 15 equal-width bins, L1",
        "kernel": f"Beta kernel on the same lens, leave-one-out, bandwidth {kernel_bandwidth}, "
        f"at most {kernel_max_n} rows (seeded subsample)",
        "ece_p_value": "targets redrawn as Bernoulli(score) in the same lens",
        "null_resamples": null_resamples,
        "n_bootstrap": n_bootstrap,
        "seed": seed,
        "flags": "a proper score counts as worse after recalibration only when the 95 % "
        "paired interval of its difference to the uncalibrated row (same test rows) "
        "excludes 0: "
        + (
            "basic bootstrap interval on the report's resamples"
            if n_bootstrap
            else "t-interval of the mean per-row difference"
        ),
    }
    if verdicts and null_resamples:
        settings["verdicts"] = (
            f"ECE, CE_KL and CE_2^2 against {null_resamples} draws of a perfectly calibrated "
            "model with the same predictions (targets redrawn as Bernoulli(score) in the "
            "lens; kernel estimates on the kernel rows), and as many draws from a "
            "calibration curve fitted to the lens's (score, target) pairs, whose bias "
            "gives the recommended number and its 95 % interval: 'not distinguishable' "
            "when p > 0.05, 'resolved' when the interval excludes 0, 'cannot resolve' "
            "otherwise"
        )
    if n_bootstrap:
        settings["intervals"] = (
            f"95 % basic bootstrap intervals [2 e - q(0.975), 2 e - q(0.025)] from "
            f"{n_bootstrap} resamples of the test rows (lower end clipped at 0). They aim at "
            "the population value of each estimator; an upward-biased calibration error "
            "can have an interval below its own estimate. At a calibration error near 0 "
            "no bootstrap interval is reliable: read the ECE p-value (docs/intervals.md)"
        )
    return Report(rows, settings, figures=figs)


#: Diagram kinds drawn per row with ``figures=True`` (file stem -> title).
FIGURE_KINDS = {
    "reliability": "Reliability diagram",
    "smooth": "Smooth reliability diagram",
    "sharpness": "Calibration-sharpness diagram",
    "pit": "PIT histogram",
    "quantile": "Quantile reliability diagram",
    "variance": "Predicted variance against squared error",
}


def _figures(model: str, method: str, Q: Predictions) -> dict[str, bytes]:
    import io

    from ..diagrams import (
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


class _Progress:
    """Progress on stderr: a tqdm bar on a terminal; one line per step otherwise.

    When stderr is not a terminal (a log file, CI, a pipe) a bar would be disabled
    and say nothing, so each step (fitting a method, the suite of a row, each batch
    of bootstrap resamples) is one line ``calipers report: ... (elapsed s)``.
    """

    def __init__(self, on: bool) -> None:
        self.on = on
        self.t0 = time.perf_counter()
        self.bar: Any = None
        isatty = getattr(sys.stderr, "isatty", None)
        self.tty = bool(on and isatty is not None and isatty())

    def start(self, name: str, total: int) -> None:
        if not self.tty:
            return
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is a dependency
            self.tty = False
            return
        self.bar = tqdm(
            total=total, desc=f"report: {name}", unit="row", leave=False, file=sys.stderr
        )

    def line(self, text: str) -> None:
        if not self.on:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(text)
            return
        dt = time.perf_counter() - self.t0
        print(f"calipers report: {text} ({dt:.1f} s)", file=sys.stderr, flush=True)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _diff_text(k: str, b: ReportRow, r: ReportRow) -> str:
    d, lo, hi = r.differences[k]
    change = f"{_LABELS[k]} {b.metrics[k]:.4f} -> {r.metrics[k]:.4f}"
    if not math.isfinite(d):
        return change
    pct = f"{100 * CONFIDENCE_LEVEL:g} %"
    return f"{change}, {d:+.4f}, {pct} paired interval [{lo:+.4f}, {hi:+.4f}]"


def _flag(rows: list[ReportRow]) -> None:
    """Add the report's flags (Chidambaram & Ge (2024) §3) to the rows.

    A proper score counts as worse only when the paired interval of its difference
    to the uncalibrated row lies above 0 (``ReportRow.differences``), so a change
    within the noise of the test rows never raises a flag.
    """
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
        worse = [k for k in ("nll", "brier") if k in r.differences and r.differences[k][1] > 0]
        if worse and not r.metrics["ece"] < b.metrics["ece"]:
            what = "; ".join(_diff_text(k, b, r) for k in worse)
            r.flags.append(
                f"recalibration made the proper score worse beyond the noise ({what}) without "
                "lowering the ECE: the method does not help on this split (overfitting a small "
                "calibration split is the usual cause)"
            )
        if r.metrics["ece"] < b.metrics["ece"]:
            if worse:
                what = "; ".join(_diff_text(k, b, r) for k in worse)
                r.flags.append(
                    f"calibration error fell (ECE {b.metrics['ece']:.4f} -> {r.metrics['ece']:.4f}) "
                    f"but the proper score got worse beyond the noise ({what}): the "
                    "Chidambaram & Ge (2024) pitfall"
                )
