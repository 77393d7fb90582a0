"""Writing output files: the folder must exist (nothing is created outside what was asked), and a
file appears whole or not at all (written beside its target, then renamed over it).

``check_output(path)`` before the work (a missing folder is one error naming it), then
``write_text`` / ``write_bytes``; ``check_folder`` / ``make_folder`` for one asked-for folder (a
plots directory), never its parents.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Union

from fabricbench.errors import FabricbenchError, UsageError

PathLike = Union[str, Path]


class OutputError(FabricbenchError):
    """An output file could not be written (permissions, a full disk); nothing partial is left."""


def check_output(path: PathLike) -> Path:
    """The output path, once its folder is known to exist; UsageError (exit 2) naming the folder otherwise."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"cannot write {p}: it is a folder; give a file name")
    _parent_exists(p, f"cannot write {p}")
    return p


def check_folder(path: PathLike) -> Path:
    """A folder that exists or can be made in an existing one; UsageError naming the missing parent."""
    p = Path(path)
    if p.is_dir():
        return p
    if p.exists():
        raise UsageError(f"cannot use {p} as a folder: a file of that name exists")
    _parent_exists(p, f"cannot create the folder {p}")
    return p


def _parent_exists(p: Path, doing: str) -> None:
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise UsageError(f"{doing}: the folder {folder} {what} (create it first)")


def make_folder(path: PathLike) -> Path:
    """Create the folder `path` (its parent must exist); an existing folder is fine."""
    p = check_folder(path)
    if p.is_dir():
        return p
    try:
        p.mkdir()
    except OSError as exc:
        raise OutputError(f"cannot create the folder {p}: {exc.strerror or exc}") from None
    return p


def write_bytes(path: PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically: a temporary file in the same folder, renamed over it."""
    p = check_output(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(p.parent if str(p.parent) else "."))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, p)
        tmp = None
    except OSError as exc:
        raise OutputError(f"cannot write {p}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return p


def write_text(path: PathLike, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
