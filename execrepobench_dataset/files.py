"""Small file helpers every package shares (this is the ground floor: builder, metric and runner import it):
a file's streaming sha256, an INI file read without failing, and a lock file held across threads and processes."""
from __future__ import annotations

import configparser
import fcntl
import hashlib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

BLOCK = 1 << 20  # bytes read at a time


def file_sha256(path: Path) -> str:
    """The sha256 (hex) of a file's bytes, read a block at a time (an sdist, a shard: never whole in memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def read_ini(path: Path | None = None, *, text: str | None = None) -> configparser.ConfigParser | None:
    """The INI file at `path` (or `text`) as configparser reads it with no interpolation (pytest's, tox's,
    setuptools' and coverage's files: a `%` is a plain character); an empty parser for a missing file, as
    configparser reads one; None when it is not INI or not UTF-8."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        if text is not None:
            parser.read_string(text)
        else:
            parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    return parser


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (made with its folder): one holder at a time across threads and
    processes of this machine; a second waits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)

