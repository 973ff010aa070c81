"""User-facing text cites papers by authors and year, never by an internal shorthand.

The five papers behind calipers were once called "seed 000" ... "seed 004" in
the project's internal notes, and those notes (conventions, design, peer survey)
are files users do not have. Docstrings, README, docs, CHANGELOG, benchmarks,
CLI help and the report's text must name the papers (e.g. "Chidambaram & Ge
2024", "Popordanoska et al. 2024") and point to the project's own docs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: internal shorthand that must not reach users
FORBIDDEN = re.compile(
    r"seeds?[ _-]?0{2}[0-4]|conventions\.md|DESIGN\.md|peer_libraries|/work/shared",
    re.IGNORECASE,
)


def _user_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    for folder, pattern in (
        ("src", "*.py"),
        ("docs", "*.md"),
        ("docs", "*.rst"),
        ("docs", "*.bib"),
        ("docs", "conf.py"),
        ("examples", "*"),
        ("benchmarks", "*"),
    ):
        files += [p for p in (ROOT / folder).rglob(pattern) if p.is_file()]
    return [
        p
        for p in files
        if p.exists()
        and p.suffix in {".py", ".md", ".rst", ".bib", ".txt", ".html", ".tex", ".toml"}
        and "_build" not in p.parts
        and "auto_examples" not in p.parts
        and "generated" not in p.parts
    ]


def test_the_user_files_are_found() -> None:
    names = {p.name for p in _user_files()}
    assert {"README.md", "binned.py", "program.py", "how-calipers-computes.md"} <= names


@pytest.mark.parametrize("path", _user_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_internal_shorthand_in_user_text(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    hits = [
        f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
        for m in FORBIDDEN.finditer(text)
    ]
    assert not hits, f"{path.relative_to(ROOT)} cites internal shorthand: {hits[:5]}"


def test_forbidden_pattern_catches_the_shorthand() -> None:
    # the guard itself must be able to fail
    for bad in ("seed 000", "Seed 003", "seed004", "conventions.md §2", "see DESIGN.md"):
        assert FORBIDDEN.search(bad), bad
    for good in ("Chidambaram & Ge 2024", "Popordanoska et al. (2024), eq. 9", "seed=0"):
        assert not FORBIDDEN.search(good), good


def test_cli_help_cites_no_shorthand() -> None:
    from calipers import cli

    parser_help = []
    for args in ([], ["table"], ["demo"], ["report"], ["diagram"]):
        out = subprocess.run(
            [sys.executable, "-m", "calipers", *args, "--help"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        parser_help.append(out.stdout + out.stderr)
    text = "\n".join(parser_help)
    assert "usage" in text.lower()
    assert cli is not None
    assert not FORBIDDEN.search(text), FORBIDDEN.findall(text)
