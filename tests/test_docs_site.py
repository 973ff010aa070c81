"""The documentation site: citations, API coverage, and the built HTML in a browser.

* The citation linker of ``docs/_ext/citations.py`` on sample strings, and on
  every docstring of ``src/calipers`` and every page of ``docs/``: each
  "Authors year" citation must resolve to an entry of ``docs/references.bib``
  (a paper cited without an entry fails here, with its name), and each entry
  must be cited somewhere.
* The API reference (``docs/api/*.rst``) lists every name of
  ``calipers.__all__`` and of the ``__all__`` of every public module.
* The built site renders in headless Chromium: the index, an API page and a
  gallery page load with no console error, and their figures are drawn.
  ``CALIPERS_DOCS_HTML`` names a built site (CI builds it first, with ``-W``);
  without it the site is built once here, with the quick gallery
  (``CALIPERS_DOCS_QUICK=1``). Skipped only without Sphinx or Chromium.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import os
import pkgutil
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import calipers

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BIB = DOCS / "references.bib"

#: modules without a leading underscore that are not part of the Python API, and why
NOT_API = {
    "cli": "the command line; documented by `calipers --help` and the README",
    "__main__": "`python -m calipers`, the command line",
}


def _load_citations() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "calipers_docs_citations", DOCS / "_ext" / "citations.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


citations = _load_citations()


def _load_sourcelinks() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "calipers_docs_sourcelinks", DOCS / "_ext" / "sourcelinks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sourcelinks = _load_sourcelinks()


@pytest.fixture(scope="module")
def table() -> Any:
    return citations.CitationTable.from_bib(BIB)


# --------------------------------------------------------------------------- citations


@pytest.mark.parametrize(
    ("text", "cited", "linked", "key"),
    [
        ("as in Guo et al. 2017, eq. 5", "Guo et al. 2017", "Guo et al. 2017", "guo2017"),
        ("Guo et al. (2017) show", "Guo et al. (2017)", "Guo et al. (2017)", "guo2017"),
        ("(Guo et al., 2017)", "Guo et al., 2017", "Guo et al., 2017", "guo2017"),
        (
            "Chidambaram & Ge 2024",
            "Chidambaram & Ge 2024",
            "Chidambaram & Ge 2024",
            "chidambaram2024",
        ),
        (
            "Kirchenbauer, Oaks & Heim (2022) eq. 3",
            "Kirchenbauer, Oaks & Heim (2022)",
            "Kirchenbauer, Oaks & Heim (2022)",
            "kirchenbauer2022",
        ),
        (
            "Kirchenbauer, Oaks and Heim (2022, App. B)",
            "Kirchenbauer, Oaks and Heim (2022",
            "Kirchenbauer, Oaks and Heim",
            "kirchenbauer2022",
        ),
        (
            "Gruber & Buettner's (2022) ETS",
            "Gruber & Buettner's (2022)",
            "Gruber & Buettner's (2022)",
            "gruber2022",
        ),
        (
            "Gruber & Buettner’s (2022)",
            "Gruber & Buettner’s (2022)",
            "Gruber & Buettner’s (2022)",
            "gruber2022",
        ),
        (
            "Popordanoska et al. (2024)",
            "Popordanoska et al. (2024)",
            "Popordanoska et al. (2024)",
            "popordanoska2024",
        ),
        (
            "Popordanoska, Gruber, Tiulpin, Buettner & Blaschko 2024",
            "Popordanoska, Gruber, Tiulpin, Buettner & Blaschko 2024",
            "Popordanoska, Gruber, Tiulpin, Buettner & Blaschko 2024",
            "popordanoska2024",
        ),
        (
            "Błasiok & Nakkiran 2023",
            "Błasiok & Nakkiran 2023",
            "Błasiok & Nakkiran 2023",
            "blasiok2023",
        ),
        (
            "Blasiok & Nakkiran 2023",
            "Blasiok & Nakkiran 2023",
            "Blasiok & Nakkiran 2023",
            "blasiok2023",
        ),
        (
            "Kull, Silva Filho and Flach 2017",
            "Kull, Silva Filho and Flach 2017",
            "Kull, Silva Filho and Flach 2017",
            "kull2017",
        ),
        ("Kull et al. 2019", "Kull et al. 2019", "Kull et al. 2019", "kull2019"),
        (
            "Zhang, Kailkhura & Han (ICML 2020)",
            "Zhang, Kailkhura & Han (ICML 2020)",
            "Zhang, Kailkhura & Han",
            "zhang2020",
        ),
        ("Platt's (1999, §2.2)", "Platt's (1999", "Platt's", "platt1999"),
        (
            "Gruber &\n    Buettner (2022)",
            "Gruber &\n    Buettner (2022)",
            "Gruber &\n    Buettner (2022)",
            "gruber2022",
        ),
        (
            "Kumar, Sarawagi & Jain 2018",
            "Kumar, Sarawagi & Jain 2018",
            "Kumar, Sarawagi & Jain 2018",
            "kumar2018",
        ),
        ("Kumar et al. (2019)", "Kumar et al. (2019)", "Kumar et al. (2019)", "kumar2019"),
    ],
)
def test_citation_forms_resolve(table: Any, text: str, cited: str, linked: str, key: str) -> None:
    (c,) = table.find(text)
    assert (c.text, text[c.start : c.link_end], c.key) == (cited, linked, key)
    assert table.unresolved(text) == []


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("Guo et al. 2018", "Guo et al. 2018"),  # known authors, no entry for the year
        ("Smith et al. (2020) propose", "Smith et al. (2020"),  # unknown authors
        ("Smith & Jones 2021", "Smith & Jones 2021"),
        ("Alpha, Beta and Gamma (2019)", "Alpha, Beta and Gamma (2019"),
        ("the score of Dawid 1982", "Dawid 1982"),  # a single author
    ],
)
def test_uncited_papers_are_reported(table: Any, text: str, bad: str) -> None:
    assert [c.key for c in table.find(text) if c.key] == []
    assert table.unresolved(text) == [bad]


@pytest.mark.parametrize(
    "text",
    [
        "NeurIPS 2019",
        "uncertainty-metrics from October 2020",
        "In 2019 the",
        "Kumar et al.'s code",
        "Python 3.11",
    ],
)
def test_non_citations_are_ignored(table: Any, text: str) -> None:
    assert table.find(text) == [] and table.unresolved(text) == []


def test_fold_keeps_positions() -> None:
    for text in ("Błasiok", "Kängsepp & Schön’s", "Giné", "naïve"):
        assert len(citations.fold(text)) == len(text)
    assert (
        citations.fold("Błasiok, Kängsepp, Schön, Giné, Bröcker")
        == "Blasiok, Kangsepp, Schon, Gine, Brocker"
    )


def test_parse_bib_reads_names_years_and_latex() -> None:
    text = r"""
    @article{a1,
      author = {von Neumann, John and Silva Filho, Telmo and Tiulpin, Aleksei and others},
      title = "A {Title} with {\"}quotes{\"}", year = 1950, journal = {J}}
    @book{b2, editor = {Jane Q. Public and B{\l}asiok, Jaros{\l}aw}, title = {B}, year = {1999}}
    @misc{c3, author = {G{\"o}del, Kurt and Erd\H{o}s, P. and Gin{\'e}, Evarist}, year = {2001}}
    """
    a, b, c = citations.parse_bib(text)
    assert (a.key, a.surnames, a.year) == ("a1", ("von Neumann", "Silva Filho", "Tiulpin"), "1950")
    assert (b.surnames, b.year) == (("Public", "Błasiok"), "1999")
    assert c.surnames[0] == "Gödel" and c.surnames[2] == "Giné"
    with pytest.raises(ValueError, match="author and a year"):
        citations.parse_bib("@misc{x, title = {no author}}")


def test_references_bib_parses_as_pybtex_does() -> None:
    pybtex = pytest.importorskip("pybtex.database")
    ours = {e.key: e for e in citations.parse_bib(BIB.read_text(encoding="utf-8"))}
    theirs = pybtex.parse_file(str(BIB)).entries
    assert set(ours) == set(theirs)
    for key, entry in theirs.items():
        assert ours[key].year == entry.fields["year"]
        assert len(ours[key].surnames) == len(entry.persons["author"]), key
        for ours_name, person in zip(ours[key].surnames, entry.persons["author"], strict=True):
            last = " ".join(person.prelast_names + person.last_names)
            assert ours_name == last.replace("{", "").replace("}", ""), key


def test_bibliography_keys_and_anchors() -> None:
    entries = citations.parse_bib(BIB.read_text(encoding="utf-8"))
    keys = [e.key for e in entries]
    assert len(keys) == len(set(keys)), "duplicate keys in references.bib"
    for key in keys:
        assert re.fullmatch(r"[a-z]+[0-9]{4}[a-z]*", key), (
            f"key {key!r}: surname + year, lower case"
        )
    # the anchors are the ids sphinxcontrib-bibtex gives the entries (bibtex_cite_id = "cite-{key}")
    nodes = pytest.importorskip("docutils.nodes")
    for key in keys:
        assert citations.anchor(key) == nodes.make_id(f"cite-{key}")
    assert 'bibtex_cite_id = "cite-{key}"' in (DOCS / "conf.py").read_text(encoding="utf-8")


def _docstrings(path: Path) -> Iterator[tuple[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "name", "module docstring"), doc


def _cited_texts() -> Iterator[tuple[str, str]]:
    """(where, text) for every docstring of calipers and every page of the site."""
    for path in sorted((ROOT / "src" / "calipers").rglob("*.py")):
        for name, doc in _docstrings(path):
            yield f"{path.relative_to(ROOT)} ({name})", doc
    pages = sorted(DOCS.rglob("*.md")) + sorted((ROOT / "examples").glob("*.py"))
    pages += [ROOT / "CHANGELOG.md"]
    for path in pages:
        if "_build" in path.parts or "auto_examples" in path.parts or not path.is_file():
            continue
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def test_every_citation_has_a_bibliography_entry(table: Any) -> None:
    missing = [
        f"{where}: {' '.join(bad.split())!r}"
        for where, text in _cited_texts()
        for bad in table.unresolved(text)
    ]
    assert not missing, (
        "citations without an entry in docs/references.bib (add the paper there, "
        "authors as 'Surname, Given', or correct the citation's year):\n" + "\n".join(missing)
    )


def test_every_bibliography_entry_is_cited(table: Any) -> None:
    cited = {c.key for _, text in _cited_texts() for c in table.find(text) if c.key}
    uncited = sorted(set(table.entries) - cited)
    assert not uncited, f"entries of docs/references.bib that nothing cites: {uncited}"


def test_the_five_core_papers_are_in_the_bibliography(table: Any) -> None:
    for text in (
        "Chidambaram & Ge 2024",
        "Kirchenbauer, Oaks & Heim 2022",
        "Nixon et al. 2019",
        "Popordanoska et al. 2024",
        "Gruber & Buettner 2022",
    ):
        (c,) = table.find(text)
        assert c.key, text


# --------------------------------------------------------------------------- API reference


#: public modules that import an optional dependency when imported, and those dependencies
OPTIONAL_MODULES = {"calipers.stream.torchmetrics": ("torch", "torchmetrics")}


def _importable(module: str) -> bool:
    """Whether ``module`` can be imported here (its optional dependencies are installed)."""
    return all(
        importlib.util.find_spec(dep) is not None for dep in OPTIONAL_MODULES.get(module, ())
    )


def _static_names(module: str) -> tuple[list[str], set[str]]:
    """``__all__`` and the top-level names a module defines, read from its source.

    For a module whose optional dependencies are missing: it cannot be imported,
    but its source says what it exports and defines.
    """
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    exported: list[str] | None = None
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    defined.add(target.id)
                    if target.id == "__all__" and node.value is not None:
                        exported = list(ast.literal_eval(node.value))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
    assert exported is not None, f"{module} has no literal __all__"
    return exported, defined


def _public_modules() -> list[ModuleType]:
    """The importable public modules (see :func:`_unimportable_modules` for the others)."""
    mods = [calipers]
    for info in pkgutil.iter_modules(calipers.__path__):
        if info.name.startswith("_") or info.name in NOT_API:
            continue
        if not _importable(f"calipers.{info.name}"):
            continue  # checked from its source by the tests below
        mods.append(importlib.import_module(f"calipers.{info.name}"))
    return mods


def _unimportable_modules() -> list[str]:
    """Public modules whose optional dependencies are not installed here."""
    return [
        f"calipers.{info.name}"
        for info in pkgutil.iter_modules(calipers.__path__)
        if not info.name.startswith("_")
        and info.name not in NOT_API
        and not _importable(f"calipers.{info.name}")
    ]


def _api_source() -> tuple[set[str], set[str]]:
    """Names listed by autosummary (fully qualified) and modules by automodule in docs/api."""
    names: set[str] = set()
    modules: set[str] = set()
    for path in sorted((DOCS / "api").glob("*.rst")):
        current = None
        in_summary = False
        for line in path.read_text(encoding="utf-8").splitlines():
            m = re.match(r"\.\. (?:py:)?currentmodule:: (\S+)", line)
            if m:
                current = None if m.group(1) == "None" else m.group(1)
                continue
            m = re.match(r"\.\. automodule:: (\S+)", line)
            if m:
                modules.add(m.group(1))
                continue
            if line.startswith(".. autosummary::"):
                in_summary = True
                continue
            if in_summary:
                if not line.strip() or re.match(r"\s+:", line):
                    continue
                if line.startswith("   "):
                    name = line.strip()
                    names.add(
                        f"{current}.{name}" if current and not name.startswith("calipers") else name
                    )
                    continue
                in_summary = False
    return names, modules


def _resolve(name: str) -> Any:
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _importable_name(name: str) -> bool:
    return _importable(name.rpartition(".")[0])


def test_the_api_reference_lists_every_public_name() -> None:
    names, modules = _api_source()
    documented = {id(_resolve(n)) for n in names if _importable_name(n)}
    missing = []
    for module in _unimportable_modules():
        # without its optional dependencies: every name of its __all__, by its full name
        assert module in modules, f"docs/api/modules.rst: no automodule for {module}"
        exported, _ = _static_names(module)
        missing += [f"{module}.{n}" for n in exported if f"{module}.{n}" not in names]
    for mod in _public_modules():
        if mod is not calipers:
            assert mod.__name__ in modules, (
                f"docs/api/modules.rst: no automodule for {mod.__name__}"
            )
        assert hasattr(mod, "__all__"), f"{mod.__name__} has no __all__"
        for name in mod.__all__:
            obj = getattr(mod, name)
            if isinstance(obj, ModuleType):
                ok = obj.__name__ in modules
            else:
                ok = f"{mod.__name__}.{name}" in names or id(obj) in documented
            if not ok:
                missing.append(f"{mod.__name__}.{name}")
    assert not missing, "public names missing from docs/api/index.rst: " + ", ".join(missing)


def test_the_api_reference_names_exist() -> None:
    names, modules = _api_source()
    assert len(names) > 150
    for name in sorted(names):
        if _importable_name(name):
            _resolve(name)
        else:  # an optional module without its dependencies: the name is defined in its source
            module, _, attr = name.rpartition(".")
            assert attr in _static_names(module)[1], f"{name} is not defined in {module}"
    for name in modules:
        if _importable(name):
            importlib.import_module(name)
        else:
            assert importlib.util.find_spec(name) is not None, name


def test_the_static_reading_agrees_with_the_import() -> None:
    """Where the optional module imports, its source gives the same names as the import."""
    for module in OPTIONAL_MODULES:
        if not _importable(module):
            continue
        mod = importlib.import_module(module)
        exported, defined = _static_names(module)
        assert exported == list(mod.__all__)
        assert set(exported) <= defined
        assert {n for n in defined if not n.startswith("_")} <= set(dir(mod))


def _defines_line(path: Path, line: int, name: str) -> bool:
    text = path.read_text(encoding="utf-8").splitlines()[line - 1]
    return re.match(rf"\s*(async\s+)?(def|class)\s+{re.escape(name)}\b", text) is not None


def _source_targets() -> Iterator[tuple[str, str]]:
    """(module, name) of every public function and class, and of their own methods."""
    for mod in _public_modules():
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or inspect.isfunction(inspect.unwrap(obj))):
                continue
            yield mod.__name__, name
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    member = getattr(member, "__func__", member)
                    if inspect.isfunction(member) and not attr.startswith("_"):
                        if member.__qualname__ == f"{obj.__qualname__}.{attr}":
                            yield mod.__name__, f"{name}.{attr}"


def test_source_links_land_on_the_definition_line() -> None:
    """What docs/_ext/sourcelinks.py gives viewcode: for every public function and
    class (and the methods a public class defines), the module that defines it and a
    first line holding its ``def name``/``class name``, decorators and a ``__module__``
    changed for display notwithstanding."""
    wrong, checked = [], 0
    for modname, fullname in _source_targets():
        obj = sourcelinks.resolve(modname, fullname.split(".")[0])
        if getattr(obj, "__qualname__", fullname.split(".")[0]) != fullname.split(".")[0]:
            continue  # a public alias of an object with another name (its own entry links)
        where = sourcelinks.defining_module(modname, fullname)
        if where is None:
            wrong.append(f"{modname}.{fullname}: no defining module")
            continue
        spec = importlib.util.find_spec(where)
        assert spec is not None and spec.origin is not None
        tags = sourcelinks.definitions(Path(spec.origin).read_text(encoding="utf-8"))
        if fullname not in tags:
            wrong.append(f"{modname}.{fullname}: not defined in {where}")
            continue
        _, first, last = tags[fullname]
        if not _defines_line(Path(spec.origin), first, fullname.split(".")[-1]):
            wrong.append(f"{modname}.{fullname}: {where} line {first}")
        checked += 1
    for module in _unimportable_modules():  # read from the source alone
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None
        tags = sourcelinks.definitions(Path(spec.origin).read_text(encoding="utf-8"))
        for name in _static_names(module)[0]:
            if name in tags and not _defines_line(Path(spec.origin), tags[name][1], name):
                wrong.append(f"{module}.{name}: line {tags[name][1]}")
            checked += 1
    assert checked > 250
    assert not wrong, "source links off their definition:\n" + "\n".join(wrong)


def test_source_link_definitions_skip_decorators_and_keep_the_last_overload() -> None:
    source = (
        "import typing\n"  # 1
        "@typing.overload\n"  # 2
        "def f(x: int) -> int: ...\n"  # 3
        "def f(x):\n"  # 4
        "    return x\n"  # 5
        "@dataclass(\n"  # 6
        "    frozen=True,\n"  # 7
        ")\n"  # 8
        "class C:\n"  # 9
        "    @classmethod\n"  # 10
        "    def make(cls):\n"  # 11
        "        def inner(): pass\n"  # 12
        "if TYPE_CHECKING:\n"  # 13
        "    def g(): pass\n"  # 14
    )
    tags = sourcelinks.definitions(source)
    assert tags == {
        "f": ("def", 4, 5),
        "C": ("class", 9, 12),
        "C.make": ("def", 11, 12),
        "g": ("def", 14, 14),
    }


def test_source_links_follow_the_defining_module_not_dunder_module() -> None:
    import calipers.io

    # calipers.io's public names say "calipers.io" but live in its submodules
    assert calipers.io.read_predictions.__module__ == "calipers.io"
    assert sourcelinks.defining_module("calipers.io", "read_predictions") == "calipers.io.read"
    where = sourcelinks.defining_module("calipers.io", "PredictionFile.check")
    assert where is not None and where != "calipers.io"
    # a decorated function: the decorator's module is not the answer
    assert sourcelinks.defining_module("calipers", "ece") == "calipers.metrics.binned"
    assert sourcelinks.defining_module("calipers", "TemperatureScaling") == (
        "calipers.recalibration.temperature_scaling"
    )


def _gallery_title(script: Path) -> str:
    """The page title sphinx-gallery gives a script: its docstring's first section title."""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")), clean=False) or ""
    lines = doc.strip("\n").splitlines()
    for above, below in zip(lines, lines[1:], strict=False):
        if above.strip() and len(set(below.strip())) == 1 and len(below.strip()) >= len(above):
            if below.strip()[0] in "=-~^*+#":
                return above.strip()
    return ""


def test_every_gallery_page_has_its_own_title() -> None:
    """Each script of examples/ (rendered as a gallery page, run or not) starts with an
    underlined title of its own, not a section heading shared by several scripts."""
    scripts = sorted((ROOT / "examples").glob("*.py"))
    assert len(scripts) >= 14
    titles = {script.name: _gallery_title(script) for script in scripts}
    for name, title in titles.items():
        doc = ast.get_docstring(ast.parse((ROOT / "examples" / name).read_text("utf-8")))
        first, underline = (doc or "\n").splitlines()[:2]
        assert title == first and set(underline) == {"="}, f"{name}: no '=' title first"
        assert title != "What it reproduces", name
    duplicated = {t for t in titles.values() if list(titles.values()).count(t) > 1}
    assert not duplicated, f"gallery pages sharing a title: {duplicated}"


def test_not_api_modules_exist() -> None:
    present = {info.name for info in pkgutil.iter_modules(calipers.__path__)}
    assert set(NOT_API) <= present | {"__main__"}


# --------------------------------------------------------------------------- the built site


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")


def _build(tmp: Path) -> Path:
    """Build the site from a copy of docs/ (the source tree stays clean), quick gallery."""
    pytest.importorskip("sphinx", reason="Sphinx is not installed (pip install '.[docs]')")
    src = tmp / "site"
    ignore = shutil.ignore_patterns(
        "_build", "auto_examples", "generated", "sg_execution_times.rst"
    )
    shutil.copytree(DOCS, src / "docs", ignore=ignore)
    for name in ("src", "examples", "CHANGELOG.md"):
        if (ROOT / name).exists():
            (src / name).symlink_to(ROOT / name)
    out = tmp / "html"
    env = {**os.environ, "CALIPERS_DOCS_QUICK": "1", "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-j", "auto", "-b", "html"]
    res = subprocess.run(
        [*cmd, str(src / "docs"), str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=src,
    )
    assert res.returncode == 0, (
        "the documentation build failed:\n" + (res.stdout + res.stderr)[-6000:]
    )
    return out


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("CALIPERS_DOCS_HTML")
    if given:
        html = Path(given) if Path(given).is_absolute() else ROOT / given
        assert (html / "index.html").is_file(), f"CALIPERS_DOCS_HTML={given}: no index.html there"
        return html
    return _build(tmp_path_factory.mktemp("docs"))


class _Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (no extra packages)."""

    def __init__(self, browser: str, profile: Path):
        cmd_r, self._cmd_w = os.pipe()
        self._ev_r, ev_w = os.pipe()

        def _fds() -> None:  # in the child: the protocol wants fd 3 (commands) and 4 (events)
            a, b = os.dup(cmd_r), os.dup(ev_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        flags += ["--no-first-run", "--disable-extensions", "--remote-debugging-pipe"]
        self.proc = subprocess.Popen(
            [browser, *flags, f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=_fds,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(cmd_r)
        os.close(ev_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=self.session)

    def _recv(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            ready, _, _ = select.select([self._ev_r], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._ev_r, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> Any:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + 60
        while True:
            reply = self._recv(deadline)
            if reply.get("id") == self._id:
                assert "error" not in reply, reply
                return reply.get("result", {})
            self.events.append(reply)

    def open(self, url: str) -> dict[str, Any]:
        """Load ``url``; return its console errors and its images."""
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=self.session)
        deadline = time.monotonic() + 60
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._recv(deadline))
        time.sleep(0.5)  # late script errors
        script = """JSON.stringify({
            title: document.title,
            h1: Array.from(document.querySelectorAll("h1")).map(h => h.textContent),
            images: Array.from(document.images).map(i => ({
                src: i.getAttribute("src"), cls: i.className, complete: i.complete,
                width: i.naturalWidth})),
            citations: Array.from(document.querySelectorAll("a.calipers-citation")).map(a => a.href)
        })"""
        page = json.loads(
            self.call(
                "Runtime.evaluate",
                {"expression": script, "returnByValue": True},
                session=self.session,
            )["result"]["value"]
        )
        page["errors"] = [_error(e) for e in self.events if _error(e)]
        return page

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._cmd_w)
        os.close(self._ev_r)


def _error(event: dict[str, Any]) -> str | None:
    """The console error an event reports, or None.

    A resource that fails to load from the network (http/https: MathJax's CDN on
    an offline machine) is not the site's fault; a missing local file is.
    """
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        return "exception: " + json.dumps(params.get("exceptionDetails", {}))[:500]
    if method == "Runtime.consoleAPICalled" and params.get("type") in {"error", "assert"}:
        return "console.error: " + json.dumps(params.get("args", []))[:500]
    if method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        entry = params["entry"]
        if re.match(r"https?://", entry.get("url", "")):
            return None
        return f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}"
    return None


def _gallery_page(site: Path) -> Path:
    preferred = site / "auto_examples" / "plot_reliability_diagram.html"
    if preferred.is_file():
        return preferred
    pages = sorted((site / "auto_examples").glob("plot_*.html"))
    with_figures = [p for p in pages if "sphx-glr-single-img" in p.read_text(encoding="utf-8")]
    assert with_figures, "no gallery page with a figure"
    return with_figures[0]


def test_site_renders_in_headless_chromium(site: Path, tmp_path: Path) -> None:
    browser = _browser()
    pages = {
        "index": site / "index.html",
        "api": site / "api" / "generated" / "calipers.ece.html",
        "gallery": _gallery_page(site),
    }
    chrome = _Chromium(browser, tmp_path / "profile")
    try:
        seen = {name: chrome.open(path.as_uri()) for name, path in pages.items()}
    finally:
        chrome.close()
    for name, page in seen.items():
        assert not page["errors"], f"{name}: console errors {page['errors']}"
        broken = [i["src"] for i in page["images"] if not (i["complete"] and i["width"] > 0)]
        assert not broken, f"{name}: images not drawn: {broken}"
    assert "calipers" in " ".join(seen["index"]["h1"])
    assert any("calipers.ece" in h for h in seen["api"]["h1"])
    # the docstring's citations link to the bibliography
    assert any(h.endswith("references.html#cite-guo2017") for h in seen["api"]["citations"])
    figures = [i for i in seen["gallery"]["images"] if "sphx-glr" in i["cls"] and i["width"] > 100]
    assert figures, f"gallery: no figure drawn ({seen['gallery']['images']})"


def test_every_citation_link_has_its_entry(site: Path) -> None:
    refs = (site / "references.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="(cite-[^"]+)"', refs))
    assert len(ids) == len(citations.parse_bib(BIB.read_text(encoding="utf-8")))
    linked: set[str] = set()
    for page in site.rglob("*.html"):
        linked.update(
            re.findall(
                r'href="[^"]*references\.html#(cite-[^"]+)"', page.read_text(encoding="utf-8")
            )
        )
    assert linked, "no citation links in the built site"
    assert linked <= ids, f"links to missing entries: {sorted(linked - ids)}"


def test_every_source_link_lands_on_its_definition(site: Path) -> None:
    """In the built site, each "[source]" link of an API page opens its module's page at
    a block whose first line of code is the object's ``def name``/``class name``."""
    import html as html_module

    wrong, links = [], 0
    for page in sorted((site / "api" / "generated").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r'<dt class="sig sig-object py" id="([^"]+)">(.*?)</dt>', text, re.S):
            obj, signature = m.groups()
            link = re.search(
                r'href="([^"]*_modules/[^"#]+)#([^"]+)"><span class="viewcode-link">', signature
            )
            if not link:
                continue
            links += 1
            target, anchor = link.groups()
            source = (page.parent / target).resolve().read_text(encoding="utf-8")
            start = source.find(f'<div class="viewcode-block" id="{anchor}">')
            if start < 0:
                wrong.append(f"{obj}: no block {anchor} in {target}")
                continue
            block = source[start:].split("[docs]</a>", 1)[1]
            lines = [html_module.unescape(re.sub(r"<[^>]+>", "", x)) for x in block.split("\n")]
            first = next(x for x in lines if x.strip())
            name = anchor.rsplit(".", 1)[-1]
            if not re.match(rf"\s*(async\s+)?(def|class)\s+{re.escape(name)}\b", first):
                wrong.append(f"{obj}: {target.rsplit('_modules/', 1)[-1]}: {first.strip()!r}")
    assert links > 250
    assert not wrong, "[source] links off their definition:\n" + "\n".join(wrong)
