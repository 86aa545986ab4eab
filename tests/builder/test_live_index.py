"""The index client: recorded PyPI answers (tests/data/index/) parsed, and served by a local HTTP server on
127.0.0.1 the way PyPI serves them (PEP 691 content negotiation), with the on-disk cache and the errors."""
from datetime import datetime, timezone

import pytest

from execrepobench.builder.live.index import (ACCEPT, IndexClient, IndexUnavailable, UnknownProject, parse_project,
                                              parse_time)
from execrepobench.builder.live.window import Window, WindowError
from local_index import LocalIndex, recorded

FETCHED = datetime(2026, 12, 2, tzinfo=timezone.utc)


def releases(name: str):
    return parse_project(recorded(name), name, "https://pypi.org/simple/", FETCHED)


def test_target_and_baseline_from_recorded_answers():
    window = Window.of("2026-04-02", "2026-12-02", today=FETCHED.date())
    toolz = releases("toolz")
    target, baseline = toolz.newest(window.start, window.end), toolz.newest(None, window.start)
    assert (target.version, baseline.version) == ("1.2.0", "1.1.0")  # not the pre-release 1.0.1a0 of the same day
    assert target.sdist.filename == "toolz-1.2.0.tar.gz" and len(target.sdist.sha256) == 64
    assert target.uploaded.date().isoformat() == "2026-10-07" and window.contains(target.uploaded)
    assert toolz.newest(None, window.start, final_only=False).version == "1.1.0"  # same day: the higher version
    six = releases("six")
    assert six.newest(window.start, window.end) is None  # no release in the window
    assert six.newest(None, window.start).version == "1.17.0"
    assert [r.version for r in six.releases][-2:] == ["1.16.0", "1.17.0"]  # oldest upload first


def test_yanked_sdists_and_maintenance_lines():
    cachetools = releases("cachetools")
    versions = {r.version for r in cachetools.releases}
    assert "4.2.3" not in versions and "4.2.2" in versions  # 4.2.3's sdist is yanked
    window = Window.of("2026-10-31", "2026-11-30", today=FETCHED.date())
    target = cachetools.newest(window.start, window.end)
    # 7.3.3 was uploaded after 8.0.2: the newest release is the highest version of the window
    assert target.version == "8.0.2"
    assert max(cachetools.releases, key=lambda r: r.uploaded).version == "7.3.3"
    assert all(r.sdist.filename.endswith((".tar.gz", ".zip")) for r in cachetools.releases)


def test_window_checks_and_names():
    today = datetime(2026, 12, 2, tzinfo=timezone.utc).date()
    assert Window.of("2026-10-31", "2026-11-30", today=today).config_name == "live-2026-11"
    assert Window.of("2026-04-02", None, today=today).config_name == "live-2026-04-03-to-2026-12-02"
    window = Window.of("2026-04-02", "2026-04-03", today=today)
    assert window.contains(parse_time("2026-04-03T23:59:59Z")) and not window.contains(parse_time("2026-04-02T23:59:59Z"))
    assert not window.contains(parse_time("2026-04-04T00:00:00Z"))
    with pytest.raises(WindowError, match="in the future"):
        Window.of("2026-12-03", None, today=today)
    with pytest.raises(WindowError, match="--before 2027-01-01 is in the future"):
        Window.of("2026-01-01", "2027-01-01", today=today)
    with pytest.raises(WindowError, match="empty window"):
        Window.of("2026-06-01", "2026-06-01", today=today)
    with pytest.raises(WindowError, match="empty window"):
        Window.of("2026-12-02", None, today=today)  # after today: nothing can be after it yet
    with pytest.raises(WindowError, match="expected a date YYYY-MM-DD"):
        Window.of("2026-13-01", None, today=today)


@pytest.fixture()
def index():
    served = LocalIndex()
    yield served
    served.close()


def test_client_asks_once_and_caches(index, tmp_path):
    client = IndexClient(index.url, cache_dir=tmp_path / "cache")
    first = client.project("Toolz")  # the name is normalised in the URL
    assert index.requests == [("/simple/toolz/", ACCEPT)]
    assert first.newest(None, FETCHED).version == "1.2.0" and first.index == index.url
    again = IndexClient(index.url, cache_dir=tmp_path / "cache")  # another client, same cache on disk
    assert again.project("toolz").releases == first.releases
    assert len(index.requests) == 1 and again.requests == 0
    # a question about releases up to a moment after the cached answer was fetched asks again
    later = datetime.now(timezone.utc).replace(year=datetime.now(timezone.utc).year + 1)
    again.project("toolz", fresh_after=later)
    assert len(index.requests) == 2 and again.requests == 1
    again.project("toolz", fresh_after=first.fetched_at)  # fetched after that moment: the cache serves it
    assert len(index.requests) == 2


def test_client_errors(index, tmp_path):
    client = IndexClient(index.url, cache_dir=tmp_path / "cache")
    with pytest.raises(UnknownProject, match=r"no-such-project: no such project on the index .*HTTP 404"):
        client.project("no-such-project")
    html = LocalIndex(content_type="text/html")
    try:
        with pytest.raises(IndexUnavailable, match="answered text/html, not the JSON simple API"):
            IndexClient(html.url, cache_dir=tmp_path / "html").project("six")
    finally:
        html.close()
    old = LocalIndex(api_version="1.0")
    try:
        with pytest.raises(IndexUnavailable, match="API version 1.0 has no upload times"):
            IndexClient(old.url, cache_dir=tmp_path / "old").project("six")
        assert not (tmp_path / "old").exists()  # nothing unusable is cached
    finally:
        old.close()
    dead = LocalIndex()
    url = dead.url
    dead.close()  # the port no longer answers
    with pytest.raises(IndexUnavailable, match="does not answer"):
        IndexClient(url, cache_dir=tmp_path / "dead", timeout_s=5).project("six")


def test_default_index_and_cache_location(monkeypatch, private_cache):
    monkeypatch.delenv("EXECREPOBENCH_INDEX_URL", raising=False)
    client = IndexClient()
    assert client.url == "https://pypi.org/simple/"
    assert client.cache_dir.is_relative_to(private_cache / "index")
    monkeypatch.setenv("EXECREPOBENCH_INDEX_URL", "http://127.0.0.1:9/simple")
    assert IndexClient().url == "http://127.0.0.1:9/simple/"
