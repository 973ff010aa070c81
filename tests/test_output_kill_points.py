"""Replacing a report folder leaves the old report or the new one in place at every kill point.

Each test forks the process once per kill point. The child traces the lines of
:mod:`calipers.io.output` and, at the N-th line it runs, either dies at once
(SIGKILL: nothing is cleaned up) or receives SIGTERM under
:func:`~calipers.io.output.terminate_on_sigterm` (everything must be cleaned up).
N runs from 1 until the child finishes without meeting its kill point, so every
line of the write, the swap and the clean-up is a kill point once.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from calipers.io import output
from calipers.io.output import MARKER, terminate_on_sigterm, write_folder_atomic

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")

OLD = {"report.md": "old", "figures/a.png": b"a", "figures/b.png": b"b"}
NEW = {"report.md": "new", "figures/a.png": b"A", "tables/t.csv": "x,y\n"}
DONE, INTERRUPTED = 0, 143


def _tree(d: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(d)): p.read_bytes()
        for p in sorted(d.rglob("*"))
        if p.is_file() and p.name != MARKER
    }


def _as_bytes(files: dict[str, Any]) -> dict[str, bytes]:
    return {k: v.encode() if isinstance(v, str) else v for k, v in files.items()}


def _run_until_line(out: Path, kill_at: int, how: str, exchange: bool) -> int:
    """Fork; the child writes NEW over ``out`` and is stopped at its ``kill_at``-th line."""
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            if not exchange:  # a system without an atomic exchange: two renames
                output._exchange = lambda a, b: False  # type: ignore[assignment]
            count = 0
            source = output.__file__

            def trace(frame: FrameType, event: str, arg: Any) -> Any:
                nonlocal count
                if frame.f_code.co_filename != source:
                    return None
                if event == "line":
                    count += 1
                    if count == kill_at:
                        sig = signal.SIGKILL if how == "kill" else signal.SIGTERM
                        os.kill(os.getpid(), sig)
                return trace

            with terminate_on_sigterm():
                try:
                    sys.settrace(trace)
                    write_folder_atomic(out, NEW)
                    sys.settrace(None)
                    code = DONE
                except KeyboardInterrupt:
                    sys.settrace(None)
                    code = INTERRUPTED
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
@pytest.mark.parametrize("how", ["kill", "term"])
def test_every_kill_point_leaves_the_old_or_the_new_report(
    tmp_path: Path, how: str, exchange: bool
) -> None:
    old, new = _as_bytes(OLD), _as_bytes(NEW)
    outcomes: set[str] = set()
    for n in range(1, 5000):
        case = tmp_path / f"k{n}"
        case.mkdir()
        out = case / "rep"
        write_folder_atomic(out, OLD)
        status = _run_until_line(out, n, how, exchange)
        expected = {"kill": (-signal.SIGKILL, DONE), "term": (INTERRUPTED, DONE)}[how]
        assert status in expected, f"kill point {n}: child exit status {status}"
        if how == "kill" and not exchange:  # the next run repairs a kill between the renames
            output.remove_stale_temporaries(case, "rep")
        assert out.is_dir(), f"kill point {n} ({how}): no report folder at {out}"
        assert (out / MARKER).exists(), f"kill point {n} ({how}): marker missing"
        got = _tree(out)
        assert got in (old, new), f"kill point {n} ({how}): a mixed folder {sorted(got)}"
        outcomes.add("new" if got == new else "old")
        hidden = sorted(p.name for p in case.iterdir() if p.name.startswith("."))
        if how == "term":
            assert hidden == [], f"kill point {n}: SIGTERM left temporaries {hidden}"
        else:  # SIGKILL cannot clean up: the next write removes what the dead run left
            write_folder_atomic(out, NEW)
            assert _tree(out) == new
            assert sorted(p.name for p in case.iterdir()) == ["rep"]
        if status == DONE:
            break
    else:
        pytest.fail("the write never finished")
    assert n > 10 and outcomes == {"old", "new"}


def test_a_dead_runs_moved_aside_report_is_put_back_when_the_folder_is_missing(
    tmp_path: Path,
) -> None:
    """Where the swap is two renames, a kill between them is repaired by the next write."""
    out = tmp_path / "rep"
    write_folder_atomic(out, OLD)
    aside = tmp_path / ".rep.999999999.abc.calipers-old"
    os.replace(out, aside)
    half = tmp_path / ".rep.999999999.abc.calipers-tmp"
    half.mkdir()
    output.remove_stale_temporaries(tmp_path, "rep")
    assert _tree(out) == _as_bytes(OLD)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]
