"""The projects a live snapshot tries, in order: the packaged list (`candidates.toml`, a note per entry) or
the user's (`--candidates FILE`: the same TOML, or one name per line with `#` comments)."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name


from ..errors import CandidateError
from ..sources.manifest import _NAME_RE

CANDIDATES_FILE = Path(__file__).resolve().parent / "candidates.toml"


@dataclass(frozen=True)
class Candidate:
    name: str  # the project's name on the index
    note: str = ""  # what we know about it (why it is on the list)


def _checked(name, where: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise CandidateError(f"{where}: field name: {name!r} is not a project name (letters, digits, . _ -)")
    return name


def parse_candidates(text: str, label: str) -> tuple[Candidate, ...]:
    """Candidates from TOML (`[[candidate]]` tables with `name` and `note`) or from a plain list of names."""
    if "[[candidate]]" in text:
        try:
            tables = tomllib.loads(text).get("candidate", [])
        except tomllib.TOMLDecodeError as exc:
            raise CandidateError(f"{label}: invalid TOML: {exc}") from None
        found = []
        for i, table in enumerate(tables, 1):
            where = f"{label}: candidate #{i}"
            unknown = sorted(set(table) - {"name", "note"})
            if unknown:
                raise CandidateError(f"{where}: unknown field {unknown[0]!r} (allowed: name, note)")
            if not isinstance(table.get("note", ""), str):
                raise CandidateError(f"{where}: field note: expected a string")
            found.append(Candidate(_checked(table.get("name"), where), table.get("note", "")))
    else:
        lines = [(n, line.split("#", 1)[0].strip()) for n, line in enumerate(text.splitlines(), 1)]
        found = [Candidate(_checked(name, f"{label}:{n}")) for n, name in lines if name]
    seen: dict[str, str] = {}
    for c in found:
        key = canonicalize_name(c.name)
        if key in seen:
            raise CandidateError(f"{label}: candidate {c.name!r} is listed twice (also as {seen[key]!r})")
        seen[key] = c.name
    if not found:
        raise CandidateError(f"{label}: no candidates")
    return tuple(found)


def load_candidates(path: Path | None = None) -> tuple[Candidate, ...]:
    """The candidates of `path` (default: the packaged list)."""
    path = Path(path) if path is not None else CANDIDATES_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CandidateError(f"{path}: cannot read the candidate list: {exc}") from None
    return parse_candidates(text, str(path))


def choose(candidates: tuple[Candidate, ...], names: tuple[str, ...]) -> tuple[Candidate, ...]:
    """The named projects, in the order given; each keeps its note when the list has it."""
    if not names:
        return candidates
    known = {canonicalize_name(c.name): c for c in candidates}
    chosen = [known.get(canonicalize_name(_checked(n, "--candidate")), Candidate(n, "named on the command line"))
              for n in names]
    return tuple(dict.fromkeys(chosen))
