"""The report as a document: its rows, notes, figures and renderings.

A :class:`Report` holds what :func:`calipers.report` (or
:func:`calipers.reports.regression_report`) computed, one :class:`ReportRow` per
model and recalibration method, and renders it: Markdown, JSON, LaTeX, HTML, a
pandas DataFrame, and a folder written whole (:meth:`Report.save`). It computes
no metric: the numbers, intervals, verdicts and flags are given to it. What it
writes puts calibration beside accuracy and proper scores (Chidambaram & Ge
(2024) §6): a summary per model, the table, the figures, then the notes and the
verdicts.
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..inference import Verdict
from ..inference._resampling import format_p_value
from ..inference._resampling import p_value_bound as _p_value_bound
from ..metrics import registry
from . import _clinical_section as _clinical

__all__ = ["Report", "ReportRow", "COLUMNS"]


#: Column names, in order, with a short human label: the metric registry's report
#: rows (their column keys and labels, in registry order), then the report's own two.
COLUMNS: dict[str, str] = {
    **{
        str(m.report): m.label[:1].upper() + m.label[1:]
        for m in registry.METRICS.values()
        if m.report is not None
    },
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
    #: The clinical section's blocks (``report(..., clinical=True)``), rendered after
    #: the figures; empty: no section.
    clinical: list[Any] = field(default_factory=list, repr=False)

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

    def _summary_score(self, base: Any) -> str | None:
        """The proper score that ranks a model's methods in the summary.

        The NLL where the uncalibrated row has one; otherwise (predictive
        distributions without a density: quantile sets, samples, intervals) the
        CRPS, then the interval score; None when the table has none of them."""
        for name in ("nll", "crps", "interval_score"):
            if name in self.columns and not math.isnan(base.metrics.get(name, math.nan)):
                return name
        return None

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
            score = self._summary_score(base)
            if len(mine) > 1 and score is not None:
                label = _LABELS.get(score, score)

                def rank(v: float) -> float:
                    return math.inf if math.isnan(v) else v

                best = min(
                    mine,
                    key=lambda r: (rank(r.metrics[score]), rank(r.metrics.get("brier", math.nan))),
                )
                if best is base:
                    parts.append(f"no method lowered the {label} ({_fmt(base.metrics[score])})")
                else:
                    change = [f"{label} {_fmt(base.metrics[score])} -> {_fmt(best.metrics[score])}"]
                    d = best.differences.get(score)
                    if d is not None and math.isfinite(d[1]) and math.isfinite(d[2]):
                        if d[1] <= 0 <= d[2]:
                            change[0] += " (within the noise)"
                    if "ece" in self.columns:
                        change.append(
                            f"ECE {_fmt(base.metrics['ece'])} -> {_fmt(best.metrics['ece'])}"
                        )
                    parts.append(f"best by {label}: {best.method} ({', '.join(change)})")
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
            elif len(mine) == 1 and score is not None:
                parts.append(f"{_LABELS.get(score, score)} {_fmt(best.metrics[score])}")
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
        table = self._table_rows()
        bases = [r for r in table if r.method == UNCALIBRATED] or table
        if all(self._summary_score(r) in ("nll", None) for r in bases):
            return "(per model: the lowest-NLL method, methods that worsened a proper score)"
        return (
            "(per model: the method with the lowest NLL, or the lowest CRPS where the "
            "predictions have no density, methods that worsened a proper score)"
        )

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
        if self.clinical:
            shown = figure_dir.rstrip("/") if figure_dir is not None and self.figures else None
            lines += ["", *_clinical.markdown_section(self.clinical, shown)]
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
            more lines; with the clinical section, its overview table too.

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
        if self.clinical:  # the clinical section's overview table
            lines += ["", f"**{_clinical.HEAD}**", "", *_clinical.markdown_overview(self.clinical)]
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
            if _clinical.is_clinical_figure(key):  # shown in the clinical section
                continue
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
        if self.clinical:
            doc["clinical"] = _clinical.json_section(self.clinical)
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
        if self.clinical:
            shown = figure_dir.rstrip("/") if figure_dir is not None and self.figures else None
            parts.append(_clinical.latex_section(self.clinical, shown))
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
            if _clinical.is_clinical_figure(key):  # shown in the clinical section
                continue
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
            + (_clinical.html_section(self.clinical, self.figures) if self.clinical else "")
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


#: Diagram kinds drawn per row with ``figures=True`` (file stem -> title).
FIGURE_KINDS = {
    "reliability": "Reliability diagram",
    "smooth": "Smooth reliability diagram",
    "sharpness": "Calibration-sharpness diagram",
    "pit": "PIT histogram",
    "quantile": "Quantile reliability diagram",
    "variance": "Predicted variance against squared error",
}


#: Longest name part kept in a figure's file name (before the distinguishing suffix).
_SLUG_LENGTH = 80


def _slug(s: str) -> str:
    """``s`` as part of a file name, distinct for distinct ``s``.

    Letters, digits, ``-``, ``.`` and single inner ``_`` are kept; every
    other character becomes ``-``, and so do a leading ``.`` (it would hide
    the file) and an ``_`` that is first, last or follows another (``__``
    separates the parts of a figure's name, ``model__method__kind``). A name that had to change, or is longer than 80 characters, gets
    ``-`` and the first 8 hex digits of its SHA-256 appended, so two names
    that read alike after the change (``"a b"`` and ``"a-b"``) never share a
    file: a file name identifies its model and method.

    Examples
    --------
    >>> _slug("resnet50"), _slug("a-b")
    ('resnet50', 'a-b')
    >>> _slug("a b") != _slug("a-b") and _slug("a b").startswith("a-b-")
    True
    """
    import hashlib

    kept = []
    for i, c in enumerate(s):
        inner = 0 < i < len(s) - 1
        ok = (
            c.isalnum()
            or c == "-"
            or (c == "." and i > 0)
            or (c == "_" and inner and s[i - 1] != "_")
        )
        kept.append(c if ok else "-")
    slug = "".join(kept)
    if slug == s and len(s) <= _SLUG_LENGTH and s:
        return s
    digest = hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug[:_SLUG_LENGTH]}-{digest}" if slug else digest
