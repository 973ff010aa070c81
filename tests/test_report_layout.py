"""The report's layout, read in a minute: a summary per model first, then the table, the
figures (the diagrams of one model and method in one row) and, last, the notes and the
per-metric verdicts (HTML: a collapsed ``<details>``; Markdown and LaTeX: an appendix);
what the command line prints around it (the summary with ``--out``, honest progress and
last line of the demo, its help, the ``--chunk-rows`` hint), and the streamed report's
HTML with a reliability diagram drawn from the per-bin totals.

Expected values are computed here independently (from the JSON the report writes, or by
hand with NumPy/SciPy), never copied from an earlier run."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.cli import main
from calipers.recalibration.base import Recalibrator

VOID = {"img", "meta", "br", "hr", "input", "link"}

#: The demo's methods (ts, ets, hb, ir, mrr) and its models.
N_METHODS = 5

#: At most this many words before the first figure of the demo's HTML page (3 256 words
#: and 68 bullets before the summary moved the notes and verdicts behind the figures).
WORDS_BEFORE_FIRST_FIGURE = 400


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def iter(self) -> Any:
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def find_all(self, tag: str, cls: str | None = None) -> list[Node]:
        return [n for n in self.iter() if n.tag == tag and (cls is None or cls in n.classes())]

    def ancestors(self) -> list[Node]:
        out, n = [], self.parent
        while n is not None:
            out.append(n)
            n = n.parent
        return out


class Tree(HTMLParser):
    """A small DOM, and the document order of every element and text."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root
        self.order: list[Node | str] = []  # elements and texts, in document order
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.cur)
        self.cur.children.append(node)
        self.order.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_endtag(self, tag: str) -> None:
        n: Node | None = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data: str) -> None:
        self.cur.children.append(data)
        if self.cur.tag not in ("style", "title", "script"):
            self.order.append(data)

    def before(self, stop: Node) -> list[Node | str]:
        return self.order[: next(i for i, x in enumerate(self.order) if x is stop)]

    def index(self, node: Node) -> int:
        return next(i for i, x in enumerate(self.order) if x is node)


def _first_img(tree: Tree) -> Node:
    return next(n for n in tree.order if isinstance(n, Node) and n.tag == "img")


def _num(v: Any) -> float:
    return float(v)  # the JSON writes non-finite numbers as "inf", "nan"


def _best_by_nll(rows: list[dict[str, Any]]) -> str:
    """The method with the lowest NLL (NaN last; ties: the earlier row, Brier next)."""

    def rank(v: float) -> float:
        return math.inf if math.isnan(v) else v

    keyed = [
        (rank(_num(r["metrics"]["nll"])), rank(_num(r["metrics"].get("brier", "nan"))), i)
        for i, r in enumerate(rows)
    ]
    return str(rows[min(keyed)[2]]["method"])


# ----------------------------------------------------------------------------- the demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``calipers demo --out DIR`` once (all five methods, figures): the folder, what it
    printed and said, and its JSON."""
    pytest.importorskip("matplotlib")
    out = tmp_path_factory.mktemp("layout") / "demo"
    printed, said = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(said):
        code = main(["demo", "--out", str(out)])
    assert code == 0, said.getvalue()[-3000:]
    return {
        "out": out,
        "stdout": printed.getvalue(),
        "stderr": said.getvalue(),
        "doc": json.loads((out / "report.json").read_text()),
    }


def test_demo_html_has_a_figure_within_the_first_400_words(demo: dict[str, Any]) -> None:
    page = (demo["out"] / "report.html").read_text()
    tree = Tree(page)
    first = _first_img(tree)
    head = tree.before(first)
    words = sum(len(x.split()) for x in head if isinstance(x, str))
    assert words <= WORDS_BEFORE_FIRST_FIGURE, words
    # the only bullets above the first figure are the summary's, one per model
    models = list(dict.fromkeys(r["model"] for r in demo["doc"]["rows"]))
    bullets = [x for x in head if isinstance(x, Node) and x.tag == "li"]
    (summary,) = tree.root.find_all("ul", "calipers-summary")
    assert bullets == summary.find_all("li") and len(bullets) == len(models)
    # summary, then the table, then the figures, then the notes and verdicts, collapsed
    (table,) = tree.root.find_all("table", "calipers-report")
    (details,) = tree.root.find_all("details", "calipers-details")
    assert tree.index(summary) < tree.index(table) < tree.index(first) < tree.index(details)
    last_img = tree.root.find_all("img")[-1]
    assert tree.index(last_img) < tree.index(details)
    assert "open" not in details.attrs
    for ul in tree.root.find_all("ul", "calipers-verdicts") + tree.root.find_all(
        "ul", "calipers-flags"
    ):
        assert details in ul.ancestors()
    n_verdicts = sum(len(r["verdicts"]) for r in demo["doc"]["rows"])
    (verdicts,) = details.find_all("ul", "calipers-verdicts")
    assert len(verdicts.find_all("li")) == n_verdicts > 0


def test_demo_html_figures_of_one_model_and_method_share_a_row(demo: dict[str, Any]) -> None:
    tree = Tree((demo["out"] / "report.html").read_text())
    sections = tree.root.find_all("section", "figure-row")
    rows = demo["doc"]["rows"]
    assert [s.find_all("h3")[0].text() for s in sections] == [
        f"{r['model']} / {r['method']}" for r in rows
    ]
    for s in sections:
        (grid,) = s.find_all("div", "figure-grid")
        imgs = grid.find_all("img")
        assert len(imgs) == 3
        assert "grid-template-columns:repeat(3," in grid.attrs["style"]  # one row of three
        title = s.find_all("h3")[0].text()
        assert all(img.attrs["alt"].startswith(title + ": ") for img in imgs)
        assert all(img.attrs["src"].startswith("data:image/png;base64,") for img in imgs)
    assert sum(len(s.find_all("img")) for s in sections) == len(
        list((demo["out"] / "figures").glob("*.png"))
    )


def test_demo_summary_names_what_the_json_says(demo: dict[str, Any]) -> None:
    doc = demo["doc"]
    tree = Tree((demo["out"] / "report.html").read_text())
    (summary,) = tree.root.find_all("ul", "calipers-summary")
    items = {li.find_all("b")[0].text(): li.text() for li in summary.find_all("li")}
    for model, text in items.items():
        rows = [r for r in doc["rows"] if r["model"] == model]
        best = _best_by_nll(rows)
        if best == "uncalibrated":
            assert "No method lowered the NLL" in text
        else:
            assert f"Best by NLL: {best} (" in text
        row = next(r for r in rows if r["method"] == best)
        # the meaning first, so that "resolved" is not read as "fixed"
        v = row["verdicts"]["ece"]
        meaning = {
            "resolved": "miscalibrated beyond noise and estimator bias",
            "not_distinguishable": "within the noise of a calibrated model",
            "cannot_resolve": "not calibrated, but its size is not resolved at this n",
        }[v["category"]]
        short = {"not_distinguishable": "not distinguishable"}.get(v["category"], v["verdict"])
        short = short.split(":")[0]
        rec = f"{v['recommended']:.4f} [{v['interval'][0]:.4f}, {v['interval'][1]:.4f}]"
        assert f"ECE {row['metrics']['ece']:.4f} (recommended {rec}): {meaning}" in text
        assert f"({short})" in text
        na = [x["method"] for x in doc["not_applicable"] if x["model"] == model]
        if na:
            assert text.rstrip(".").endswith("not applicable: " + ", ".join(na))
        else:
            assert "not applicable" not in text


def test_demo_markdown_puts_the_verdicts_in_an_appendix_after_the_figures(
    demo: dict[str, Any],
) -> None:
    out = demo["out"]
    md = (out / "report.md").read_text()
    lines = md.splitlines()
    summary = lines.index(next(x for x in lines if x.startswith("**Summary**")))
    table = lines.index(next(x for x in lines if x.startswith("| model | method |")))
    figures = lines.index("## Figures")
    appendix = lines.index("## Appendix: notes and verdicts")
    verdicts = lines.index(next(x for x in lines if x.startswith("**Verdicts**")))
    assert summary < table < figures < appendix < verdicts
    # no note and no verdict above the appendix
    n_verdicts = sum(len(r["verdicts"]) for r in demo["doc"]["rows"])
    bullets_after = [x for x in lines[appendix:] if x.startswith("- ")]
    assert len(bullets_after) >= n_verdicts > 0
    bullets_before = [x for x in lines[:appendix] if x.startswith("- ")]
    assert len(bullets_before) == len({r["model"] for r in demo["doc"]["rows"]})
    # the figures: one table row per model and method, every image a file of the folder
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert sorted(links) == sorted(f"figures/{p.name}" for p in (out / "figures").glob("*.png"))
    fig_rows = [x for x in lines[figures:appendix] if x.startswith("| ") and "![" in x]
    assert len(fig_rows) == len(demo["doc"]["rows"])
    assert all(x.count("![") == 3 for x in fig_rows)


def test_demo_latex_leads_with_the_summary_and_ends_with_the_appendix(
    demo: dict[str, Any],
) -> None:
    tex = (demo["out"] / "report.tex").read_text()
    marks = [
        r"\textbf{Summary}",
        r"\begin{tabular}",
        r"\subsection*{Figures}",
        r"\subsection*{Appendix: notes and verdicts}",
        r"\textbf{Verdicts}",
        r"\subsection*{Settings}",
        r"\end{document}",
    ]
    where = [tex.index(m) for m in marks]
    assert where == sorted(where)
    assert tex.count(r"\begin{tabular}{ll") == 1 and tex.isascii()


def test_demo_says_what_it_fitted_per_model(demo: dict[str, Any]) -> None:
    doc = demo["doc"]
    last = demo["stderr"].strip().splitlines()[-1]
    assert "fitted 5 recalibration methods" not in last
    said: dict[str, int] = {}
    for k, names in re.findall(r"(\d+) of 5 methods for ([^;(]+)", last):
        for name in re.split(r", | and ", names.strip()):
            said[name] = int(k)
    models = list(dict.fromkeys(r["model"] for r in doc["rows"]))
    # rows with numbers, less the uncalibrated one: the methods that were applied
    expected = {m: sum(r["model"] == m for r in doc["rows"]) - 1 for m in models}
    assert said == expected
    assert sorted(expected.values()) == [3, 3, 5]  # naive Bayes and the forest: no logits
    for x in doc["not_applicable"]:
        assert x["method"] in last
    files = [f for f in demo["out"].rglob("*") if f.is_file() and f.name != ".calipers-report"]
    assert "needs logits" in last and f"wrote {len(files)} files" in last


def test_demo_progress_counts_every_step(demo: dict[str, Any]) -> None:
    lines = demo["stderr"].splitlines()
    doc = demo["doc"]
    na = {(x["model"], x["method"]) for x in doc["not_applicable"]}
    for model in dict.fromkeys(r["model"] for r in doc["rows"]):
        steps = [
            int(m.group(1)) for line in lines if (m := re.search(rf"\[(\d+)/6\] {model} / ", line))
        ]
        assert sorted(set(steps)) == list(range(1, N_METHODS + 2))  # no jump from 1 to 4
        for model_, method in na:
            if model_ != model:
                continue
            said = [line for line in lines if f"] {model} / {method}:" in line]
            assert said and all("not applicable" in line for line in said)
            fit = [line for line in lines if f"{model}: {method} not applicable" in line]
            assert len(fit) == 1 and "needs logits" in fit[0]


# ----------------------------------------------------------------------------- help


def test_help_says_what_plain_demo_does(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["demo", "--help"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "the table of the embedded default" not in out
        i = out.index("  calipers demo  ")  # the example of plain `calipers demo`
        plain = out[i : out.index("  calipers demo --out")]
        assert "writes the report into calipers-demo/" in " ".join(plain.split())
    text = " ".join(out.split())  # calipers demo --help's description
    assert "calipers-demo/ by default: plain 'calipers demo' writes them all there" in text
    assert "--table-only prints the table and writes only table.md and table.json" in text


# ----------------------------------------------------------------------------- calipers report


def _overconfident(n: int, seed: int, k: int = 3, scale: float = 3.0) -> tuple[Any, Any]:
    """Logits ``scale * z`` of a model whose labels come from softmax(z)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > p.cumsum(1)).sum(1).clip(0, k - 1)
    return scale * z, y


def test_report_out_prints_the_summary_not_every_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    z, y = _overconfident(1200, 1)
    f = tmp_path / "over.npz"
    np.savez(f, logits=z, labels=y)
    out = tmp_path / "rep"
    argv = ["report", str(f), "--recalibrate", "ts,hb", "--null-resamples", "30"]
    assert main([*argv, "--out", str(out)]) == 0
    cap = capsys.readouterr()
    doc = json.loads((out / "report.json").read_text())
    lines = cap.out.splitlines()
    # a line per model, the table, a line that counts what was left out; nothing else
    n_rows = len(doc["rows"])
    assert len(lines) <= 1 + 2 + 1 + (n_rows + 2) + 2
    assert sum(line.startswith("- **over**: ") for line in lines) == 1
    assert sum(line.startswith("| over | ") for line in lines) == n_rows == 3
    n_verdicts = sum(len(r["verdicts"]) for r in doc["rows"])
    assert f"{n_verdicts} per-metric verdicts" in lines[-1]
    assert "**Verdicts**" not in cap.out and "Appendix" not in cap.out
    assert "Over bandwidths" not in cap.out  # the kernel verdicts' prose
    md = (out / "report.md").read_text()
    assert "**Verdicts**" in md and "Over bandwidths" in md
    assert f"{out / 'report.html'}" in cap.err
    # an explicit --format still prints that rendering whole
    assert main([*argv, "--out", str(out), "--format", "markdown"]) == 0
    full = capsys.readouterr().out
    assert "**Verdicts**" in full and "Over bandwidths" in full and len(full.splitlines()) > 20


class _Sharpen(Recalibrator):
    """Test double: divides the logits by 1/3 (sharpens), whatever the calibration split."""

    input = "logits"

    def __init__(self) -> None:
        pass

    def _fit(self, S: Any, y: Any, w: Any) -> None:
        self.t_ = 1.0 / 3.0

    def _transform(self, S: Any) -> Any:
        e = np.exp((S - S.max(1, keepdims=True)) / self.t_)
        return e / e.sum(1, keepdims=True)


def _paired_interval(d: np.ndarray) -> tuple[float, float]:
    from scipy import stats

    lo, hi = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    return float(lo), float(hi)


def test_summary_against_independent_paired_intervals() -> None:
    """The best method by NLL and the methods that made a proper score worse beyond the
    noise, from per-row NLL and Brier terms computed here and SciPy's t-interval."""
    z, y = _overconfident(2000, 2, k=4)
    cal, test = slice(0, 1000), slice(1000, 2000)
    ts = cp.TemperatureScaling()
    rep = cp.report(
        {"m": (z[test], y[test])},
        logits=True,
        calibration={"m": (z[cal], y[cal])},
        recalibrators=[ts, _Sharpen()],
        null_resamples=40,
    )

    def softmax(a: np.ndarray) -> np.ndarray:
        e = np.exp(a - a.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    yt = y[test]
    onehot = np.eye(4)[yt]
    probs = {
        "uncalibrated": softmax(z[test]),
        "TemperatureScaling": cp.TemperatureScaling()
        .fit(z[cal], y[cal], logits=True)
        .predict_proba(z[test], logits=True),
        "_Sharpen": softmax(3 * z[test]),
    }
    nll = {m: -np.log(p[np.arange(yt.size), yt]) for m, p in probs.items()}
    brier = {m: ((p - onehot) ** 2).sum(1) for m, p in probs.items()}
    best = min(probs, key=lambda m: nll[m].mean())
    assert best == "TemperatureScaling"  # an over-confident model: T > 1 helps
    worse = {}
    for m in ("TemperatureScaling", "_Sharpen"):
        keys = [
            label
            for label, terms in (("NLL", nll), ("Brier", brier))
            if _paired_interval(terms[m] - terms["uncalibrated"])[0] > 0
        ]
        if keys:
            worse[m] = keys
    assert worse == {"_Sharpen": ["NLL", "Brier"]}
    ((model, text),) = rep._summary()
    assert model == "m"
    before, after = nll["uncalibrated"].mean(), nll[best].mean()
    assert text.startswith(f"Best by NLL: TemperatureScaling (NLL {before:.4f} -> {after:.4f}")
    assert text.endswith("proper score worse beyond the noise: _Sharpen (NLL, Brier).")
    md = rep.to_markdown()
    assert md.splitlines()[2] == f"- **m**: {text}"
    assert md.index("- **m**: ") < md.index("| model | method |")
    page = rep._repr_html_()
    assert page.index("calipers-summary") < page.index("<table") < page.index("<details")
    # the summary's heading keeps the case of NLL and ECE
    assert "<p>Per model: the lowest-NLL method, its ECE&#x27;s verdict and " in rep.to_html()


# ----------------------------------------------------------------------------- the --chunk-rows hint


def test_large_in_memory_input_gets_one_chunk_rows_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import calipers.cli.report as cli_report

    files = []
    for i, n in enumerate((600, 500)):
        z, y = _overconfident(n, 10 + i)
        f = tmp_path / f"m{i}.npz"
        np.savez(f, logits=z, labels=y)
        files.append(str(f))
    argv = ["report", *files, "--null-resamples", "0"]
    assert main(argv) == 0
    assert "--chunk-rows" not in capsys.readouterr().err  # 1 800 scores: far below
    assert cli_report.LARGE_INPUT_SCORES == 10**7
    monkeypatch.setattr(cli_report, "LARGE_INPUT_SCORES", 1500)  # 600 x 3 only
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    hints = [line for line in err if "--chunk-rows" in line]
    assert len(hints) == 1
    assert "m0 holds 600 rows x 3 classes" in hints[0] and "1,500 scores" in hints[0]
    monkeypatch.setattr(cli_report, "LARGE_INPUT_SCORES", 1000)  # both files
    assert main(argv) == 0
    hints = [line for line in capsys.readouterr().err.splitlines() if "--chunk-rows" in line]
    assert len(hints) == 1 and "(and 1 more file)" in hints[0]


# ----------------------------------------------------------------------------- streamed HTML


def _markdown_table(md: str) -> list[list[str]]:
    lines = md.splitlines()
    i = next(j for j, x in enumerate(lines) if x.startswith("| model | n |"))
    rows = []
    for x in lines[i:]:
        if not x.startswith("|"):
            break
        rows.append([c.strip() for c in x.strip("|").split("|")])
    return [rows[0], *rows[2:]]  # header and body, no rule


def test_streamed_report_has_html_with_a_reliability_diagram(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(5)
    z, y = _overconfident(2100, 6, k=4, scale=2.0)
    np.savez(tmp_path / "multi.npz", logits=z, labels=y)
    p = rng.uniform(0.02, 0.98, 1900)
    yb = (rng.uniform(size=1900) < p**1.5).astype(np.int64)
    np.savez(tmp_path / "binary.npz", probs=p, labels=yb)
    files = [str(tmp_path / "multi.npz"), str(tmp_path / "binary.npz")]
    out = tmp_path / "rep"
    assert main(["report", *files, "--chunk-rows", "700", "--out", str(out)]) == 0
    capsys.readouterr()
    page = (out / "report.html").read_text()
    tree = Tree(page)
    imgs = tree.root.find_all("img")
    assert len(imgs) == 2
    for img, name in zip(imgs, ("multi", "binary"), strict=True):
        png = base64.b64decode(img.attrs["src"].removeprefix("data:image/png;base64,"))
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert png == (out / "figures" / f"{name}__reliability.png").read_bytes()
        assert img.attrs["alt"].startswith(f"{name}: reliability diagram")
    # the HTML table holds the Markdown table's values, cell for cell
    table = tree.root.find_all("table", "calipers-report")[0]
    html_rows = [
        [c.text().strip() for c in tr.iter() if c.tag in ("th", "td")]
        for tr in table.find_all("tr")
    ]
    assert html_rows == _markdown_table((out / "report.md").read_text())
    assert len(html_rows) == 3
    # --format html prints the same page
    assert main(["report", *files, "--chunk-rows", "700", "--format", "html"]) == 0
    assert capsys.readouterr().out == page


def test_streamed_reliability_diagram_draws_the_bins_of_the_totals(tmp_path: Path) -> None:
    """The bars are the per-bin observed frequencies, computed here by hand in memory."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from calipers.cli.report import _streamed_report
    from calipers.cli.streaming import reliability_figure

    rng = np.random.default_rng(7)
    p = rng.uniform(0.02, 0.98, 2500)
    y = (rng.uniform(size=2500) < p**2).astype(np.int64)
    f = tmp_path / "b.npz"
    np.savez(f, probs=p, labels=y)
    from calipers.cli.program import build_parser

    args = build_parser().parse_args(["report", str(f), "--chunk-rows", "600"])
    doc = _streamed_report(args, 600)
    bins = doc["reliability"]["b"]
    fig = reliability_figure(bins, "b", doc["rows"][0]["ece"])
    try:
        bars = fig.axes[0].containers[0]
        heights = np.array([r.get_height() for r in bars])
        lefts = np.array([r.get_x() for r in bars])
        counts = np.array([r.get_height() for r in fig.axes[1].containers[0]])
    finally:
        plt.close(fig)
    # 15 equal-width bins (lo, hi]: bin b holds b/15 < p <= (b + 1)/15
    idx = np.clip(np.ceil(p * 15).astype(int) - 1, 0, 14)
    full = [b for b in range(15) if np.any(idx == b)]
    np.testing.assert_allclose(lefts, [b / 15 for b in full], atol=1e-12)
    np.testing.assert_allclose(heights, [y[idx == b].mean() for b in full], rtol=1e-12)
    np.testing.assert_array_equal(counts, [np.sum(idx == b) for b in full])


def test_regression_report_summary_has_no_ece_words() -> None:
    """A regression report has no ECE: its summary names the lowest-NLL method (the NLL of
    N(mean, variance) computed here by hand for the uncalibrated row) and nothing about an
    ECE verdict."""
    from calipers.recalibration import VarianceScaling
    from calipers.reports._regression_report import regression_report

    rng = np.random.default_rng(3)
    mu = rng.normal(size=1600)
    y = mu + 2.0 * rng.normal(size=1600)  # predicted variance 1, true 4: too narrow
    var = np.ones(1600)
    test = {"mean": mu[:800], "variance": var[:800], "targets": y[:800]}
    cal = {"mean": mu[800:], "variance": var[800:], "targets": y[800:]}
    rep = regression_report(
        {"net": test}, calibration={"net": cal}, recalibrators=[VarianceScaling()]
    )
    nll0 = float(np.mean(0.5 * np.log(2 * np.pi) + 0.5 * (y[:800] - mu[:800]) ** 2))
    rows = json.loads(rep.to_json())["rows"]
    assert _num(rows[0]["metrics"]["nll"]) == pytest.approx(nll0, rel=1e-12)
    assert _best_by_nll(rows) == "VarianceScaling"
    ((model, text),) = rep._summary()
    nll1 = _num(rows[1]["metrics"]["nll"])
    assert text.startswith(f"Best by NLL: VarianceScaling (NLL {nll0:.4f} -> {nll1:.4f})")
    summary = rep.to_summary()
    assert "ECE" not in summary.split("| model |")[0]


def test_demo_page_shows_a_figure_in_the_first_screen_in_chromium(
    demo: dict[str, Any], tmp_path: Path
) -> None:
    """Rendered by headless Chromium 1200 px wide, the demo's first figure starts within
    the first 1500 px (it started at 4071 px when the verdicts came before the figures)."""
    import subprocess

    from test_report_html import _browser

    browser = _browser()
    page = (demo["out"] / "report.html").read_text()
    probe = tmp_path / "probe.html"
    script = (
        "<script>document.body.setAttribute('data-top', Math.round("
        "document.querySelector('img').getBoundingClientRect().top + window.scrollY));"
        "</script></body>"
    )
    probe.write_text(page.replace("</body>", script))
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--user-data-dir=" + str(tmp_path / "profile"),
        "--window-size=1200,1000",
    ]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    top = int(re.search(r'data-top="(\d+)"', dom.stdout).group(1))  # type: ignore[union-attr]
    assert 0 < top <= 1500, top
