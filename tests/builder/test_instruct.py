"""Repo-Instruct: prompt layout and budget, records on the fixture repo, decontamination, parquet shards."""
import inspect
import json
from pathlib import Path

import pytest

from conftest import make_sample
from execrepobench.builder.instruct import instruct
from execrepobench.builder.sampling.repo_files import read_pool
from execrepobench.builder.instruct.instruct import (CONTEXT_FILE, CONTEXT_HEADER, PREFIX_SUFFIX, instruct_records,
                                                     render_user)
from execrepobench.builder.instruct.instruct_build import build_instruct
from execrepobench.builder.sources.manifest import load_manifest, parse_manifest
from execrepobench.builder.sampling.masking import MaskConfig, candidate_files
from execrepobench.builder.sources.sources import fetch
from execrepobench_dataset.instruct_record import SYSTEM_PROMPT, instruct_features, read_instruct_jsonl
from execrepobench_dataset.record import (FILL_EXPRESSION, FILL_TYPES, ContextFile, make_sample_id,
                                          write_jsonl)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "minirepo"
MANIFESTS = Path(instruct.__file__).parents[1] / "manifests"
_FIXED = len(CONTEXT_HEADER) + len(PREFIX_SUFFIX.format(prefix="", suffix=""))


def _manifest(tmp_path, name="minirepo", samples=6, extra=""):
    text = f'[defaults]\nseed = 0\n\n[[repo]]\nsource = "path:{FIXTURE}"\nname = "{name}"\n' \
           f'samples_per_repo = {samples}\n{extra}'
    return parse_manifest(text, tmp_path)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EXECREPOBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _records(tmp_path, seed=0, samples=6, budget=16000):
    spec = _manifest(tmp_path, samples=samples).repos[0]
    fetched = fetch(spec)
    gen = instruct_records(spec, fetched, seed, MaskConfig(samples_per_repo=samples), budget)
    assert inspect.isgenerator(gen)
    return fetched, list(gen)


def _bench(path: Path, rows):
    """A benchmark samples.jsonl with one sample per (repo_name, repo_source, middle)."""
    samples = [make_sample(file_name="pkg/m.py", middle=middle, fill_type=FILL_EXPRESSION, prefix_code="value = (",
                           suffix_code=")\n", repo_name=repo_name, repo_source=repo_source, env_key="env",
                           node_type="call") for repo_name, repo_source, middle in rows]
    write_jsonl(samples, path)
    return path


OTHER = ("other-lib", "pypi:other-lib==1.0#sha256=" + "0" * 64, "nothing_like_this_in_minirepo()")


# --- render_user -------------------------------------------------------------------------------------

def test_render_user_layout_exact():
    ctx = [ContextFile("pkg/a.py", "import os\nX = 1\n"), ContextFile("b.py", "Y = 2")]
    got = render_user(ctx, "def f():\n    return ", "\n\nprint(f())\n", 10_000)
    assert got == ("##Context Code##:\n"
                   "##File: pkg/a.py##\nimport os\nX = 1\n\n"
                   "##File: b.py##\nY = 2\n"
                   "##Prefix Code##:\ndef f():\n    return \n"
                   "##Suffix Code##:\n\n\nprint(f())\n\n"
                   "##Middle Code##:\n")
    assert render_user([], "p", "s", 10) == "##Context Code##:\n##Prefix Code##:\np\n##Suffix Code##:\ns\n##Middle Code##:\n"


def test_render_user_cuts_context_at_a_line_boundary():
    a = ContextFile("a.py", "a = 1\n")  # entry: "##File: a.py##\n" (15) + 6 + 1 = 22 chars
    b = ContextFile("b.py", "b1 = 1\nb2 = 2\nb3 = 3\n")  # 7 chars per line
    c = ContextFile("c.py", "c\n")  # tiny, but after the cut file: never added
    prefix, suffix = "P" * 10, "S" * 10
    header_b = len(CONTEXT_FILE.format(path="b.py", code=""))  # 16
    budget = 20 + 22 + header_b + 14 + 5  # room for two of b's lines (and 5 spare chars)
    got = render_user([a, b, c], prefix, suffix, budget)
    assert got == (CONTEXT_HEADER + CONTEXT_FILE.format(path="a.py", code=a.code)
                   + CONTEXT_FILE.format(path="b.py", code="b1 = 1\nb2 = 2\n")
                   + PREFIX_SUFFIX.format(prefix=prefix, suffix=suffix))
    assert len(got) - _FIXED <= budget
    # Not even the first line of the most relevant file fits: no context at all.
    assert render_user([b, a], prefix, suffix, 20 + header_b + 6) == \
        CONTEXT_HEADER + PREFIX_SUFFIX.format(prefix=prefix, suffix=suffix)
    # Exactly enough for everything.
    full = 20 + 22 + header_b + 21 + len(CONTEXT_FILE.format(path="c.py", code="c\n"))
    assert render_user([a, b, c], prefix, suffix, full).count("##File:") == 3
    assert render_user([a, b, c], prefix, suffix, full - 1).count("##File:") == 2


def test_render_user_keeps_prefix_end_and_suffix_start():
    prefix, suffix = "a" * 50 + "B" * 50, "C" * 50 + "d" * 50
    ctx = [ContextFile("x.py", "x = 1\n")]
    got = render_user(ctx, prefix, suffix, 40)
    assert got == CONTEXT_HEADER + PREFIX_SUFFIX.format(prefix="B" * 20, suffix="C" * 20)
    assert render_user(ctx, prefix, suffix, 41) == CONTEXT_HEADER + PREFIX_SUFFIX.format(prefix="B" * 20,
                                                                                       suffix="C" * 21)
    # A short side keeps all of itself and leaves its unused half to the other side.
    assert render_user([], "ab", suffix, 10) == CONTEXT_HEADER + PREFIX_SUFFIX.format(prefix="ab", suffix="C" * 8)
    assert render_user([], prefix, "cd", 10) == CONTEXT_HEADER + PREFIX_SUFFIX.format(prefix="B" * 8, suffix="cd")
    assert render_user([], prefix, suffix, 0) == CONTEXT_HEADER + PREFIX_SUFFIX.format(prefix="", suffix="")
    with pytest.raises(ValueError):
        render_user([], "", "", -1)


# --- records -----------------------------------------------------------------------------------------

def test_records_on_fixture_repo(tmp_path, cache):
    fetched, records = _records(tmp_path)
    assert len(records) == 6
    pool = read_pool(fetched.root)
    checked = 0
    for r in records:
        assert [m.role for m in r.messages] == ["system", "user", "assistant"]
        assert r.messages[0].content == SYSTEM_PROMPT
        assert r.messages[2].content == r.middle
        assert r.fill_type in FILL_TYPES and r.repo_name == "minirepo" and r.repo_source == fetched.pinned
        source = (fetched.root / r.file_name).read_text(encoding="utf-8")
        user = r.messages[1].content
        assert user.startswith(CONTEXT_HEADER) and user.endswith("##Middle Code##:\n")
        assert f"##File: {r.file_name}##" not in user  # the masked file is never its own context
        start = next(i for i in range(len(source)) if source.startswith(r.middle, i)
                     and PREFIX_SUFFIX.format(prefix=source[:i], suffix=source[i + len(r.middle):]) in user)
        prefix, suffix = source[:start], source[start + len(r.middle):]
        assert r.record_id == make_sample_id(fetched.pinned, r.file_name, prefix, r.middle, suffix, r.fill_type)
        if sum(text.count(r.middle) for text in pool.values()) == 1:  # the middle lives only where it was cut
            assert r.middle not in user
            checked += 1
    assert checked >= 3
    assert len({r.record_id for r in records}) == len(records)
    assert _records(tmp_path)[1] == records  # deterministic for a seed
    assert _records(tmp_path, seed=1)[1] != records


# --- build_instruct: decontamination, outputs --------------------------------------------------------

def test_refuses_benchmark_repos_by_name_and_source(tmp_path, cache):
    spec = _manifest(tmp_path, name="mini_repo").repos[0]  # a path source's pin names the repository
    fetched = fetch(spec)
    tree = fetched.source_hash
    cases = {
        "name": ("Mini.Repo", "pypi:mini-repo==1.0#sha256=" + "1" * 64, "x"),  # normalised name equal
        "pinned source": ("renamed", fetched.pinned, "x"),
        "source hash": ("renamed", f"path:/somewhere/else#tree={tree}", "x"),
    }
    for i, (why, row) in enumerate(cases.items()):
        bench = _bench(tmp_path / f"bench{i}.jsonl", [OTHER, row])
        rep = build_instruct(_manifest(tmp_path, name="mini_repo"), tmp_path / f"out{i}", benchmark_samples=bench,
                             progress=False)
        assert rep["totals"]["refused_repos"] == 1 and rep["totals"]["records"] == 0, why
        assert rep["repos"][0]["status"] == "refused" and why in rep["repos"][0]["reason"]
        assert rep["refused_repos"] == [{"repo": "mini_repo", "reason": rep["repos"][0]["reason"]}]
        assert (tmp_path / f"out{i}" / "instruct.jsonl").read_text() == ""


def test_drops_records_whose_middle_is_in_the_benchmark(tmp_path, cache):
    clean = build_instruct(_manifest(tmp_path), tmp_path / "clean", benchmark_samples=None, progress=False)
    records = list(read_instruct_jsonl(tmp_path / "clean" / "instruct.jsonl"))
    assert clean["totals"]["records"] == len(records) == 6 and clean["totals"]["dropped_contaminated"] == 0
    victim = records[2]
    bench = _bench(tmp_path / "bench.jsonl", [OTHER, ("other-lib", OTHER[1], victim.middle)])
    rep = build_instruct(_manifest(tmp_path), tmp_path / "out", benchmark_samples=bench, progress=False)
    kept = list(read_instruct_jsonl(tmp_path / "out" / "instruct.jsonl"))
    assert rep["totals"]["dropped_contaminated"] == rep["repos"][0]["dropped_contaminated"] == 1
    assert rep["totals"]["records"] == len(kept) == 5 and rep["totals"]["refused_repos"] == 0
    assert kept == [r for r in records if r.record_id != victim.record_id]
    assert rep["benchmark"]["sample_count"] == 2


def test_parquet_shards_match_jsonl(tmp_path, cache):
    from datasets import load_dataset

    rep = build_instruct(_manifest(tmp_path, samples=5), tmp_path / "out", benchmark_samples=None, shard_rows=2,
                         progress=False)
    out = tmp_path / "out"
    shards = sorted((out / "parquet").glob("*.parquet"))
    assert [p.name for p in shards] == ["train-00000.parquet", "train-00001.parquet", "train-00002.parquet"]
    assert rep["totals"]["shards"] == 3 and rep["outputs"]["parquet"] == [f"parquet/{p.name}" for p in shards]
    import pyarrow.parquet as pq

    assert [pq.ParquetFile(p).metadata.num_rows for p in shards] == [2, 2, 1]
    ds = load_dataset("parquet", data_files=[str(p) for p in shards], split="train",
                      cache_dir=str(tmp_path / "hf"))
    lines = (out / "instruct.jsonl").read_text(encoding="utf-8").splitlines()
    assert ds.features == instruct_features()
    assert ds.num_rows == len(lines) == rep["totals"]["records"] == 5
    assert [dict(row) for row in ds] == [json.loads(line) for line in lines]
    assert not list(out.glob("*.tmp"))
    report = json.loads((out / "instruct_report.json").read_text())
    assert report["totals"] == rep["totals"] and report["repos"][0]["per_fill_type"]
    assert sum(report["totals"]["per_fill_type"].values()) == 5
    assert "time_s" in report["repos"][0] and report["repos"][0]["files"] == 3


def test_resumes_per_repository(tmp_path, cache, monkeypatch):
    """A finished repository is reused (its records are not made again); an interrupted one is redone; the
    benchmark can change without redoing any repository."""
    from execrepobench.builder.instruct import instruct_build

    two = _manifest(tmp_path, samples=4, extra=f'[[repo]]\nsource = "path:{FIXTURE}"\nname = "second"\n'
                                              "samples_per_repo = 3\n")
    out = tmp_path / "out"
    first = build_instruct(two, out, benchmark_samples=None, progress=False)
    assert first["totals"]["records"] == 7 and first["totals"]["reused"] == 0
    jsonl = (out / "instruct.jsonl").read_bytes()
    (out / "repos" / "second" / "report.json").unlink()  # as if killed before "second" finished
    made = []
    real = instruct.instruct_records

    def counting(spec, *args, **kwargs):
        made.append(spec.name)
        yield from real(spec, *args, **kwargs)

    monkeypatch.setattr(instruct, "instruct_records", counting)
    again = build_instruct(two, out, benchmark_samples=None, progress=False)
    assert made == ["second"] and again["totals"]["reused"] == 1
    assert (out / "instruct.jsonl").read_bytes() == jsonl and again["totals"]["records"] == 7
    victim = json.loads(jsonl.decode().splitlines()[0])["messages"][2]["content"]
    bench = _bench(tmp_path / "bench.jsonl", [OTHER, ("other-lib", OTHER[1], victim)])
    made.clear()
    cleaned = build_instruct(two, out, benchmark_samples=bench, progress=False)
    assert made == [] and cleaned["totals"]["reused"] == 2
    assert cleaned["totals"]["dropped_contaminated"] >= 1 and cleaned["totals"]["records"] < 7
    assert instruct_build.REPORT_NAME == "instruct_report.json"


def test_build_is_deterministic_and_survives_a_failing_repo(tmp_path, cache):
    bad = "[[repo]]\nsource = \"pypi:fake-lib==1.0\"\nsha256 = \"" + "a" * 64 + "\"\n"
    (cache / "downloads" / "fake-lib-1.0").mkdir(parents=True)
    (cache / "downloads" / "fake-lib-1.0" / "fake-lib-1.0.tar.gz").write_bytes(b"not what was pinned")
    reps = [build_instruct(_manifest(tmp_path, extra=bad), tmp_path / f"o{i}", benchmark_samples=None,
                           progress=False) for i in (1, 2)]
    assert [r["status"] for r in reps[0]["repos"]] == ["ok", "error"]
    assert "sha256 mismatch" in reps[0]["repos"][1]["reason"]
    assert reps[0]["totals"]["errors"] == 1 and reps[0]["totals"]["records"] == 6
    for name in ("instruct.jsonl", "parquet/train-00000.parquet"):
        assert (tmp_path / "o1" / name).read_bytes() == (tmp_path / "o2" / name).read_bytes()


def test_any_exception_of_one_repo_is_a_report_entry(tmp_path, cache, monkeypatch):
    real = instruct.mask_repository

    def mask_or_raise(name, *args, **kwargs):
        if name == "second":
            raise KeyError("injected masking failure")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(instruct, "mask_repository", mask_or_raise)
    extra = f'[[repo]]\nsource = "path:{FIXTURE}"\nname = "second"\n'
    rep = build_instruct(_manifest(tmp_path, extra=extra), tmp_path / "o", benchmark_samples=None, progress=False)
    first, second = rep["repos"]
    assert first["status"] == "ok" and first["records"] == 6
    assert second["status"] == "error" and "KeyError" in second["reason"] and "Traceback" in second["traceback"]
    assert rep["totals"]["errors"] == 1 and rep["totals"]["records"] == 6


def test_empty_corpus_still_writes_a_loadable_shard(tmp_path, cache):
    bench = _bench(tmp_path / "bench.jsonl", [("minirepo", OTHER[1], "x")])
    rep = build_instruct(_manifest(tmp_path), tmp_path / "out", benchmark_samples=bench, progress=False)
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "out" / "parquet" / "train-00000.parquet")
    assert rep["totals"]["records"] == table.num_rows == 0
    assert table.schema.equals(instruct_features().arrow_schema, check_metadata=False)


def test_instruct_manifest_is_disjoint_from_the_benchmark():
    inst, default = load_manifest(MANIFESTS / "instruct.toml"), load_manifest(MANIFESTS / "default.toml")
    assert len(inst.repos) >= 20
    assert all(r.sha256 and r.source.startswith("pypi:") for r in inst.repos)
    canon = instruct.canon_name
    assert not {canon(r.name) for r in inst.repos} & {canon(r.name) for r in default.repos}


@pytest.mark.pypi
def test_real_pypi_repo_from_instruct_manifest(tmp_path):
    spec = load_manifest(MANIFESTS / "instruct.toml").repo("sortedcontainers")
    fetched = fetch(spec)
    assert fetched.pinned == f"{spec.source}#sha256={spec.sha256}"
    records = list(instruct_records(spec, fetched, 0, MaskConfig(samples_per_repo=12), 4000))
    assert len(records) == 12
    assert all(r.file_name in candidate_files(fetched.root) and r.repo_source == fetched.pinned for r in records)
    assert any(r.file_name.startswith("sortedcontainers/") for r in records)
    assert any(r.fill_type.startswith("grammar-based") for r in records)
    for r in records:
        user = r.messages[1].content
        assert len(user) - _FIXED <= 4000 and r.middle not in user.split("##Prefix Code##:")[0]
        assert r.messages[2].content == r.middle
    assert list(instruct_records(spec, fetched, 0, MaskConfig(samples_per_repo=12), 4000)) == records
