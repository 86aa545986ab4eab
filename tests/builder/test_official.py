"""Importing the paper's official release: a fixture in its exact format (JSONL + repos folder)."""
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from execrepobench.builder.official import (OFFICIAL_SETTINGS, OfficialFormatError, import_official,
                                           read_official)
from execrepobench_dataset.record import FILL_TYPES, read_jsonl

OFFICIAL = Path(__file__).parents[1] / "fixtures" / "official"
QUIET = replace(OFFICIAL_SETTINGS, progress=False)


def _copy_fixture(dest: Path) -> Path:
    shutil.copytree(OFFICIAL, dest, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build"))
    return dest


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    base = tmp_path_factory.mktemp("official")
    src = _copy_fixture(base / "release")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EXECREPOBENCH_CACHE", str(base / "cache"))  # uv's own cache stays the default one
        settings = replace(OFFICIAL_SETTINGS, workers=2, progress=False, baseline_runs=1, gt_runs=1)
        report = import_official(src / "exec_repo_bench.jsonl", src / "repos", base / "out", settings)
        yield {"report": report, "src": src, "out": base / "out"}


@pytest.mark.slow
def test_report_numbers(imported):
    report, out = imported["report"], imported["out"]
    assert json.loads((out / "import_report.json").read_text()) == report
    overall = report["overall"]
    assert {k: overall[k] for k in ("lines", "converted", "mismatched", "gt_failed", "null_passed", "kept")} == \
        {"lines": 4, "converted": 3, "mismatched": 1, "gt_failed": 0, "null_passed": 1, "kept": 2}
    assert overall["repos"] == 2 and overall["repos_ok"] == 2 and overall["null_passed_share"] == round(1 / 3, 3)
    calc, text = report["repos"]["calcpkg"], report["repos"]["textkit"]
    assert (calc["lines"], calc["converted"], calc["mismatched"], calc["null_passed"], calc["kept"]) == (2, 2, 0, 1, 1)
    assert (text["lines"], text["converted"], text["mismatched"], text["null_passed"], text["kept"]) == (2, 1, 1, 0, 1)
    assert text["skipped_lines"][0]["line"] == 4 and text["skipped_lines"][0]["reason"] == "mismatched_file"
    null = [o for o in calc["outcomes"] if o["reason"] == "null_passed"]
    assert len(null) == 1 and null[0]["line"] == 2
    for rep in (calc, text):
        assert rep["official_entry_point"] == f"{rep['repo']}/evaluate_repo.py"
        assert rep["test_command"][:3] == ["python", "-m", "pytest"]
        # sample ids hash the pinned source: it names the repository, not where repos.zip was unpacked
        assert rep["pinned"].startswith(f"path:{rep['repo']}#tree=") and str(imported["src"]) not in rep["pinned"]
        assert rep["baseline"]["import_check"].get("evaluate_repo") is None  # the harness is never imported


@pytest.mark.slow
def test_kept_samples_are_judged_and_match_the_files(imported):
    from execrepobench_dataset.repo_record import read_repo_records

    src, out = imported["src"], imported["out"]
    kept = list(read_jsonl(out / "samples.jsonl"))
    records = {r.repo_name: r for r in read_repo_records(out / "repositories.jsonl")}
    assert set(records) == {"calcpkg", "textkit"} and all(r.key_matches for r in records.values())
    assert all(s.env_key == records[s.repo_name].env_key for s in kept)
    assert "repository" not in json.loads((out / "import_report.json").read_text())["repos"]["calcpkg"]
    everything = list(read_jsonl(out / "all_samples.jsonl"))
    assert len(kept) == 2 and len(everything) == 3
    assert {s.sample_id for s in kept} < {s.sample_id for s in everything}
    assert all(s.judged_tests and s.selection_rule for s in everything)
    for s in kept:
        on_disk = (src / "repos" / s.repo_name / s.file_name).read_text(encoding="utf-8")
        assert s.prefix_code + s.middle_code + s.suffix_code == on_disk
        assert s.node_type == "official" and s.seed == 0 and s.fill_type in FILL_TYPES
        assert s.middle_start_byte == len(s.prefix_code.encode()) and s.context_code
        assert s.repo_source == imported["report"]["repos"][s.repo_name]["pinned"]
    by_file = {(s.repo_name, s.middle_code) for s in kept}
    assert by_file == {("calcpkg", "for value in values:\n        result.append(add(value, value))"),
                       ("textkit", 'text.upper() + "!"')}
    double = next(s for s in kept if s.repo_name == "calcpkg")
    assert double.judged_tests == ("tests/test_ops.py::test_double_all",) and double.selection_rule == "coverage"


def _bad(tmp_path, lines):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_bad_jsonl_names_file_line_and_field(tmp_path):
    good = (OFFICIAL / "exec_repo_bench.jsonl").read_text().splitlines()[0]
    missing = json.loads(good)
    del missing["middle_code"]
    path = _bad(tmp_path, [good, json.dumps(missing)])
    with pytest.raises(OfficialFormatError, match=r"bad\.jsonl:2: missing field 'middle_code'"):
        read_official(path)
    wrong = dict(json.loads(good), fill_type="Random Token Completion")
    with pytest.raises(OfficialFormatError, match=r"bad\.jsonl:3: field 'fill_type'.*Random Token"):
        read_official(_bad(tmp_path, [good, "", json.dumps(wrong)]))
    with pytest.raises(OfficialFormatError, match=r"bad\.jsonl:2: not valid JSON"):
        read_official(_bad(tmp_path, [good, "{not json"]))
    pairs = dict(json.loads(good), context_code=[["only a path"]])
    with pytest.raises(OfficialFormatError, match=r"bad\.jsonl:1: field 'context_code'"):
        read_official(_bad(tmp_path, [json.dumps(pairs)]))
    escape = dict(json.loads(good), repo_name="../elsewhere")
    with pytest.raises(OfficialFormatError, match=r"bad\.jsonl:1: field 'repo_name'"):
        import_official(_bad(tmp_path, [json.dumps(escape)]), tmp_path, tmp_path / "out", QUIET)


def test_unknown_repo_folder_is_a_report_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", str(tmp_path / "cache"))
    line = dict(json.loads((OFFICIAL / "exec_repo_bench.jsonl").read_text().splitlines()[0]), repo_name="nosuch")
    path = _bad(tmp_path, [json.dumps(line)])
    (tmp_path / "repos").mkdir()
    report = import_official(path, tmp_path / "repos", tmp_path / "out", QUIET)
    rep = report["repos"]["nosuch"]
    assert rep["status"] == "error" and "nosuch" in rep["reason"] and rep["lines"] == 1 and rep["converted"] == 0
    assert report["overall"]["repos_error"] == 1 and report["overall"]["kept"] == 0
    assert (tmp_path / "out" / "samples.jsonl").read_text() == ""
    assert json.loads((tmp_path / "out" / "import_report.json").read_text())["repos"]["nosuch"]["status"] == "error"
