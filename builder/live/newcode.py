"""The code added or changed since the baseline release: where a live snapshot may mask.

Per maskable file of the target release, the baseline release's file of the same path (both relative to
the sdists' project roots) is compared line by line with difflib (lines compared without trailing
whitespace); the target's rows in inserted or replaced blocks are new, and a file the baseline lacks is
new as a whole.  A mask is new code when every non-blank row it touches is new AND its middle (stripped)
occurs in no Python file of the baseline release (not only the file of the same path): code moved within a
file or between files, renamed files and re-indented code are not new.  `NewCode` is the masking `Region` of
one repository.
"""
from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


def changed_rows(old: str | None, new: str) -> frozenset[int]:
    """0-based rows of `new` (split at "\\n", as masking counts rows) added or changed since `old`; every
    row when there is no `old`."""
    new_lines = [line.rstrip() for line in new.split("\n")]
    if old is None:
        return frozenset(range(len(new_lines)))
    old_lines = [line.rstrip() for line in old.split("\n")]
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    return frozenset(row for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("replace", "insert")
                     for row in range(j1, j2))


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class NewCode:
    """One repository's new code: rows per file (only files that have some), the files the baseline lacks and
    the text of every Python file of the baseline (where no middle may occur)."""

    rows: Mapping[str, frozenset[int]]
    new_files: frozenset[str] = frozenset()
    corpus: str = ""

    def allows(self, file: str, data: bytes, start_byte: int, end_byte: int) -> bool:
        rows = self.rows.get(file, frozenset())
        first = data.count(b"\n", 0, start_byte)
        begin = data.rfind(b"\n", 0, start_byte) + 1  # the first touched row's start
        end = data.find(b"\n", max(start_byte, end_byte - 1))
        touched = data[begin:len(data) if end < 0 else end].split(b"\n")
        if any(first + i not in rows and line.strip() for i, line in enumerate(touched)):
            return False
        middle = data[start_byte:end_byte].decode("utf-8", "replace").strip()
        return bool(middle) and middle not in self.corpus

    def stats(self) -> dict:
        return {"files_with_new_code": len(self.rows), "new_files": len(self.new_files),
                "new_rows": sum(len(r) for r in self.rows.values())}

    @property
    def digest(self) -> str:
        """Content identity (the build's inputs hash includes it)."""
        h = hashlib.sha256(self.corpus.encode("utf-8", "surrogatepass"))
        for name in sorted(self.rows):
            h.update(f"{name}\0{sorted(self.rows[name])}\0{name in self.new_files}\n".encode())
        return h.hexdigest()[:20]


def new_code(target: Path, baseline: Path | None, files: list[str]) -> NewCode:
    """The new code of `files` (repo-relative paths of the target's maskable files) since `baseline` (the
    baseline release's project root; None: no earlier release, everything is new)."""
    rows, new_files = {}, set()
    for name in files:
        text = _read(target / name)
        if text is None:
            continue  # not UTF-8: masking skips it anyway
        old = _read(baseline / name) if baseline is not None else None
        lines = text.split("\n")
        changed = {r for r in changed_rows(old, text) if lines[r].strip()}
        if changed:
            rows[name] = frozenset(changed)
            new_files |= {name} if old is None else set()
    olds = sorted(baseline.rglob("*.py")) if baseline is not None else []
    corpus = "\n\0\n".join(text for path in olds if path.is_file() and (text := _read(path)) is not None)
    return NewCode(rows, frozenset(new_files), corpus)
