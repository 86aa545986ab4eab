"""The data commands end to end: build -> instruct -> publish -> load_dataset, through the CLI."""
import json

from execrepobench.runner.cli import main
from execrepobench_dataset.record import Sample, read_jsonl


def test_publish_round_trip_via_cli(built_minirepo, tmp_path, offline_hf):
    import datasets

    folder = tmp_path / "dataset"
    assert main(["publish", "--samples", str(built_minirepo["out"]), "--out", str(folder)]) == 0
    loaded = datasets.load_dataset(str(folder), "exec_repo_bench", split="test", cache_dir=str(tmp_path / "c"))
    published = sorted(read_jsonl(built_minirepo["out"] / "samples.jsonl"), key=lambda s: s.sample_id)
    assert [Sample.from_dict(r) for r in loaded] == published
    assert "context_code" not in loaded.column_names  # the builder names the context by path: no empty column
    # publishing again without --overwrite is refused and leaves the folder as it was
    before = sorted(p.read_bytes() for p in folder.rglob("*.parquet"))
    assert main(["publish", "--samples", str(built_minirepo["out"]), "--out", str(folder)]) == 2
    assert sorted(p.read_bytes() for p in folder.rglob("*.parquet")) == before


def test_instruct_command_refuses_benchmark_repo(built_minirepo, tmp_path, monkeypatch):
    from conftest import FIXTURES

    monkeypatch.setenv("EXECREPOBENCH_CACHE", str(tmp_path / "cache"))
    manifest = tmp_path / "instruct.toml"
    manifest.write_text(f'[[repo]]\nsource = "path:{FIXTURES / "minirepo"}"\nname = "minirepo"\n')
    out = tmp_path / "instruct"
    assert main(["instruct", "--manifest", str(manifest), "--out", str(out), "--no-progress",
                 "--benchmark-samples", str(built_minirepo["out"] / "samples.jsonl")]) == 0
    report = json.loads((out / "instruct_report.json").read_text())
    assert report["refused_repos"] and report["totals"]["records"] == 0


def test_import_official_bad_input_exit_code(tmp_path, capsys):
    bad = tmp_path / "x.jsonl"
    bad.write_text("{not json\n")
    assert main(["import-official", "--jsonl", str(bad), "--repos", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "x.jsonl:1" in capsys.readouterr().err
