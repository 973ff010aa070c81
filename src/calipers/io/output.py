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
  ``KeyboardInterrupt`` (:func:`terminate_on_sigterm`). While a file or
  folder is written they wait for a safe point (between two files), so the
  temporary is always removed on the way out. An existing folder and the new
  one are exchanged in one atomic step (``renameat2`` on Linux,
  ``renamex_np`` on macOS), so even SIGKILL at any moment leaves the old
  report or the new one in place. SIGKILL cannot be caught: its temporaries
  stay, and the next write into the same place removes those whose process
  no longer exists (:func:`remove_stale_temporaries`; the process id is part
  of their name).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
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
    (a run killed with SIGKILL leaves them). Returns what was removed. A
    report folder that such a run had moved aside (``.calipers-old``, where
    the swap is two renames) is put back at ``name`` when nothing is there.

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
    target = directory / name
    for entry in sorted(entries, key=lambda e: not e.name.endswith(".calipers-old")):
        m = _TMP_FILE.match(entry.name) or _TMP_DIR.match(entry.name)
        if m is None or m.group("name") != name or _alive(int(m.group("pid"))):
            continue
        if entry.name.endswith(".calipers-old") and not (target.exists() or target.is_symlink()):
            with contextlib.suppress(OSError):
                os.replace(entry, target)  # killed between the two renames: put it back
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
    # Signals wait for the whole write (one file: seconds at most), so no kill
    # point between creating the temporary and removing it can leave it behind.
    with interrupts_deferred():
        try:
            fd, tmp = tempfile.mkstemp(
                prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=directory
            )
        except OSError as exc:
            raise OutputError(f"cannot write '{target}': {exc.strerror or exc}") from None
        try:
            mode = "wb" if isinstance(data, bytes) else "w"
            kw: dict[str, Any] = (
                {} if isinstance(data, bytes) else {"encoding": "utf-8", "newline": ""}
            )
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
    finished temporary folder and the old one are exchanged in one atomic
    step (Linux and macOS), and the old one is then removed, so a kill at any
    moment (SIGKILL included) leaves either the old report or the new one at
    ``directory``. SIGINT and SIGTERM wait during the exchange and during the
    creation and removal of the temporary folder, so an interruption also
    leaves no temporary behind. Where the system has no atomic exchange, the
    old folder is renamed aside first, and a kill between the two renames is
    repaired by the next write (see :func:`remove_stale_temporaries`).

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
    # ``tmp`` holds the new report until the swap and the old one after it (an
    # exchange), so removing ``tmp`` is the one clean-up for every way out.
    # Signals wait for the whole body and are acted on at a checkpoint between
    # two files, or at the end, so no kill point can leave a temporary behind.
    with interrupts_deferred() as checkpoint:
        tmp: Path | None = None
        try:
            try:
                tmp = Path(
                    tempfile.mkdtemp(
                        prefix=f".{target.name}.{os.getpid()}.",
                        suffix=".calipers-tmp",
                        dir=parent,
                    )
                )
            except OSError as exc:
                raise OutputError(f"cannot write '{target}': {exc.strerror or exc}") from None
            os.chmod(tmp, 0o777 & ~_umask())
            for rel, data in files.items():
                checkpoint()
                dest = tmp / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(data, bytes):
                    dest.write_bytes(data)
                else:
                    dest.write_text(data, encoding="utf-8", newline="")
            checkpoint()
            (tmp / MARKER).write_text(
                "This folder was written by calipers; the next report written here replaces it.\n"
            )
            _swap_into_place(tmp, target)
        except BaseException as exc:
            if isinstance(exc, OSError) and not isinstance(exc, OutputError):
                raise OutputError(f"cannot write '{target}': {exc.strerror or exc}") from None
            raise
        finally:
            if tmp is not None:
                _remove(tmp)
    return [str(target / rel) for rel in files]


def _remove(path: Path) -> None:
    """Remove a file or folder tree if it exists (errors ignored)."""
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


#: ``renameat2``'s flag that swaps two paths in one step (Linux 3.15+ and glibc 2.28+).
_RENAME_EXCHANGE = 2
#: ``renamex_np``'s flag that swaps two paths in one step (macOS 10.12+).
_RENAME_SWAP = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the entries ``a`` and ``b`` in one atomic step; False where unsupported.

    Uses ``renameat2(..., RENAME_EXCHANGE)`` on Linux and ``renamex_np(...,
    RENAME_SWAP)`` on macOS through :mod:`ctypes`. Returns False (nothing
    changed) where the call or the file system does not offer the exchange.
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if sys.platform.startswith("linux"):
            fn = libc.renameat2
            args: tuple[Any, ...] = (_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b))
            flag = _RENAME_EXCHANGE
        elif sys.platform == "darwin":
            fn = libc.renamex_np
            args = (os.fsencode(a), os.fsencode(b))
            flag = _RENAME_SWAP
        else:
            return False
    except (OSError, AttributeError, TypeError):
        return False
    if fn(*args, flag) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _swap_into_place(tmp: Path, target: Path) -> None:
    """Put the finished folder ``tmp`` at ``target``; the old ``target`` ends at ``tmp``.

    An existing ``target`` is exchanged with ``tmp`` in one atomic step where
    the operating system offers one (Linux, macOS), so a kill at any moment
    leaves either the old or the new folder at ``target``. Elsewhere the old
    folder is first renamed aside to a hidden ``.calipers-old`` sibling; a
    kill between the two renames leaves ``target`` missing until the next
    write, whose :func:`remove_stale_temporaries` puts the old folder back.
    """
    if not (target.exists() or target.is_symlink()):
        os.replace(tmp, target)
        return
    if _exchange(tmp, target):
        return
    old = Path(str(tmp)[: -len(".calipers-tmp")] + ".calipers-old")
    os.replace(target, old)
    try:
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.replace(old, target)  # put the previous report back
        raise
    os.replace(old, tmp)  # the old folder is removed with ``tmp``


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
def interrupts_deferred() -> Iterator[Callable[[], None]]:
    """Within the block, SIGINT and SIGTERM wait; their handlers run when it ends.

    For calls into compiled code that calls back into Python (matplotlib's drawing
    and font reading): a ``KeyboardInterrupt`` raised inside such a callback cannot
    cross the C++ frames around it, and the process aborts (exit status -6, no
    cleanup). Within the block the two signals are only noted; at its end the
    handlers that were in place run for the first signal noted (so under
    :func:`terminate_on_sigterm` a SIGTERM stops the program just after the block,
    cleanly), or the signal's default action is taken. Outside the main thread the
    block runs unchanged (signal handlers belong to the main thread).

    The block receives a ``checkpoint`` function: called where stopping is safe
    (between two files of a folder), it raises ``KeyboardInterrupt`` if a signal
    is waiting, so the code inside can clean up before the handlers run.

    Examples
    --------
    >>> with interrupts_deferred():
    ...     pass
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    pending: list[int] = []

    def _note(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    def checkpoint() -> None:
        if pending:
            raise KeyboardInterrupt(f"signal {pending[0]}")

    previous = {s: signal.signal(s, _note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield checkpoint
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
