"""Output that appears complete or not at all: atomic files and report folders.

The rules (the command line follows them; :meth:`calipers.Report.save` too):

* **A file** is written to a hidden temporary file beside it
  (``.NAME.<pid>.<random>.tmp``), flushed to disk and moved over the target
  with :func:`os.replace`: a reader sees the old file or the new one, never
  half of one. An existing file keeps its permissions.
* **A report folder** is written whole into a hidden temporary sibling
  (``.NAME.<pid>.<random>.calipers-tmp``) and renamed into place when every
  file is there. A folder that holds a previous calipers report (it has the
  marker file ``.calipers-report``) is replaced as a whole, so no figure of
  an earlier run is left beside the new ones. Any other existing, non-empty
  folder (or file) of that name is refused unless ``force=True``
  (``--force``): calipers never deletes what it did not write.
* **Interruption.** SIGINT and SIGTERM both stop a run through
  ``KeyboardInterrupt`` (:func:`terminate_on_sigterm`), so the temporary file
  or folder is removed on the way out. SIGKILL cannot be caught: its
  temporaries stay, and the next write into the same place removes those
  whose process no longer exists (:func:`remove_stale_temporaries`; the
  process id is part of their name).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = [
    "OutputError",
    "OutputExistsError",
    "MARKER",
    "write_atomic",
    "write_folder_atomic",
    "remove_stale_temporaries",
    "terminate_on_sigterm",
    "interrupts_deferred",
]

#: Set when :func:`terminate_on_sigterm` turned a SIGTERM into ``KeyboardInterrupt``
#: (an extension module interrupted while importing may re-raise it as another error).
SIGTERM_RECEIVED = False

#: Marker file that says a folder holds a calipers report (and may be replaced whole).
MARKER = ".calipers-report"

_TMP_FILE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]+\.tmp$")
_TMP_DIR = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]+\.calipers-(?:tmp|old)$")


class OutputError(OSError):
    """An output file or folder cannot be written (the message says why)."""


class OutputExistsError(OutputError):
    """The output exists and is not calipers' to replace without ``force=True``."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def remove_stale_temporaries(directory: str | Path, name: str) -> list[Path]:
    """Remove temporaries of ``name`` left in ``directory`` by processes that are gone.

    Only hidden entries whose name matches calipers' own temporary names for
    ``name`` and carries the id of a process that no longer runs are removed
    (a run killed with SIGKILL leaves them). Returns what was removed.

    Examples
    --------
    >>> import os, tempfile
    >>> from pathlib import Path
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / ".table.md.999999999.x1.tmp").write_text("half")   # a dead run's file
    >>> [p.name for p in remove_stale_temporaries(d, "table.md")]
    ['.table.md.999999999.x1.tmp']
    """
    removed: list[Path] = []
    directory = Path(directory)
    try:
        entries = list(directory.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = _TMP_FILE.match(entry.name) or _TMP_DIR.match(entry.name)
        if m is None or m.group("name") != name or _alive(int(m.group("pid"))):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry)
    return removed


def write_atomic(path: str | Path, data: str | bytes, *, force: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, :func:`os.replace`).

    Parameters
    ----------
    path : str or Path
    data : str or bytes
        Text is written as UTF-8 without newline translation.
    force : bool, default True
        False refuses to replace an existing file (:class:`OutputError`).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> p = Path(tempfile.mkdtemp()) / "t.md"
    >>> write_atomic(p, "| a |")
    >>> p.read_text()
    '| a |'
    >>> write_atomic(p, "other", force=False)
    Traceback (most recent call last):
    ...
    calipers.io.output.OutputExistsError: '...t.md' exists; pass --force (force=True) to replace it
    """
    target = Path(path)
    if not force and (target.exists() or target.is_symlink()):
        raise OutputExistsError(f"'{target}' exists; pass --force (force=True) to replace it")
    directory = target.parent
    remove_stale_temporaries(directory, target.name)
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=directory
        )
    except OSError as exc:
        raise OutputError(f"cannot write '{target}': {exc.strerror or exc}") from None
    try:
        mode = "wb" if isinstance(data, bytes) else "w"
        kw: dict[str, Any] = {} if isinstance(data, bytes) else {"encoding": "utf-8", "newline": ""}
        with os.fdopen(fd, mode, **kw) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        perm = target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_umask()
        os.chmod(tmp, perm)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise OutputError(f"cannot write '{target}': {exc.strerror or exc}") from None
        raise


def write_folder_atomic(
    directory: str | Path, files: Mapping[str, str | bytes], *, force: bool = False
) -> list[str]:
    """Write ``files`` (relative path -> content) as the folder ``directory``, whole.

    The files go into a hidden temporary sibling, which is renamed to
    ``directory`` when all are written. An existing ``directory`` is replaced
    as a whole when it holds a previous calipers report (the :data:`MARKER`
    file) or is empty, or when ``force=True``; otherwise it is refused. The
    old folder is moved aside first and removed after the new one is in
    place, so an interruption at any moment leaves either the old report or
    the new one at ``directory``.

    Returns
    -------
    list of str
        The paths written (under ``directory``).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> out = Path(tempfile.mkdtemp()) / "rep"
    >>> _ = write_folder_atomic(out, {"a.md": "one", "figures/x.png": b"1"})
    >>> _ = write_folder_atomic(out, {"a.md": "two"})      # a calipers folder: replaced whole
    >>> sorted(p.name for p in out.iterdir())
    ['.calipers-report', 'a.md']
    """
    target = Path(directory)
    parent = target.parent
    if target.exists() or target.is_symlink():
        if not target.is_dir() or target.is_symlink():
            if not force:
                raise OutputExistsError(
                    f"'{target}' exists and is not a folder; pass --force (force=True) to "
                    "replace it"
                )
        elif not force and not (target / MARKER).exists() and any(target.iterdir()):
            raise OutputExistsError(
                f"'{target}' exists and does not hold a calipers report; choose another "
                "folder or pass --force (force=True) to replace it as a whole"
            )
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(parent, target.name)
    try:
        tmp = Path(
            tempfile.mkdtemp(
                prefix=f".{target.name}.{os.getpid()}.", suffix=".calipers-tmp", dir=parent
            )
        )
    except OSError as exc:
        raise OutputError(f"cannot write '{target}': {exc.strerror or exc}") from None
    old: Path | None = None
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        for rel, data in files.items():
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, bytes):
                dest.write_bytes(data)
            else:
                dest.write_text(data, encoding="utf-8", newline="")
        (tmp / MARKER).write_text(
            "This folder was written by calipers; the next report written here replaces it.\n"
        )
        if target.exists() or target.is_symlink():
            old = Path(str(tmp)[: -len(".calipers-tmp")] + ".calipers-old")
            os.replace(target, old)
        os.replace(tmp, target)
    except BaseException as exc:
        if old is not None and not target.exists():
            with contextlib.suppress(OSError):
                os.replace(old, target)  # put the previous report back
            old = None
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise OutputError(f"cannot write '{target}': {exc.strerror or exc}") from None
        raise
    if old is not None:
        with contextlib.suppress(OSError):
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            else:
                old.unlink()
    return [str(target / rel) for rel in files]


@contextlib.contextmanager
def terminate_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` as SIGINT does.

    So ``kill PID`` (and a job scheduler's stop) cleans up temporaries like
    Ctrl-C. Only in the main thread; the previous handler is restored on exit.

    Examples
    --------
    >>> with terminate_on_sigterm():
    ...     pass
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum: int, frame: FrameType | None) -> None:
        global SIGTERM_RECEIVED
        SIGTERM_RECEIVED = True
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM wait; their handlers run when it ends.

    For calls into compiled code that calls back into Python (matplotlib's drawing
    and font reading): a ``KeyboardInterrupt`` raised inside such a callback cannot
    cross the C++ frames around it, and the process aborts (exit status -6, no
    cleanup). Within the block the two signals are only noted; at its end the
    handlers that were in place run for the first signal noted (so under
    :func:`terminate_on_sigterm` a SIGTERM stops the program just after the block,
    cleanly), or the signal's default action is taken. Outside the main thread the
    block runs unchanged (signal handlers belong to the main thread).

    Examples
    --------
    >>> with interrupts_deferred():
    ...     pass
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def _note(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    previous = {s: signal.signal(s, _note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if pending:
            signum = pending[0]
            handler = previous[signal.Signals(signum)]
            if callable(handler):
                handler(signum, None)  # e.g. raises KeyboardInterrupt
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)
