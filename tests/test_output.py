"""Outputs appear complete or not at all; nothing of an earlier run is left beside them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from calipers.io.output import (
    MARKER,
    OutputError,
    remove_stale_temporaries,
    write_atomic,
    write_folder_atomic,
)


def _hidden(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith(".") and p.name != MARKER)


def test_file_is_refused_without_force_and_replaced_with_it(tmp_path: Path) -> None:
    f = tmp_path / "table.md"
    f.write_text("old")
    with pytest.raises(OutputError, match="exists; pass --force"):
        write_atomic(f, "new", force=False)
    assert f.read_text() == "old"
    write_atomic(f, "new", force=True)
    assert f.read_text() == "new" and _hidden(tmp_path) == []


def test_report_folder_is_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    write_folder_atomic(out, {"report.md": "1", "figures/a.png": b"a", "figures/b.png": b"b"})
    write_folder_atomic(out, {"report.md": "2", "figures/a.png": b"A"})
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["a.png"]  # b.png is gone
    assert (out / "report.md").read_text() == "2" and (out / MARKER).exists()
    assert _hidden(tmp_path) == []


def test_a_foreign_folder_is_refused_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(OutputError, match="does not hold a calipers report"):
        write_folder_atomic(out, {"report.md": "x"})
    assert (out / "thesis.tex").read_text() == "precious"
    write_folder_atomic(out, {"report.md": "x"}, force=True)
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "report.md"]
    empty = tmp_path / "empty"
    empty.mkdir()
    write_folder_atomic(empty, {"report.md": "x"})  # an empty folder is free to use


def test_interruption_mid_write_keeps_the_previous_report(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    write_folder_atomic(out, {"report.md": "old", "figures/a.png": b"a"})

    class Boom(dict):
        def items(self):  # type: ignore[override]
            yield "report.md", "new"
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_folder_atomic(out, Boom())
    assert (out / "report.md").read_text() == "old" and (out / "figures" / "a.png").exists()
    assert _hidden(tmp_path) == []


def test_stale_temporaries_of_dead_runs_are_removed_live_ones_kept(tmp_path: Path) -> None:
    dead = tmp_path / ".rep.999999999.abc.calipers-tmp"
    dead.mkdir()
    (dead / "report.md").write_text("half")
    live = tmp_path / f".rep.{os.getpid()}.abc.calipers-tmp"
    live.mkdir()
    other = tmp_path / ".notes.999999999.abc.tmp"  # another target's: not ours to touch
    other.write_text("x")
    assert remove_stale_temporaries(tmp_path, "rep") == [dead]
    assert live.exists() and other.exists()
    write_folder_atomic(tmp_path / "rep", {"a.md": "x"})
    assert not dead.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_cleans_up_like_sigint(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import time
        from calipers.io.output import terminate_on_sigterm, write_folder_atomic

        class Slow(dict):
            def items(self):
                yield "report.md", "x"
                print("writing", flush=True)
                for i in range(600):  # a minute of writing, one file every 0.1 s
                    time.sleep(0.1)
                    yield f"part{{i}}.md", "y"

        with terminate_on_sigterm():
            try:
                write_folder_atomic({str(tmp_path / "rep")!r}, Slow())
            except KeyboardInterrupt:
                raise SystemExit(143)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    assert any(p.name.endswith(".calipers-tmp") for p in tmp_path.iterdir())
    proc.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    assert proc.wait(timeout=30) == 143 and time.monotonic() - t0 < 30
    assert list(tmp_path.iterdir()) == []  # no temporaries, no half report


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_interrupts_deferred_delivers_the_signal_after_the_block() -> None:
    """Inside the block a SIGTERM raises nothing; it stops the program just after it."""
    from calipers.io.output import interrupts_deferred, terminate_on_sigterm

    reached = []
    with pytest.raises(KeyboardInterrupt, match=f"signal {int(signal.SIGTERM)}"):
        with terminate_on_sigterm():
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)  # a raising handler would have run by now
                reached.append("end of block")
            reached.append("after the block")  # not reached: delivered on unblocking
    assert reached == ["end of block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
