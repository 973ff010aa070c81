"""The examples of the documentation pages run and print what the pages say.

Every ```python block with ``>>>`` prompts in ``docs/getting-started.md``,
``docs/which-number.md``, ``docs/tour.md`` (the README's longer tour) and
``docs/guide/*.md`` is run through :mod:`doctest`, as
``tests/test_cli.py`` runs README.md's examples (ELLIPSIS and NORMALIZE_WHITESPACE),
one test per page. The blocks of a page share one namespace, in page order, and run
in an empty temporary folder (the pages write files such as ``preds.npz`` into the
current folder); text outside them (prose, ```text blocks) is blanked, so a failure
reports the line of the page. Blocks that draw a figure are skipped only when
matplotlib is not installed.
"""

from __future__ import annotations

import doctest
import importlib.util
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: the pages whose examples are tested here (README.md is run by tests/test_cli.py)
PAGES = sorted(
    [
        DOCS / "getting-started.md",
        DOCS / "which-number.md",
        DOCS / "tour.md",
        *(DOCS / "guide").glob("*.md"),
    ]
)

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

#: a block that draws (or saves) a figure needs matplotlib (also ``calipers diagram``)
NEEDS_MATPLOTLIB = re.compile(r'matplotlib|_diagram\(|_grid\(|_chart\(|figures=True|\["diagram"')

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def python_blocks(text: str) -> list[tuple[int, int]]:
    """(first, last) line indices (0-based, exclusive end) of the ```python blocks' bodies."""
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            blocks.append((i + 1, j))
            i = j
        i += 1
    return blocks


def doctest_source(text: str, *, skip_matplotlib: bool) -> tuple[str, int]:
    """The page with everything but its runnable ```python blocks blanked.

    Lines keep their numbers, so doctest's line numbers are the page's. Returns the
    text and the number of blocks skipped for want of matplotlib.
    """
    lines = text.split("\n")
    keep = [""] * len(lines)
    skipped = 0
    for first, last in python_blocks(text):
        body = lines[first:last]
        if not any(line.lstrip().startswith(">>>") for line in body):
            continue
        if skip_matplotlib and NEEDS_MATPLOTLIB.search("\n".join(body)):
            skipped += 1
            continue
        keep[first:last] = body
    return "\n".join(keep), skipped


def test_the_pages_are_found() -> None:
    names = {str(p.relative_to(DOCS)) for p in PAGES}
    assert {"getting-started.md", "which-number.md", "tour.md", "guide/index.md"} <= names
    assert len(PAGES) >= 10


def test_the_guide_index_lists_every_guide_page() -> None:
    index = (DOCS / "guide" / "index.md").read_text(encoding="utf-8")
    toctree = index[index.index("```{toctree}") :].split("```", 2)[1]
    listed = {line.strip() for line in toctree.splitlines()[1:] if line.strip()}
    listed = {name for name in listed if not name.startswith(":")}
    pages = {p.stem for p in (DOCS / "guide").glob("*.md") if p.stem != "index"}
    assert listed == pages


def test_blanking_keeps_line_numbers() -> None:
    text = "prose\n```python\n>>> 1 + 1\n2\n\n```\n```text\n>>> not run\n```\n"
    source, skipped = doctest_source(text, skip_matplotlib=False)
    assert source.split("\n") == ["", "", ">>> 1 + 1", "2", "", "", "", "", "", ""]
    assert skipped == 0
    mpl = "```python\n>>> import matplotlib\n```\n"
    assert doctest_source(mpl, skip_matplotlib=True) == ("\n\n\n", 1)
    cli = '```python\n>>> main(["diagram", "smooth", "p.npz"])\n```\n'
    assert doctest_source(cli, skip_matplotlib=True)[1] == 1


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, skipped = doctest_source(
        page.read_text(encoding="utf-8"), skip_matplotlib=not HAVE_MATPLOTLIB
    )
    monkeypatch.chdir(tmp_path)
    if HAVE_MATPLOTLIB:
        import matplotlib

        matplotlib.use("Agg")
    test = doctest.DocTestParser().get_doctest(
        source, globs={"__name__": "__docs__"}, name=page.name, filename=str(page), lineno=0
    )
    if not test.examples:
        if skipped:
            pytest.skip(f"{page.name}: every example needs matplotlib ({skipped} blocks)")
        assert page == DOCS / "guide" / "index.md", f"{page.name} has no >>> examples"
        return
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS, verbose=False)
    try:
        result = runner.run(test, out=report.write)
    finally:
        test.globs.clear()
        if HAVE_MATPLOTLIB:
            import matplotlib.pyplot as plt

            plt.close("all")
    assert result.attempted > 0
    assert result.failed == 0, report.getvalue()


# --------------------------------------------------------------------------- pages run otherwise


def _section(text: str, heading: str) -> str:
    """The text of a page's ``## heading`` section, up to the next ``## ``."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def _fenced(text: str, kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", text, re.S)


def test_the_extras_table_lists_every_extra() -> None:
    """docs/getting-started.md's table of extras has one row per extra of pyproject.toml."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([\w-]+)` \|", page, re.M))
    assert rows == set(extras), (
        f"extras missing from the table: {sorted(set(extras) - rows)}; "
        f"rows for no extra: {sorted(rows - set(extras))}"
    )


def test_no_page_installs_calipers_from_an_index() -> None:
    """The pages and the gallery install calipers from a checkout: ``pip install ".[extra]"``, never
    ``pip install calipers[extra]`` (which looks for calipers on PyPI and fails)."""
    pages = [*sorted(DOCS.rglob("*.md")), *sorted((ROOT / "examples").glob("*.py"))]
    pages += [ROOT / "README.md"]
    bad = [
        f"{path.relative_to(ROOT)}: {m.group(0)}"
        for path in pages
        if "_build" not in path.parts and path.is_file()
        for m in re.finditer(r"pip install ['\"]?calipers\[[^\]]*\]['\"]?", path.read_text("utf-8"))
    ]
    assert not bad, "\n".join(bad)


def test_pytorch_page_metric_objects_example_prints_what_the_page_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/pytorch.md, "Metric objects for training loops": the script and its printout."""
    pytest.importorskip("torch", reason="the example needs PyTorch (pip install '.[torch]')")
    pytest.importorskip(
        "torchmetrics", reason="the example needs torchmetrics (pip install '.[torchmetrics]')"
    )
    section = _section(
        (DOCS / "pytorch.md").read_text(encoding="utf-8"), "Metric objects for training loops"
    )
    (script,) = _fenced(section, "python")
    (shown,) = _fenced(section, "text")
    exec(compile(script, "docs/pytorch.md", "exec"), {"__name__": "__docs__"})
    assert capsys.readouterr().out == shown
