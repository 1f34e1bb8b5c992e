"""Writing result files: whole or not at all, and never at the cost of what the path names.

A results path names a regular file (or nothing yet): the text goes to a temporary file beside it,
which is renamed over it, so a reader sees the old file or the new one, never half of one. A
symlink is followed to the file it points to and the same rule applies there (a rename over the
link itself would replace the link). A FIFO or a character device (a pipe to another program,
/dev/null, /dev/stdout), and a name of an open file (/dev/stdout redirected to a file, /dev/fd/N,
/proc/...) is written through: opened for writing (appending: after what the command printed
there), never renamed over, so it stays what it is.
Anything else (a directory, a block device, a socket) is refused.

Files are created with the permissions any program's open() gives them (0666 minus the umask:
0644 under the usual umask), the same as traces.
"""
from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Callable

from unohil.harness.errors import OutputError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode open() gives a new file: what results files and traces are created with."""
    return 0o666 & ~_umask()


def resolve(path: str | os.PathLike) -> Path:
    """The path a results file is really written at: a symlink's target (through every link), else the path."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


# names of a process's open files (a shell's redirection): written after what is already there
_HELD = ("/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/")


def _kind(p: Path) -> str:
    """'new', 'file', 'stream' (a FIFO or a character device: written through) or what it is otherwise."""
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        return "new"
    except OSError as exc:
        raise OutputError(f"{p}: {path_problem(p, exc)}") from None
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "stream"
    if stat.S_ISREG(mode):
        # /dev/stdout redirected to a file, /proc/self/fd/N: a file another process holds open, which
        # a rename would take its name from
        return "stream" if os.path.abspath(p).startswith(_HELD) else "file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def path_problem(p: Path, exc: OSError) -> str:
    """Why a path cannot be a file's, in the user's terms: the OS's words name no part of it."""
    if exc.errno == errno.ENOTDIR:
        part = next((a for a in reversed(p.parents) if a.exists() and not a.is_dir()), None)
        return f"{part} is not a directory" if part is not None else "a part of it is not a directory"
    if exc.errno == errno.ENAMETOOLONG:
        longest = max(p.parts, key=lambda x: len(os.fsencode(x)))
        return (f"a name too long for the file system ({len(os.fsencode(longest))} bytes; "
                f"{_name_max(p)} at most)")
    if exc.errno == errno.ELOOP:
        return "a loop of symbolic links"
    return exc.strerror or str(exc)


def _name_max(p: Path) -> int:
    for a in (p, *p.parents):
        try:
            return os.pathconf(a if str(a) else ".", "PC_NAME_MAX")
        except OSError:
            continue
    return 255


# the options that name a file or a directory a command writes
OUTPUT_OPTIONS = ("json", "junit", "trace", "output", "vcd", "perfetto", "log_file")


def refuse_empty(args) -> None:
    """`--json ''` is a mistake (an unset shell variable), not a wish for no output: say so."""
    for dest in OUTPUT_OPTIONS:
        if getattr(args, dest, None) == "":
            option = "--" + dest.replace("_", "-")
            raise OutputError(f"{option} '': an empty file name; give a name, or leave {option} out")


def _named(what: str, p: Path, real: Path) -> str:
    return f"{what} {p}" if real == p else f"{what} {p} (-> {real})"


def check_writable(path: str | os.PathLike, what: str, directory: bool = False) -> Path:
    """Fail before anything runs if an output cannot be written."""
    p = Path(path)
    if directory:
        try:
            p.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise OutputError(f"{what} {p}: is a file, give a directory") from None
        except OSError as exc:
            raise OutputError(f"{what} {p}: cannot create the directory: {path_problem(p, exc)}") from None
        _probe(p, what, p)
        return p
    try:
        kind = _kind(p)             # through any symlink: /dev/stdout is a link to a pipe or a tty
    except OutputError as exc:
        raise OutputError(f"{what} {exc}") from None
    if kind == "stream":
        return p                # a pipe or a device: opened for writing when the results are written
    real = resolve(p)
    if kind == "a directory":
        raise OutputError(f"{_named(what, p, real)}: is a directory, give a file name")
    if kind not in ("new", "file"):
        raise OutputError(f"{_named(what, p, real)}: is {kind}; give a regular file, a FIFO or a character device")
    target_dir = real.parent if str(real.parent) else Path(".")
    if not target_dir.is_dir():
        raise OutputError(f"{_named(what, p, real)}: the directory {target_dir} does not exist")
    _probe(target_dir, what, p)
    return p


def _probe(target_dir: Path, what: str, p: Path) -> None:
    try:
        fd, probe = tempfile.mkstemp(dir=target_dir, prefix=".unohil-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError(f"{what} {p}: cannot write in {target_dir}: {exc.strerror}") from None


def write_results(path: str | os.PathLike, text, what: str = "") -> None:
    """Write text (a str, or the str pieces of one) at path by the rules above; any failure is one
    OutputError naming the path and the OS error."""
    p = Path(path)
    kind = _kind(p)
    real = p if kind == "stream" else resolve(p)
    name = _named(what, p, real) if what else _named("", p, real).lstrip()
    try:
        if kind == "stream":
            _write_through(p, text)         # open() follows the links: /dev/stdout reaches the pipe
        elif kind in ("new", "file"):
            _write_replacing(real, text)
        else:
            raise OutputError(f"{name}: is {kind}; give a regular file, a FIFO or a character device")
    except OSError as exc:
        raise OutputError(f"{name}: {exc.strerror or exc}") from None


def _write_through(p: Path, text: str) -> None:
    # No O_TRUNC, no rename: the node stays what it is. O_NONBLOCK only for the open: a FIFO nobody reads fails at once (ENXIO) instead of hanging the run.
    for stream in (sys.stdout, sys.stderr):         # what was printed there comes first
        stream.flush()
    try:
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO and stat.S_ISFIFO(os.stat(p).st_mode):
            raise OSError(exc.errno, "a FIFO that nothing reads (start its reader first)") from None
        raise
    os.set_blocking(fd, True)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        _put(fh, text)


def _put(fh, text) -> None:
    for piece in [text] if isinstance(text, str) else text:
        fh.write(piece)


def _write_replacing(p: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.name}.", suffix=".part")
    try:
        os.fchmod(fd, file_mode())          # mkstemp makes 0600: results are as readable as any file
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            _put(fh, text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise



def check_outputs(files: dict[str, str | None], directories: dict[str, str | None] | None = None) -> None:
    """All of a command's outputs, before anything runs: each writable, and no two the same place
    (--json and --junit naming one file, or a file that is the trace directory)."""
    named = {what: p for what, p in {**files, **(directories or {})}.items() if p}
    seen: dict[str, str] = {}
    for what, p in named.items():
        real = os.path.realpath(p)
        if real in seen:
            other = seen[real]
            raise OutputError(f"{other} {named[other]} and {what} {p} are the same place; give each output its own")
        seen[real] = what
    for what, p in (directories or {}).items():
        if p:
            check_writable(p, what, directory=True)
    for what, p in files.items():
        if p:
            check_writable(p, what)


def write_outputs(outputs: list[tuple[str, str | None, Callable[[], str]]]) -> list[str]:
    """Write each (option, path, text) whose path is given, each on its own: one that fails does not
    keep the others from being written. Returns one line per failure, naming the file and the OS error."""
    failures = []
    for what, path, text in outputs:
        if not path:
            continue
        try:
            body = text()
        except Exception as exc:        # a report that cannot be made must not take the others with it
            failures.append(f"{what} {path}: cannot be made: {type(exc).__name__}: {exc}")
            continue
        try:
            write_results(path, body, what)
        except OutputError as exc:
            failures.append(str(exc))
        except Exception as exc:        # made as it is written (pieces): the file is left as it was
            failures.append(f"{what} {path}: cannot be made: {type(exc).__name__}: {exc}")
    return failures
