"""A project's releases and their upload times, from the package index's JSON simple API.

The protocol pip and uv use: `GET {index}/{normalised name}/` with `Accept:
application/vnd.pypi.simple.v1+json` (PEP 691) answers every file of the project with its hashes and,
from API version 1.1 on, its `upload-time` (PEP 700) and the project's `versions`.  One request per
project, and only for projects we name (the candidate list): the index is never scanned for names.

Answers are cached on disk under the cache (`cache_root()/index/`), with the time they were fetched.  A
cached answer serves a question about releases uploaded before some moment (`fresh_after`: the end of a
snapshot's window) only when it was fetched after that moment; otherwise the project is asked again,
so a snapshot never misses a release its window contains.
"""
from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename
from packaging.version import InvalidVersion, Version

from execrepobench_dataset.schemes import INDEX_CACHE_SCHEMA
from execrepobench_dataset.version import __version__
from execrepobench_metric.defaults import INDEX_REQUEST_TIMEOUT_S
from execrepobench_metric.environments.layout import cache_root

from ..errors import IndexUnavailable, UnknownProject

DEFAULT_INDEX_URL = "https://pypi.org/simple/"
INDEX_URL_ENV = "EXECREPOBENCH_INDEX_URL"
ACCEPT = "application/vnd.pypi.simple.v1+json"
SDIST_SUFFIXES = (".tar.gz", ".zip")


def index_url(url: str | None = None) -> str:
    """The index to ask: `url`, else $EXECREPOBENCH_INDEX_URL, else PyPI's; always ending in '/'."""
    chosen = url or os.environ.get(INDEX_URL_ENV) or DEFAULT_INDEX_URL
    return chosen if chosen.endswith("/") else chosen + "/"


def parse_time(text: str) -> datetime:
    """An ISO 8601 upload time (`2026-10-07T12:00:01.123456Z`) as an aware UTC datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


@dataclass(frozen=True)
class Sdist:
    filename: str
    url: str
    sha256: str
    uploaded: datetime  # the file's upload time (UTC)


@dataclass(frozen=True)
class Release:
    version: str
    sdist: Sdist  # the newest non-yanked sdist of the version (releases without one are not listed)

    @property
    def uploaded(self) -> datetime:
        return self.sdist.uploaded

    @property
    def is_final(self) -> bool:
        """Not a pre-release or a dev release (what pip installs without --pre)."""
        return not Version(self.version).is_prerelease


@dataclass(frozen=True)
class ProjectReleases:
    name: str  # as the index spells it
    index: str
    fetched_at: datetime
    releases: tuple[Release, ...]  # every version with an sdist, oldest upload first

    def newest(self, start: datetime | None, end: datetime, final_only: bool = True) -> Release | None:
        """The newest release - the highest version - among those whose sdist was uploaded in [start, end)
        (no lower bound when start is None): a maintenance release of an older line uploaded later does not
        displace the main line.  Pre-releases and dev releases count only without `final_only`."""
        found = [r for r in self.releases if (start is None or r.uploaded >= start) and r.uploaded < end
                 and (r.is_final or not final_only)]
        return max(found, key=lambda r: Version(r.version)) if found else None


def _sdist_version(filename: str, project: str) -> str | None:
    if not filename.endswith(SDIST_SUFFIXES):
        return None
    try:
        name, version = parse_sdist_filename(filename if filename.endswith(".tar.gz") else filename[:-4] + ".tar.gz")
    except (InvalidSdistFilename, InvalidVersion):
        return None
    return str(version) if name == canonicalize_name(project) else None


def parse_project(data: dict, project: str, index: str, fetched_at: datetime) -> ProjectReleases:
    """The releases with an sdist in a PEP 691 JSON answer; raises IndexUnavailable when the answer lacks
    what PEP 700 adds (upload times)."""
    where = f"{project}: index {index}"
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise IndexUnavailable(f"{where}: the answer is not a PEP 691 project page (no 'files' list)")
    api = str((data.get("meta") or {}).get("api-version", "1.0"))
    major, _, minor = api.partition(".")
    if major != "1" or not minor.isdigit() or int(minor) < 1:
        raise IndexUnavailable(f"{where}: API version {api} has no upload times (PEP 700 needs 1.1 or later)")
    newest: dict[str, Sdist] = {}
    for entry in data["files"]:
        if not isinstance(entry, dict) or entry.get("yanked"):
            continue  # pip skips yanked files unless pinned exactly
        version = _sdist_version(str(entry.get("filename", "")), project)
        sha256 = (entry.get("hashes") or {}).get("sha256")
        if version is None or not sha256 or not entry.get("upload-time"):
            continue
        sdist = Sdist(entry["filename"], str(entry.get("url", "")), sha256.lower(), parse_time(entry["upload-time"]))
        if version not in newest or sdist.uploaded > newest[version].uploaded:
            newest[version] = sdist
    releases = sorted((Release(v, s) for v, s in newest.items()), key=lambda r: (r.uploaded, Version(r.version)))
    return ProjectReleases(str(data.get("name") or project), index, fetched_at, tuple(releases))


class IndexClient:
    """Asks one index about named projects; answers cached on disk (see the module doc)."""

    def __init__(self, url: str | None = None, cache_dir: Path | None = None,
                 timeout_s: float = INDEX_REQUEST_TIMEOUT_S) -> None:
        self.url = index_url(url)
        self.cache_dir = cache_dir or cache_root() / "index" / hashlib.sha256(self.url.encode()).hexdigest()[:16]
        self.timeout_s = timeout_s
        self.requests = 0  # requests sent by this client (one per project asked and not served from the cache)

    def _cache_file(self, project: str) -> Path:
        return self.cache_dir / f"{canonicalize_name(project)}.json"

    def _cached(self, project: str, fresh_after: datetime | None) -> tuple[dict, datetime] | None:
        try:
            stored = json.loads(self._cache_file(project).read_text(encoding="utf-8"))
            fetched = parse_time(stored["fetched_at"])
            if stored.get("schema") != INDEX_CACHE_SCHEMA or stored.get("index") != self.url:
                return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if fresh_after is not None and fetched < fresh_after:
            return None
        return stored["response"], fetched

    def fetch(self, project: str) -> dict:
        """The index's JSON answer for `project` (one request)."""
        url = f"{self.url}{canonicalize_name(project)}/"
        where = f"{project}: index {self.url}"
        request = urllib.request.Request(url, headers={"Accept": ACCEPT, "User-Agent": f"execrepobench/{__version__}"})
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                kind = response.headers.get_content_type()
                body = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise UnknownProject(f"{project}: no such project on the index {self.url} (HTTP 404)") from None
            raise IndexUnavailable(f"{where}: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise IndexUnavailable(f"{where} does not answer: {reason}") from None
        if kind != ACCEPT:
            raise IndexUnavailable(f"{where}: answered {kind or 'no content type'}, not the JSON simple API "
                                   f"({ACCEPT}, PEP 691)")
        try:
            return json.loads(body)
        except ValueError as exc:
            raise IndexUnavailable(f"{where}: the answer is not valid JSON: {exc}") from None

    def project(self, project: str, fresh_after: datetime | None = None) -> ProjectReleases:
        """`project`'s releases with an sdist; from the cache when it was fetched after `fresh_after` (or
        whenever, without one), else from the index (and then cached)."""
        cached = self._cached(project, fresh_after)
        if cached is not None:
            return parse_project(cached[0], project, self.url, cached[1])
        data = self.fetch(project)
        fetched = datetime.now(timezone.utc)
        releases = parse_project(data, project, self.url, fetched)  # checked before it is kept
        path = self._cache_file(project)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"schema": INDEX_CACHE_SCHEMA, "index": self.url, "fetched_at": fetched.isoformat(),
                                   "response": data}), encoding="utf-8")
        os.replace(tmp, path)
        return releases
