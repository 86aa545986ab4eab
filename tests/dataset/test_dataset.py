"""Publishing builder output as a Hugging Face dataset folder, loading it back, pushing it (offline)."""
import dataclasses
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_sample
from execrepobench_dataset.instruct_record import (SYSTEM_PROMPT, InstructRecord, Message, instruct_features,
                                                   write_instruct_jsonl)
from execrepobench_dataset.record import (FILL_BLOCK, FILL_EXPRESSION, FILL_SPAN, FILL_STATEMENT, FILL_TYPES,
                                          ContextFile, Sample, features)
from execrepobench_dataset.repo_record import repo_features, write_repo_records
from sample_build import ENV_KEYS, PINNED, RECORDS, SAMPLES, of, write_build

pytestmark = pytest.mark.usefixtures("offline_hf")  # no network, HF caches under tmp_path


def instruct(repo, file_name, middle, fill):
    msgs = (Message("system", SYSTEM_PROMPT), Message("user", f"<file {file_name}> complete ▁ here"),
            Message("assistant", middle))
    return InstructRecord(record_id=hashlib.sha256(f"{repo}{file_name}{middle}".encode()).hexdigest()[:24],
                          repo_name=repo, repo_source=PINNED[repo], file_name=file_name, fill_type=fill,
                          node_type="block", messages=msgs, seed=7, builder_version="0.1.0")


INSTRUCT = [instruct("alpha", "alpha/x.py", "return 1", FILL_STATEMENT),
            instruct("beta", "beta/y.py", "für = 'ö'", FILL_BLOCK), instruct("beta", "beta/z.py", "", FILL_SPAN)]


def write_instruct(folder: Path, records=INSTRUCT, report=True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_instruct_jsonl(records, folder / "instruct.jsonl")
    if report:
        (folder / "instruct_report.json").write_text(json.dumps({"records": len(records), "seed": 7}))
    return folder


@pytest.fixture()
def published(tmp_path):
    from execrepobench_dataset.publish import publish

    build, inst = write_build(tmp_path / "OUT"), write_instruct(tmp_path / "INSTRUCT")
    summary = publish(build, tmp_path / "dataset", instruct_dir=inst, max_shard_size=1)  # one row per shard
    return tmp_path / "dataset", summary


def card_meta(folder: Path) -> dict:
    import yaml

    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def test_features_match_records_and_differ_between_configs():
    import datasets

    f = features()
    assert list(f) == [name for name in Sample.__dataclass_fields__]
    assert f["context_code"] == datasets.List({"path": datasets.Value("string"), "code": datasets.Value("string")})
    assert f["judged_tests"] == datasets.List(datasets.Value("string"))
    assert datasets.Features._from_yaml_list(f._to_yaml_list()) == f
    assert set(instruct_features()) == set(InstructRecord.__dataclass_fields__)
    assert f != instruct_features()


def test_round_trip_load_dataset_gives_back_the_published_records(published, offline_hf):
    import datasets

    folder, summary = published
    shards = folder / "data" / "exec_repo_bench"
    arrow = summary["configs"]["exec_repo_bench"].pop("arrow_bytes")
    assert summary["configs"]["exec_repo_bench"] == {
        "split": "test", "num_examples": 5, "bytes": sum(p.stat().st_size for p in shards.iterdir()),
        "files": [f"test-0000{i}-of-00005.parquet" for i in range(5)]}
    assert 0 < arrow == card_meta(folder)["dataset_info"][0]["dataset_size"]
    assert summary["configs"]["repo_instruct"]["files"] == [f"train-0000{i}-of-00003.parquet" for i in range(3)]
    ds = datasets.load_dataset(str(folder), "exec_repo_bench", split="test", cache_dir=str(offline_hf / "c"))
    assert ds.features == features()
    expected = sorted((s.to_dict() for s in SAMPLES), key=lambda d: d["sample_id"])
    assert [dict(row) for row in ds] == expected
    inst = datasets.load_dataset(str(folder), "repo_instruct", split="train", cache_dir=str(offline_hf / "c"))
    assert inst.features == instruct_features()
    assert [dict(row) for row in inst] == [r.to_dict() for r in INSTRUCT]  # streamed in the corpus's order
    # the default config is the benchmark
    assert datasets.load_dataset(str(folder), split="test", cache_dir=str(offline_hf / "c")).num_rows == 5


def test_load_helpers(published, offline_hf):
    from execrepobench_dataset import load, load_instruct, load_samples

    folder, _ = published
    ds = load(str(folder), cache_dir=str(offline_hf / "c"))
    assert ds.split == "test" and ds.features == features()
    assert load_samples(str(folder), cache_dir=str(offline_hf / "c")) == sorted(SAMPLES, key=lambda s: s.sample_id)
    assert load(str(folder), "repo_instruct", cache_dir=str(offline_hf / "c")).split == "train"
    assert load_instruct(str(folder), cache_dir=str(offline_hf / "c")) == INSTRUCT
    with pytest.raises(ValueError, match="'exec_repo_bench', 'repo_instruct'"):
        load(str(folder), "default")


def test_parquet_schema_is_explicit_even_for_empty_lists(tmp_path):
    import pyarrow.parquet as pq

    from execrepobench_dataset.publish import publish

    publish(write_build(tmp_path / "OUT"), tmp_path / "ds", max_shard_size=1)  # one row per shard
    files = sorted((tmp_path / "ds/data/exec_repo_bench").glob("*.parquet"))
    assert len(files) == 5
    for path in files:
        assert pq.read_schema(path).remove_metadata() == features().arrow_schema.remove_metadata()
        meta = pq.ParquetFile(path).metadata
        assert meta.num_rows == 1 and meta.num_row_groups == 1
    # one shard holds the sample whose lists are all empty
    assert any(pq.read_table(p).column("judged_tests").to_pylist() == [[]] for p in files)


def test_parquet_is_written_the_way_datasets_pushes_it(tmp_path):
    """`Dataset.to_parquet` settings (row groups sized by datasets, page index, content-defined chunking, the
    features in the metadata) and push_to_hub's shard rule (bytes / 500MB + 1: one shard here)."""
    import datasets
    import pyarrow.parquet as pq

    from execrepobench_dataset.hub_parquet import shard_count
    from execrepobench_dataset.publish import publish

    many = [make_sample(file_name="alpha/many.py", middle=str(i), fill_type=FILL_EXPRESSION,
                        prefix_code=f"x{i} = ", **of("alpha")) for i in range(205)]
    summary = publish(write_build(tmp_path / "OUT", samples=many), tmp_path / "ds")
    assert summary["configs"]["exec_repo_bench"]["files"] == ["test-00000-of-00001.parquet"]
    path = tmp_path / "ds/data/exec_repo_bench/test-00000-of-00001.parquet"
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 1 and meta.num_rows == 205  # not 100-row groups: datasets aims at 100MB
    assert set(meta.metadata) == {b"ARROW:schema", b"huggingface", b"content_defined_chunking"}
    column = meta.row_group(0).column(0)
    assert column.has_column_index and column.has_offset_index  # the page index the viewer reads
    reference = tmp_path / "reference.parquet"  # what datasets itself writes for the same rows
    rows = [{k: v for k, v in s.to_dict().items() if k != "context_code"} for s in sorted(many, key=lambda s: s.sample_id)]
    feats = features()
    del feats["context_code"]
    datasets.Dataset.from_list(rows, features=feats).to_parquet(str(reference))
    assert reference.read_bytes() == path.read_bytes()
    assert shard_count(1_200 * 2**20, 10_000) == 3 and shard_count(10, 0) == 1 and shard_count(500, 3, 1) == 3


def test_publishing_twice_gives_identical_bytes(tmp_path):
    from execrepobench_dataset.publish import publish

    build, inst = write_build(tmp_path / "OUT"), write_instruct(tmp_path / "INSTRUCT")
    publish(build, tmp_path / "a", instruct_dir=inst, max_shard_size=1)
    publish(build, tmp_path / "b", instruct_dir=inst, max_shard_size=1)

    def files(root):
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    first = files(tmp_path / "a")
    assert set(first) >= {"README.md", "LICENSES.md", "data/exec_repo_bench/test-00000-of-00005.parquet",
                          "data/repo_instruct/train-00001-of-00003.parquet",
                          "data/repositories/train-00000-of-00002.parquet"}
    assert "environments.json" not in first  # the repositories config replaces it (locks, no paths)
    assert files(tmp_path / "b") == first
    publish(build, tmp_path / "a", instruct_dir=inst, max_shard_size=1, overwrite=True)
    assert files(tmp_path / "a") == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["INSTRUCT", "OUT", "a", "b"]  # no leftovers


def test_card_yaml(published):
    import datasets

    folder, _ = published
    meta = card_meta(folder)
    assert (meta["license"], meta["license_name"], meta["license_link"]) == ("other", "per-repository", "LICENSES.md")
    assert meta["language"] == ["code", "en"] and meta["task_categories"] == ["text-generation"]
    assert meta["tags"] == ["code", "code-completion", "fill-in-the-middle", "execution", "python"]
    assert meta["pretty_name"] == "ExecRepoBench"
    assert meta["configs"] == [
        {"config_name": "exec_repo_bench", "data_files": [{"split": "test", "path": "data/exec_repo_bench/*.parquet"}],
         "default": True},
        {"config_name": "repo_instruct", "data_files": [{"split": "train", "path": "data/repo_instruct/*.parquet"}]},
        {"config_name": "repositories", "data_files": [{"split": "train", "path": "data/repositories/*.parquet"}]}]
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    assert set(infos) == {"exec_repo_bench", "repo_instruct", "repositories"}
    assert datasets.Features._from_yaml_list(infos["repositories"]["features"]) == repo_features()
    assert [(s["name"], s["num_examples"]) for s in infos["repositories"]["splits"]] == [("train", 2)]
    assert datasets.Features._from_yaml_list(infos["exec_repo_bench"]["features"]) == features()
    assert datasets.Features._from_yaml_list(infos["repo_instruct"]["features"]) == instruct_features()
    assert [(s["name"], s["num_examples"]) for s in infos["exec_repo_bench"]["splits"]] == [("test", 5)]
    assert [(s["name"], s["num_examples"]) for s in infos["repo_instruct"]["splits"]] == [("train", 3)]


def test_card_body(published):
    folder, summary = published
    text = (folder / "README.md").read_text(encoding="utf-8")
    fingerprint = summary["fingerprint"]
    for needle in ("arXiv 2412.11990", "manifest `test.toml`", "seed `7`", "`0.1.0`", PINNED["alpha"],
                   PINNED["beta"], f"`{ENV_KEYS['alpha']}`", "| gamma | - | - | - | - | 0 | not published (error) |",
                   "allow_exec=True", "execrepobench evaluate", "@article{yang2024execrepobench",
                   "Multi-level Executable Code", "Yang, Jian", "- records: `3`", "**Linux**", "**bubblewrap**",
                   "**Python 3.11**", f"Fingerprint: `{fingerprint}`", "execrepobench fingerprint DIR_OR_HUB_ID",
                   "execrepobench prepare --dataset", "`pip download --no-deps --no-binary alpha alpha==1.0`",
                   "`git clone https://example.org/beta.git` and `git checkout " + "b" * 40 + "`"):
        assert needle in text, needle
    repos = table_rows(text, "| repository | pinned source | license | python | env key | samples | get the code |")
    assert [repos["alpha"][1], repos["beta"][1], repos["alpha"][4], repos["beta"][4]] == ["MIT", "unknown", "2", "3"]
    for name in [*features(), *repo_features()]:
        assert f"| `{name}` |" in text, name
    assert "see record.py" not in text and "see repo_record.py" not in text  # every field has its own meaning


def test_card_says_which_files_the_contexts_come_from(tmp_path):
    """The build report's context pool, in the card's context section (an old report: said unrecorded)."""
    from execrepobench_dataset.publish import publish

    said = {}
    for pool in ("paper", "with-tests", None):
        build = write_build(tmp_path / f"OUT-{pool}", report_changes={"context_pool": pool} if pool else None)
        publish(build, tmp_path / f"dataset-{pool}")
        text = (tmp_path / f"dataset-{pool}" / "README.md").read_text(encoding="utf-8")
        said[pool] = text.split("## Cross-file context", 1)[1].split("\n\n")[1]
    assert "that the paper may mask: no `tests/`" in said["paper"] and "does not say" not in said["paper"]
    assert "test files included" in said["with-tests"] and "`--context-with-tests`" in said["with-tests"]
    assert "that the paper may mask" in said[None] and "does not say which pool" in said[None]


def table_rows(text: str, header: str) -> dict[str, list[str]]:
    lines = text.splitlines()
    start = lines.index(header) + 2
    rows = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[0]] = cells[1:]
    return rows


def test_statistics_tables_match_the_samples(published):
    from execrepobench_dataset.stats import pretokens

    folder, _ = published
    text = (folder / "README.md").read_text(encoding="utf-8")
    fills = table_rows(text, "| fill type | samples | % | paper | paper % |")
    assert {f: int(v[0]) for f, v in fills.items()} == {
        **{f: 0 for f in FILL_TYPES}, FILL_STATEMENT: 1, FILL_EXPRESSION: 2, FILL_BLOCK: 1, FILL_SPAN: 1}
    assert fills[FILL_EXPRESSION][2:] == ["407", "35.0"]  # the paper's count and share
    mix = table_rows(text, "| level | samples | % | paper | paper % | difference (pp) |")
    assert mix["random"] == ["1", "20.0", "114", "9.8", "+10.2"] and mix["block"][:2] == ["1", "20.0"]
    assert table_rows(text, "| repository | samples |") == {"alpha": ["2"], "beta": ["3"]}
    dist = table_rows(text, "| measure | n | min | p10 | median | p90 | max |")
    chars = sorted(len(s.middle_code) for s in SAMPLES)
    assert dist["middle characters"][:2] == ["5", str(chars[0])] and dist["middle characters"][-1] == str(chars[-1])
    ctx = [sum(pretokens(c.code) for c in s.context_code) for s in SAMPLES]
    assert dist["context tokens (every ranked file)"][-1] == str(max(ctx))
    assert dist["judged tests per sample"][-1] == "2" and dist["ground-truth run time (s)"][:2] == ["5", "0.50"]
    assert dist["share of mutants killed (samples with mutants)"][0] == "0"  # these samples had no mutants judged
    drops = table_rows(text, "| stage | reason | dropped | candidates | share |")
    assert drops["verification"] in (["gt_failed", "1", "20", "5.0%"], ["no_tests", "0", "20", "0.0%"])
    assert "45.0% of the verified candidates passed with a null fill" in text


def test_charts_are_written_and_linked_from_the_card(published):
    folder, summary = published
    text = (folder / "README.md").read_text(encoding="utf-8")
    charts = sorted(p.name for p in (folder / "charts").iterdir())
    assert charts == ["drops.png", "fill_types.png", "gt_run_time.png", "judged_tests.png", "middle_length.png",
                      "mix.png", "prompt_tokens.png", "repositories.png"]
    assert summary["charts"] == [f"charts/{c}" for c in sorted(charts, key=lambda c: summary["charts"].index(
        f"charts/{c}"))]
    for name in charts:
        data = (folder / "charts" / name).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 2000
        assert f"](charts/{name})" in text  # a relative link: the Hub renders it in the card


def no_output(tmp_path, name="ds"):
    leftovers = [p.name for p in tmp_path.iterdir() if p.name == name or p.name.startswith(f".{name}.")]
    assert leftovers == []


def rewrite_line(path: Path, index: int, change, ensure_ascii=False):
    lines = path.read_text(encoding="utf-8").splitlines()
    data = json.loads(lines[index])
    change(data)
    lines[index] = json.dumps(data, ensure_ascii=ensure_ascii)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


BAD_INPUTS = {
    "missing": (lambda out: (out / "samples.jsonl").unlink(), r"samples\.jsonl: not found"),
    "empty": (lambda out: (out / "samples.jsonl").write_text("\n"), r"samples\.jsonl: no records"),
    "bad_json": (lambda out: (out / "samples.jsonl").write_text("{oops\n"), r"samples\.jsonl:1: not valid JSON"),
    "seed_type": (lambda out: rewrite_line(out / "samples.jsonl", 1, lambda d: d.update(seed="7")),
                  r"samples\.jsonl:2: .*field seed must be an integer"),
    "context_path": (lambda out: rewrite_line(out / "samples.jsonl", 0, lambda d: d["context_code"][0].update(path=3)),
                     r"samples\.jsonl:1: field context_code\[0\]\.path must be UTF-8 text, got int 3"),
    "surrogate": (lambda out: rewrite_line(out / "samples.jsonl", 0, lambda d: d["context_code"][1].update(
        code="x = '\ud800'"), ensure_ascii=True),
        r"samples\.jsonl:1: field context_code\[1\]\.code must be UTF-8 text"),
    "not_a_record": (lambda out: (out / "samples.jsonl").write_text("[1, 2]\n"),
                     r"samples\.jsonl:1: .*expected a mapping"),
    "missing_field": (lambda out: rewrite_line(out / "samples.jsonl", 2, lambda d: d.pop("env_key")),
                      r"samples\.jsonl:3: .*missing field\(s\) env_key"),
    "duplicate": (lambda out: (out / "samples.jsonl").write_text((out / "samples.jsonl").read_text() * 2),
                  r"samples\.jsonl:6: duplicate sample_id"),
    "no_report": (lambda out: (out / "build_report.json").unlink(), r"build_report\.json: cannot read"),
    "no_repositories": (lambda out: (out / "repositories.jsonl").unlink(), r"repositories\.jsonl: not found"),
    "repo_key_changed": (lambda out: rewrite_line(out / "repositories.jsonl", 0, lambda d: d.update(lock=["x==1"])),
                         r"repository record 'alpha': env_key \w+ is not the hash"),
    "repo_missing": (lambda out: rewrite_line(out / "repositories.jsonl", 1, lambda d: d.update(repo_name="other")),
                     r"repositories\.jsonl: no repository record for 'beta' \(sample \w+\)"),
    "repo_bad_field": (lambda out: rewrite_line(out / "repositories.jsonl", 0, lambda d: d.update(python="3")),
                       r"repositories\.jsonl:1: .*field python must be MAJOR\.MINOR"),
    "stale_report": (lambda out: (out / "samples.jsonl").write_text(
        "".join((out / "samples.jsonl").read_text(encoding="utf-8").splitlines(True)[1:]), encoding="utf-8"),
                     r"samples_fingerprint does not match"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_raises_and_writes_nothing(tmp_path, case):
    from execrepobench_dataset.publish import PublishError, publish

    change, message = BAD_INPUTS[case]
    out = write_build(tmp_path / "OUT")
    change(out)
    with pytest.raises(PublishError, match=message):
        publish(out, tmp_path / "ds")
    no_output(tmp_path)


def test_bad_instruct_record_raises(tmp_path):
    from execrepobench_dataset.publish import PublishError, publish

    inst = write_instruct(tmp_path / "INSTRUCT")
    rewrite_line(inst / "instruct.jsonl", 1, lambda d: d["messages"].reverse())
    with pytest.raises(PublishError, match=r"instruct\.jsonl:2: .*system, user, assistant"):
        publish(write_build(tmp_path / "OUT"), tmp_path / "ds", instruct_dir=inst)
    no_output(tmp_path)


def test_bad_config_name_is_named(tmp_path, monkeypatch):
    from execrepobench_dataset import publish as mod

    assert mod.validate_config_name("exec_repo_bench-2") == "exec_repo_bench-2"
    for bad in ("exec repo bench", "_private", "a/b", ""):
        with pytest.raises(mod.PublishError, match=f"config name '{bad}'"):
            mod.validate_config_name(bad)
    monkeypatch.setattr(mod, "SAMPLES_CONFIG", "exec.repo.bench")
    with pytest.raises(mod.PublishError, match=r"config name 'exec\.repo\.bench' is not accepted"):
        mod.publish(write_build(tmp_path / "OUT"), tmp_path / "ds")
    no_output(tmp_path)


def test_refuses_to_overwrite_a_non_empty_folder(tmp_path):
    from execrepobench_dataset.publish import PublishError, publish

    build = write_build(tmp_path / "OUT")
    (tmp_path / "ds").mkdir()
    publish(build, tmp_path / "ds")  # an empty folder is fine
    with pytest.raises(PublishError, match="overwrite=True"):
        publish(build, tmp_path / "ds")
    (tmp_path / "ds" / "keep.txt").write_text("mine")
    with pytest.raises(PublishError, match="overwrite=True"):
        publish(build, tmp_path / "ds")
    assert (tmp_path / "ds" / "keep.txt").read_text() == "mine"
    publish(build, tmp_path / "ds", overwrite=True)
    assert not (tmp_path / "ds" / "keep.txt").exists() and (tmp_path / "ds" / "README.md").is_file()
    with pytest.raises(PublishError, match="must not contain the input"):
        publish(build, tmp_path, overwrite=True)
    assert (build / "samples.jsonl").is_file()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    with pytest.raises(PublishError, match="not a published dataset folder"):  # overwrite never eats other folders
        publish(build, tmp_path / "notes", overwrite=True)
    assert (tmp_path / "notes" / "todo.txt").read_text() == "mine"


def test_package_import_is_lazy_and_exports():
    code = ("import sys, execrepobench_dataset as d; assert 'datasets' not in sys.modules; "
            "assert 'pyarrow' not in sys.modules; "
            "from execrepobench_dataset.publish import PublishError; assert callable(d.publish); "
            "assert d.FEATURES == d.features(); assert 'datasets' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


class RecordingApi:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def record(*args, **kwargs):
            if name == "upload_folder":  # what would be uploaded, at the time of the call
                root = Path(kwargs["folder_path"])
                kwargs = {**kwargs, "files": sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                                                    if p.is_file())}
            self.calls.append((name, args, kwargs))
            return f"commit:{name}"
        return record


def test_push_to_hub_calls(published, monkeypatch):
    import huggingface_hub

    from execrepobench_dataset.publish import push_to_hub

    folder, _ = published
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_from_login")
    api = RecordingApi()
    assert push_to_hub(folder, "me/execrepobench", private=True, revision="v1", api=api) == "commit:upload_folder"
    files = ["README.md", "LICENSES.md", *(p.relative_to(folder).as_posix() for p in (folder / "charts").iterdir()),
             *(f"data/exec_repo_bench/test-0000{i}-of-00005.parquet" for i in range(5)),
             *(f"data/repo_instruct/train-0000{i}-of-00003.parquet" for i in range(3)),
             *(f"data/repositories/train-0000{i}-of-00002.parquet" for i in range(2))]
    assert api.calls == [
        ("create_repo", ("me/execrepobench",), {"repo_type": "dataset", "private": True, "exist_ok": True,
                                                "token": "hf_from_login"}),
        ("create_branch", ("me/execrepobench",), {"branch": "v1", "repo_type": "dataset", "exist_ok": True,
                                                  "token": "hf_from_login"}),
        ("upload_folder", (), {"folder_path": str(folder), "repo_id": "me/execrepobench", "repo_type": "dataset",
                               "revision": "v1", "commit_message": "Publish ExecRepoBench",
                               "token": "hf_from_login", "files": sorted(files)})]
    api = RecordingApi()
    push_to_hub(folder, "me/execrepobench", token="hf_explicit", api=api)
    assert [c[0] for c in api.calls] == ["create_repo", "upload_folder"]  # no branch for main
    assert api.calls[0][2]["private"] is False and api.calls[1][2]["revision"] is None
    assert all(c[2]["token"] == "hf_explicit" for c in api.calls)


def test_push_without_token_raises_before_any_call(published, monkeypatch):
    import huggingface_hub

    from execrepobench_dataset.publish import PublishError, push_to_hub

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    api = RecordingApi()
    with pytest.raises(PublishError, match="hf auth login.*HF_TOKEN"):
        push_to_hub(published[0], "me/execrepobench", api=api)
    assert api.calls == []
    with pytest.raises(PublishError, match="not a published dataset folder"):
        push_to_hub(published[0] / "data", "me/execrepobench", token="t", api=api)
    with pytest.raises(PublishError, match="owner/name"):
        push_to_hub(published[0], "me/exec repo", token="t", api=api)
    assert api.calls == []


def test_reference_samples_are_published_without_an_empty_context_column(tmp_path, offline_hf):
    """Samples that name their context by path: no `context_code` column (it would always be empty); every
    way back gives the records again, and `materialise_context=True` fills the code in from `repositories`."""
    import dataclasses

    import datasets
    import pyarrow.parquet as pq

    from execrepobench_dataset import load_samples
    from execrepobench_dataset.load import open_dataset
    from execrepobench_dataset.publish import publish
    from execrepobench_metric.inputs import check_record

    files = (ContextFile("alpha/__init__.py", "from .core import add\n"), ContextFile("alpha/util.py", "U = 1\n"))
    records = [dataclasses.replace(RECORDS[0], files=files), RECORDS[1]]
    by_ref = [dataclasses.replace(s, context_code=(), context_paths=("alpha/util.py", "alpha/__init__.py")[:len(
        s.context_code)], context_scores=(2.0, 1.0)[:len(s.context_code)]) if s.repo_name == "alpha"
              else dataclasses.replace(s, context_code=()) for s in SAMPLES]
    build = write_build(tmp_path / "OUT", samples=by_ref)
    write_repo_records(records, build / "repositories.jsonl")
    summary = publish(build, tmp_path / "ds")
    shard = tmp_path / "ds/data/exec_repo_bench/test-00000-of-00001.parquet"
    assert "context_code" not in pq.read_schema(shard).names and "context_paths" in pq.read_schema(shard).names
    meta = card_meta(tmp_path / "ds")
    info = next(i for i in meta["dataset_info"] if i["config_name"] == "exec_repo_bench")
    assert "context_code" not in {f["name"] for f in info["features"]}
    rows = list(datasets.load_dataset(str(tmp_path / "ds"), "exec_repo_bench", split="test",
                                      cache_dir=str(offline_hf / "c")))
    assert all("context_code" not in r for r in rows)
    expected = sorted(by_ref, key=lambda s: s.sample_id)
    assert [Sample.from_dict(r) for r in rows] == expected
    assert load_samples(str(tmp_path / "ds"), cache_dir=str(offline_hf / "c")) == expected
    assert open_dataset(tmp_path / "ds").fingerprint == summary["fingerprint"]
    materialised = load_samples(str(tmp_path / "ds"), materialise_context=True, cache_dir=str(offline_hf / "c"))
    first = next(s for s in materialised if s.sample_id == SAMPLES[0].sample_id)
    assert [c.path for c in first.context_code] == ["alpha/util.py", "alpha/__init__.py"]
    assert first.context_code[0].code == "U = 1\n"
    # the metric's input check takes the rows as they come from load_dataset (these rows' test commands are
    # not the builder's: that is all it finds)
    assert {field for r in rows for field, _ in check_record(r, "suite")} == {"test_command"}
    assert {field for r in rows for field, _ in check_record({**r, "context_code": 3}, "suite")} == {
        "test_command", "context_code"}
    text = (tmp_path / "ds" / "README.md").read_text()
    assert "no `context_code` column" in text and "materialise_context=True" in text


def test_card_links_licenses_and_evaluate_example(tmp_path):
    from execrepobench_dataset.publish import PublishError, publish

    build = write_build(tmp_path / "OUT")
    publish(build, tmp_path / "ds", repo_id="me/execrepobench", metric_space="me/erb_metric",
            code_url="https://example.org/execrepobench")
    text = (tmp_path / "ds" / "README.md").read_text()
    for needle in ("https://huggingface.co/spaces/me/erb_metric", "https://huggingface.co/datasets/me/execrepobench",
                   "https://example.org/execrepobench", 'evaluate.load("me/erb_metric")',
                   'load_dataset("me/execrepobench", "exec_repo_bench", split="test")', "HF_ALLOW_CODE_EVAL=1",
                   "execrepobench run --dataset me/execrepobench", "Declared license: `other`"):
        assert needle in text, needle
    assert table_rows(text, "| license | repositories |") == {
        "MIT": ["alpha"], "unknown (not stated in the package metadata)": ["beta"]}
    licenses = (tmp_path / "ds" / "LICENSES.md").read_text()
    assert table_rows(licenses, "| repository | pinned source | license |") == {
        "alpha": [f"`{PINNED['alpha']}`", "MIT"], "beta": [f"`{PINNED['beta']}`", "unknown"]}
    publish(build, tmp_path / "ds2", license="apache-2.0")  # one declared license, when the code allows it
    assert card_meta(tmp_path / "ds2")["license"] == "apache-2.0" and "license_name" not in card_meta(tmp_path / "ds2")
    with pytest.raises(PublishError, match="metric_space 'erb' is not of the form owner/name"):
        publish(build, tmp_path / "ds3", metric_space="erb")


def test_statistics_count_the_share_of_mutants_killed():
    from dataclasses import replace

    from execrepobench_dataset.stats import compute_statistics, distribution_rows

    a, b, c = SAMPLES[:3]
    samples = [replace(a, mutants_killed=2, mutants_total=3), replace(b, mutants_killed=1, mutants_total=1), c]
    stats = compute_statistics(samples, RECORDS, {})
    assert stats.mutant_kill == (0.667, 1.0)  # a sample without mutants is not counted
    row = {r[0]: r[1:] for r in distribution_rows(stats)}["share of mutants killed (samples with mutants)"]
    assert row[0] == "2" and row[-1] in ("1", "1.0", "1.00")
