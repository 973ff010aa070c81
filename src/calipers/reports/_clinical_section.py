"""The report's clinical section: the calibration hierarchy of every row.

With ``calipers.report(..., clinical=True)`` each row of the report (each model,
uncalibrated and after each recalibration method) gets the calibration hierarchy
of Van Calster et al. (2016), computed by
:func:`calipers.clinical.calibration_hierarchy` on the row's test probabilities:
one block for binary predictions, one per class (one-vs-rest on its column) for
multiclass ones. The section opens with one overview table (a line per block:
n, events, O/E, calibration intercept and slope, ICI, E90, Emax, C-statistic,
Brier, Hosmer-Lemeshow p), then each block: the hierarchy's sentences
(``summary()``), the table of its levels (in the large, weak, moderate, the
tests, discrimination) and, with ``figures=True``, the clinical calibration
diagram (:func:`calipers.diagrams.clinical_calibration_diagram`). It sits after
the report's figures, so the first screen stays the summary and the table.

This module computes the blocks and renders them (Markdown, HTML, LaTeX, JSON);
:mod:`calipers.reports._document` places the renderings.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backend import to_numpy
from ..validation import CalibrationInputError, Predictions

__all__ = [
    "ClinicalBlock",
    "HEAD",
    "clinical_blocks",
    "is_clinical_figure",
    "markdown_section",
    "markdown_overview",
    "html_section",
    "latex_section",
    "json_section",
]

#: The section's heading.
HEAD = "Calibration hierarchy (Van Calster et al. 2016)"

#: What the section holds, under its heading.
INTRO = (
    "The calibration levels of Van Calster et al. (2016) per row, as clinical risk "
    "models report them: calibration in the large (mean predicted risk against the "
    "observed event rate, O/E), weak calibration (calibration intercept and slope, Cox "
    "1958), moderate calibration (a flexible calibration curve and its summaries ICI, "
    "E50, E90, Emax, Austin & Steyerberg 2019), the Hosmer-Lemeshow and Spiegelhalter "
    "tests, and discrimination (C-statistic) and the Brier score. Multiclass predictions: "
    "one-vs-rest per class."
)

#: The figure kind (last part of a figure's key) of the clinical diagrams.
FIGURE_KIND = "clinical"


def is_clinical_figure(key: str) -> bool:
    """Whether the figure ``key`` (``model__method__kind``) is a clinical diagram
    (shown in the clinical section, not in the grid of the report's figures)."""
    return key.rsplit("__", 1)[-1].startswith(FIGURE_KIND)


@dataclass(frozen=True)
class ClinicalBlock:
    """The calibration hierarchy of one report row (and one class, one-vs-rest).

    ``hierarchy`` is None when it could not be computed for this row (``reason``
    says why, e.g. a recalibrated risk of exactly 0 or 1); ``figure`` is the key of
    its clinical diagram in :attr:`calipers.Report.figures`, if drawn.
    """

    model: str
    method: str
    class_name: str | None
    hierarchy: Any
    reason: str | None = None
    figure: str | None = None

    @property
    def subject(self) -> str:
        """``model / method`` (and ``, class c`` for one class of several)."""
        s = f"{self.model} / {self.method}"
        return s if self.class_name is None else f"{s}, class {self.class_name}"


def _one_vs_rest(Q: Predictions) -> list[tuple[int | None, np.ndarray, np.ndarray, Any]]:
    """``(class or None, risk, outcome 0/1, weights)`` of each block of a row."""
    p = np.asarray(to_numpy(Q.probs), dtype=np.float64)
    y = np.asarray(to_numpy(Q.labels))
    w = None if Q.sample_weight is None else np.asarray(to_numpy(Q.sample_weight), np.float64)
    if p.ndim == 1:
        return [(None, p, (y == 1).astype(np.int64), w)]
    if p.shape[1] == 2:
        return [(None, p[:, 1], (y == 1).astype(np.int64), w)]
    return [(c, p[:, c], (y == c).astype(np.int64), w) for c in range(p.shape[1])]


def clinical_blocks(
    model: str,
    method: str,
    Q: Predictions,
    *,
    key_prefix: str,
    figures: bool,
    classes: Any = None,
) -> tuple[list[ClinicalBlock], dict[str, bytes]]:
    """The blocks of one report row and, with ``figures``, their diagrams (PNG).

    ``key_prefix`` is ``model__method`` as the report's figure files spell them;
    a diagram's key is ``<key_prefix>__clinical`` (``__clinical-<c>`` for class c).
    ``classes``: the class of each column (the model's, so that every row of a
    model names its classes alike); default ``Q.classes``, else the column index.
    """
    from ..clinical import calibration_hierarchy

    blocks: list[ClinicalBlock] = []
    figs: dict[str, bytes] = {}
    names = Q.classes if classes is None else classes
    for c, p, y, w in _one_vs_rest(Q):
        name = None
        if c is not None:
            name = str(names[c]) if names is not None else str(c)
        try:
            h = calibration_hierarchy(p, y, sample_weight=w)
        except CalibrationInputError as exc:
            blocks.append(ClinicalBlock(model, method, name, None, reason=str(exc)))
            continue
        key = None
        if figures:
            key = f"{key_prefix}__{FIGURE_KIND}" + ("" if c is None else f"-{c}")
            figs[key] = _diagram_png(p, y, w, h, f"{model} / {method}", name)
        blocks.append(ClinicalBlock(model, method, name, h, figure=key))
    return blocks, figs


def _diagram_png(
    p: np.ndarray, y: np.ndarray, w: Any, h: Any, title: str, class_name: str | None
) -> bytes:
    import io

    from ..diagrams import clinical_calibration_diagram
    from ..diagrams._style import plain_text
    from ..io.output import interrupts_deferred

    with interrupts_deferred():
        import matplotlib.pyplot as plt

        text = title if class_name is None else f"{title}, class {class_name}"
        fig = clinical_calibration_diagram(
            p, y, hierarchy=h, sample_weight=w, title=plain_text(text)
        )
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=150)
        plt.close(fig)
    return buf.getvalue()


# ------------------------------------------------------------------ numbers as text


def _num(v: Any, places: int = 3) -> str:
    if v is None:
        return "n/a"
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    return f"{v:.{places}f}"


def _ci(pair: Any, places: int = 3) -> str:
    if pair is None:
        return ""
    lo, hi = pair
    return f"[{_num(lo, places)}, {_num(hi, places)}]"


def _p(v: Any) -> str:
    if v is None:
        return "n/a"
    v = float(v)
    if math.isnan(v):
        return "nan"
    return "< 0.001" if v < 0.001 else f"{v:.3f}"


def _p_is(v: Any) -> str:
    """``"p = 0.206"``, or ``"p < 0.001"``."""
    text = _p(v)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def _events(v: Any) -> str:
    v = float(v)
    return f"{v:.0f}" if v == round(v) else f"{v:.1f}"


#: The overview table's columns.
OVERVIEW_HEAD = (
    "row",
    "n",
    "events",
    "O/E [95 % CI]",
    "intercept [95 % CI]",
    "slope [95 % CI]",
    "ICI",
    "E90",
    "Emax",
    "C-statistic",
    "Brier",
    "HL p",
)


def overview_cells(b: ClinicalBlock) -> list[str]:
    """The overview table's cells of one block (:data:`OVERVIEW_HEAD`)."""
    h = b.hierarchy
    if h is None:
        return [b.subject, "", "", f"not computed: {b.reason}", *[""] * 8]
    itl, wk, ix = h.in_the_large, h.weak, h.index
    hl = h.hosmer_lemeshow
    return [
        b.subject,
        str(int(h.n)),
        _events(h.n_events),
        f"{_num(itl.oe_ratio, 2)} {_ci(itl.oe_interval, 2)}",
        f"{_num(wk.intercept, 2)} {_ci(wk.intercept_interval, 2)}",
        f"{_num(wk.slope, 2)} {_ci(wk.slope_interval, 2)}",
        _num(ix.ici),
        _num(ix.e90),
        _num(ix.emax),
        _num(h.c_statistic),
        _num(h.brier),
        _p(None if hl is None else hl.p_value),
    ]


def level_rows(h: Any) -> list[tuple[str, str, str, str]]:
    """``(level, quantity, estimate, interval)`` of a hierarchy, the levels in order."""
    itl, wk, ix, cv = h.in_the_large, h.weak, h.index, h.curve
    rows = [
        ("Calibration in the large", "mean predicted risk", _num(itl.mean_predicted), ""),
        ("", "observed event rate", _num(itl.observed_rate), ""),
        ("", "observed - predicted", _num(itl.difference), _ci(itl.difference_interval)),
        ("", "O/E ratio", _num(itl.oe_ratio), _ci(itl.oe_interval)),
        ("Weak", "calibration intercept", _num(wk.intercept), _ci(wk.intercept_interval)),
        ("", "calibration slope", _num(wk.slope), _ci(wk.slope_interval)),
        ("Moderate", "flexible curve", str(getattr(cv, "method", "")), ""),
        ("", "ICI (mean absolute difference)", _num(ix.ici), ""),
        ("", "E50", _num(ix.e50), ""),
        ("", "E90", _num(ix.e90), ""),
        ("", "Emax", _num(ix.emax), ""),
    ]
    hl, sp, belt = h.hosmer_lemeshow, h.spiegelhalter, getattr(h, "belt", None)
    if hl is not None:
        rows.append(
            (
                "Tests",
                f"Hosmer-Lemeshow chi-square ({int(hl.df)} df)",
                _num(hl.statistic),
                _p_is(hl.p_value),
            )
        )
    if sp is not None:
        rows.append(
            (
                "" if hl is not None else "Tests",
                "Spiegelhalter z",
                _num(sp.z),
                _p_is(sp.p_value),
            )
        )
    if belt is not None:
        rows.append(("", f"calibration belt (degree {int(belt.degree)})", "", _p_is(belt.p_value)))
    rows += [
        ("Discrimination", "C-statistic", _num(h.c_statistic), ""),
        ("Overall", "Brier score", _num(h.brier, 4), ""),
    ]
    return rows


def _sentences(b: ClinicalBlock) -> list[str]:
    return [" ".join(str(s).split()) for s in b.hierarchy.summary()]


# ------------------------------------------------------------------ Markdown


def _md(s: str) -> str:
    return " ".join(s.split()).replace("|", r"\|")


def markdown_overview(blocks: list[ClinicalBlock]) -> list[str]:
    """The overview table in Markdown (a line per block)."""
    lines = [
        "| " + " | ".join(OVERVIEW_HEAD) + " |",
        "|" + "|".join("---" for _ in OVERVIEW_HEAD) + "|",
    ]
    lines += ["| " + " | ".join(_md(c) for c in overview_cells(b)) + " |" for b in blocks]
    return lines


def markdown_section(blocks: list[ClinicalBlock], figure_dir: str | None) -> list[str]:
    """The section in Markdown: heading, overview table, then every block."""
    from urllib.parse import quote

    lines = [f"## {HEAD}", "", INTRO, "", *markdown_overview(blocks)]
    for b in blocks:
        lines += ["", f"### {_md(b.subject)}", ""]
        if b.hierarchy is None:
            lines.append(f"Not computed: {_md(str(b.reason))}")
            continue
        lines += [f"- {_md(s)}" for s in _sentences(b)]
        lines += ["", "| level | quantity | estimate | 95 % interval |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(_md(c) for c in r) + " |" for r in level_rows(b.hierarchy)]
        if figure_dir is not None and b.figure is not None:
            path = quote(f"{figure_dir.rstrip('/')}/{b.figure}.png")
            lines += ["", f"![{_md(b.subject)}: clinical calibration diagram]({path})"]
    return lines


# ------------------------------------------------------------------ HTML


def _table_html(head: tuple[str, ...] | list[str], rows: list[list[str]] | list[Any]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows
    )
    return (
        f'<table class="calipers-report"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'
    )


def html_section(blocks: list[ClinicalBlock], figures: dict[str, Any]) -> str:
    """The section in HTML: the overview table, then a collapsible block per row
    (open when there is one), the diagram embedded as a data URI."""
    import base64

    out = [
        f"<h2>{html.escape(HEAD)}</h2><p>{html.escape(INTRO)}</p>",
        _table_html(OVERVIEW_HEAD, [overview_cells(b) for b in blocks]),
    ]
    for b in blocks:
        head = f"<summary>{html.escape(b.subject)}</summary>"
        if b.hierarchy is None:
            out.append(
                f"<details>{head}<p>Not computed: {html.escape(str(b.reason))}</p></details>"
            )
            continue
        items = "".join(f"<li>{html.escape(s)}</li>" for s in _sentences(b))
        body = f'<ul class="calipers-summary">{items}</ul>' + _table_html(
            ("level", "quantity", "estimate", "95 % interval"),
            [list(r) for r in level_rows(b.hierarchy)],
        )
        if b.figure is not None and b.figure in figures:
            b64 = base64.b64encode(figures[b.figure]).decode("ascii")
            alt = html.escape(f"{b.subject}: clinical calibration diagram")
            body += (
                f'<figure style="max-width:480px"><img alt="{alt}" '
                f'src="data:image/png;base64,{b64}"></figure>'
            )
        out.append(f"<details{' open' * (len(blocks) == 1)}>{head}{body}</details>")
    return '<section class="calipers-clinical">' + "".join(out) + "</section>"


# ------------------------------------------------------------------ LaTeX


def latex_section(blocks: list[ClinicalBlock], figure_dir: str | None) -> str:
    """The section in LaTeX (no package beyond ``graphicx`` for the figures)."""
    from ._latex import latex_escape as esc

    def tabular(spec: str, head: Any, rows: list[list[str]]) -> str:
        lines = [f"\\begin{{tabular}}{{{spec}}}", "\\hline", " & ".join(esc(h) for h in head)]
        lines[-1] += " \\\\"
        lines.append("\\hline")
        lines += [" & ".join(esc(str(c)) for c in r) + " \\\\" for r in rows]
        lines += ["\\hline", "\\end{tabular}"]
        return "\n".join(lines) + "\n"

    out = [
        f"\\subsection*{{{esc(HEAD)}}}\n",
        esc(INTRO) + "\n\n",
        "\\medskip\\noindent{\\footnotesize\\setlength{\\tabcolsep}{3pt}%\n"
        + tabular(
            "l" + "r" * (len(OVERVIEW_HEAD) - 1), OVERVIEW_HEAD, [overview_cells(b) for b in blocks]
        )
        + "}\n",
    ]
    for b in blocks:
        out.append(f"\\par\\medskip\\noindent\\textbf{{{esc(b.subject)}}}\\par\n")
        if b.hierarchy is None:
            out.append(esc(f"Not computed: {b.reason}") + "\n")
            continue
        items = "".join(f"\\item {esc(s)}\n" for s in _sentences(b))
        out.append(
            "{\\small\\begin{list}{$\\bullet$}{\\setlength{\\itemsep}{0pt}}\n"
            + items
            + "\\end{list}}\n"
        )
        out.append(
            "{\\footnotesize\n"
            + tabular(
                "llrl",
                ("level", "quantity", "estimate", "95 % interval"),
                [list(r) for r in level_rows(b.hierarchy)],
            )
            + "}\n"
        )
        if (
            figure_dir is not None
            and b.figure is not None
            and re.fullmatch(r"[A-Za-z0-9_.\-]+", b.figure)  # what LaTeX reads as it is
        ):
            out.append(
                "\\par\\smallskip\\noindent\\includegraphics[width=0.45\\linewidth,"
                f"height=0.45\\textheight,keepaspectratio]{{{figure_dir}/{b.figure}.png}}\n"
            )
    return "".join(out)


# ------------------------------------------------------------------ JSON


def _jsonable(v: Any) -> Any:
    """``v`` with every number JSON can write (non-finite ones as ``"inf"``, ``"nan"``)."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isfinite(f):
            return f
        return "inf" if f > 0 else "-inf" if f < 0 else "nan"
    return v


def json_section(blocks: list[ClinicalBlock]) -> list[dict[str, Any]]:
    """The section as JSON-ready dicts: ``{model, method, class, hierarchy, summary,
    figure, not_computed}`` per block (``hierarchy`` is ``CalibrationHierarchy.to_dict()``)."""
    return [
        {
            "model": b.model,
            "method": b.method,
            "class": b.class_name,
            "hierarchy": None if b.hierarchy is None else _jsonable(b.hierarchy.to_dict()),
            "summary": [] if b.hierarchy is None else _sentences(b),
            "figure": None if b.figure is None else f"figures/{b.figure}.png",
            "not_computed": b.reason,
        }
        for b in blocks
    ]
