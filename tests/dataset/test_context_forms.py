"""Context stored once per repository: samples by reference, the `repositories` config with the files, the one
helper that reads either form, and prompts equal for both forms."""
import dataclasses
import hashlib
import json

import pytest

from conftest import make_sample
from execrepobench.runner.prompts import build_prompt_for_sample
from execrepobench.runner.templates import SampleParts
from execrepobench_dataset.context import (ContextResolver, ContextUnavailable, by_reference, materialise,
                                           ranked_context)
from execrepobench_dataset.record import FILL_BLOCK, FILL_EXPRESSION, ContextFile, RecordError, Sample, write_jsonl
from execrepobench_dataset.repo_record import RepoRecord, environment_key, write_repo_records
from execrepobench_dataset.stats import pretokens, tokenizer_counter

SOURCE = "pypi:pkg==1.0#sha256=" + "e" * 64
LOCK = ("pytest==8.3.0",)
KEY = environment_key("3.11", SOURCE, LOCK)
FILES = {"pkg/__init__.py": "from .core import run\n", "pkg/core.py": "def run(x):\n    return helper(x) + 1\n",
         "pkg/util.py": "def helper(x):\n    '''ünïcode ☃'''\n    return x * 2\n" * 3,
         "tests/test_core.py": "from pkg import run\n\ndef test_run():\n    assert run(1) == 3\n"}
RECORD = RepoRecord(repo_name="pkg", repo_source=SOURCE, python="3.11", env_key=KEY, lock=LOCK,
                    test_command=("python", "-m", "pytest"), files=tuple(ContextFile(p, c) for p, c in sorted(
                        FILES.items())))


# every sample below is of this repository and judged by its one test
PKG = {"repo_name": "pkg", "repo_source": SOURCE, "env_key": KEY, "node_type": "x", "builder_version": "t",
       "test_command": ("python", "-m", "pytest"), "judged": ("tests/test_core.py::test_run",)}


def by_reference_to(*ranked):
    """The context fields of a sample that names its context by path: (path, score) pairs, best first."""
    return {"context_paths": tuple(p for p, _ in ranked), "context_scores": tuple(s for _, s in ranked)}


SAMPLES = [make_sample(file_name="pkg/core.py", middle="return helper(x) + 1", fill_type=FILL_EXPRESSION,
                       text=FILES["pkg/core.py"], **PKG,
                       **by_reference_to(("pkg/util.py", 1.5), ("pkg/__init__.py", 0.25), ("tests/test_core.py", 0.0))),
           make_sample(file_name="pkg/__init__.py", middle="from .core import run", fill_type=FILL_BLOCK,
                       text=FILES["pkg/__init__.py"], **PKG,
                       **by_reference_to(("pkg/core.py", 2.0), ("tests/test_core.py", 0.5), ("pkg/util.py", 0.0)))]


def test_ranked_context_reads_either_form_the_same():
    s = SAMPLES[0]
    want = (ContextFile("pkg/util.py", FILES["pkg/util.py"]), ContextFile("pkg/__init__.py", FILES["pkg/__init__.py"]),
            ContextFile("tests/test_core.py", FILES["tests/test_core.py"]))
    assert ranked_context(s, RECORD) == ranked_context(s, FILES) == ContextResolver([RECORD]).context(s) == want
    full = materialise(s, RECORD)
    assert full.context_code == want and ranked_context(full) == want  # materialised: needs no files
    assert by_reference(full) == s  # and back (paths and scores kept)
    assert by_reference(Sample.from_dict({**full.to_dict(), "context_paths": [], "context_scores": []})) \
        == Sample.from_dict({**s.to_dict(), "context_scores": [0.0, 0.0, 0.0]})
    with pytest.raises(ContextUnavailable, match="repository 'pkg'.*config `repositories`"):
        ranked_context(s)
    with pytest.raises(ContextUnavailable, match="no file 'pkg/util.py'"):
        ranked_context(s, {"pkg/__init__.py": ""})


@pytest.mark.parametrize("change, message", [
    ({"context_scores": [1.0]}, "context_scores has 1 entries for 3 context_paths"),
    ({"context_paths": ["pkg/core.py", "pkg/util.py", "x.py"]}, "distinct files other than 'pkg/core.py'"),
    ({"context_scores": [1.0, "a", 0.0]}, "context_scores must be a list of numbers"),
    ({"context_code": [{"path": "x.py", "code": ""}]}, "both forms given"),
])
def test_bad_context_fields_are_named(change, message):
    with pytest.raises(RecordError, match=message):
        Sample.from_dict({**SAMPLES[0].to_dict(), **change})


def test_repo_record_files_round_trip_and_checks():
    back = RepoRecord.from_dict(json.loads(json.dumps(RECORD.to_dict())))
    assert back == RECORD and back.file_map() == FILES and back.key_matches  # files are not part of the key
    for files, message in (([{"path": "b.py", "code": ""}, {"path": "a.py", "code": ""}], "sorted"),
                           ([{"path": "/abs.py", "code": ""}], "repo-relative"),
                           ([{"path": "a.py"}], "files must be a list")):
        with pytest.raises(RecordError, match=message):
            RepoRecord.from_dict({**RECORD.to_dict(), "files": files})


class CharTokenizer:
    """One token per character (the budgets cut, so both forms must give the same cut)."""

    def encode(self, text):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(chr(i) for i in ids)


@pytest.mark.parametrize("template", ["qwen2.5-coder", "starcoder2", "deepseek-coder", "chat", "continuation",
                                      "qwen2.5-coder-official", "chat-official"])
def test_prompt_is_the_same_for_both_context_forms(template):
    tok = CharTokenizer()
    for s in SAMPLES:
        full = materialise(s, RECORD)
        for budget in (4096, 60):  # whole context, then a cut one
            kw = {"max_context_tokens": budget, "max_tokens": 2048, "max_generation_tokens": 64}
            a = build_prompt_for_sample(template, s, tok, files=RECORD, **kw)
            b = build_prompt_for_sample(template, full, tok, **kw)
            assert a == b
            assert a.context_files >= 1
    assert SampleParts.from_sample(SAMPLES[0], FILES).context[0] == ("pkg/util.py", FILES["pkg/util.py"])
    with pytest.raises(ContextUnavailable):
        build_prompt_for_sample(template, SAMPLES[0], tok)  # by reference without the files: no silent empty context


def write_build(out, samples=SAMPLES):
    out.mkdir(parents=True)
    write_jsonl(samples, out / "samples.jsonl")
    write_repo_records([RECORD], out / "repositories.jsonl")
    report = {"builder_version": "t", "seed": 0, "manifest": "m.toml", "repos": [{"repo": "pkg", "status": "ok"}],
              "samples_fingerprint": hashlib.sha256((out / "samples.jsonl").read_bytes()).hexdigest()}
    (out / "build_report.json").write_text(json.dumps(report), encoding="utf-8")
    return out


def test_repositories_config_round_trip(tmp_path, offline_hf):
    """publish -> load_dataset every config offline -> RepoRecord with its files -> the samples' context."""
    import datasets

    from execrepobench_dataset import load_repositories, load_samples, open_dataset
    from execrepobench_dataset.publish import publish

    publish(write_build(tmp_path / "build"), tmp_path / "ds")
    cache = str(offline_hf / "c")
    for config, split in (("exec_repo_bench", "test"), ("repositories", "train")):
        assert datasets.load_dataset(str(tmp_path / "ds"), config, split=split, cache_dir=cache).num_rows >= 1
    (row,) = datasets.load_dataset(str(tmp_path / "ds"), "repositories", split="train", cache_dir=cache)
    assert RepoRecord.from_dict(row) == RECORD and load_repositories(str(tmp_path / "ds"), cache_dir=cache) == [RECORD]
    rows = load_samples(str(tmp_path / "ds"), cache_dir=cache)
    assert sorted(rows, key=lambda s: s.sample_id) == sorted(SAMPLES, key=lambda s: s.sample_id)
    assert all(not s.context_code and s.context_paths for s in rows)  # published by reference
    full = load_samples(str(tmp_path / "ds"), materialise_context=True, cache_dir=cache)
    assert [s.context_code for s in full] == [ranked_context(s, RECORD) for s in rows]
    opened = open_dataset(tmp_path / "ds")
    assert opened.repositories == (RECORD,) and opened.context(opened.samples[0]) == ranked_context(rows[0], RECORD)


def test_materialised_publication_is_self_contained_and_larger(tmp_path, offline_hf):
    from execrepobench_dataset.load import load_samples
    from execrepobench_dataset.publish import publish

    build = write_build(tmp_path / "build")
    ref = publish(build, tmp_path / "ref")
    mat = publish(build, tmp_path / "mat", context="materialised")
    assert ref["fingerprint"] == mat["fingerprint"]  # the same dataset, in two forms
    assert mat["configs"]["exec_repo_bench"]["bytes"] > ref["configs"]["exec_repo_bench"]["bytes"]
    rows = load_samples(str(tmp_path / "mat"), cache_dir=str(offline_hf / "c"))
    assert all(s.context_code == ranked_context(by_reference(s), RECORD) for s in rows)
    card = (tmp_path / "mat" / "README.md").read_text(encoding="utf-8")
    assert "stored materialised" in card and "stored by reference" in (tmp_path / "ref" / "README.md").read_text()
    inline = sum(len(p.encode()) + len(FILES[p].encode()) for s in SAMPLES for p in s.context_paths)
    assert ref["materialised_context_bytes"] == mat["materialised_context_bytes"] == inline
    assert f"add {inline / 1024:.1f} KiB of text" in (tmp_path / "ref" / "README.md").read_text()


def test_publish_refuses_a_context_path_the_repository_lacks(tmp_path):
    from execrepobench_dataset.publish import PublishError, publish

    bad = dataclasses.replace(SAMPLES[0], **by_reference_to(("pkg/gone.py", 1.0)))
    with pytest.raises(PublishError, match="context path 'pkg/gone.py' is not among the files of repository 'pkg'"):
        publish(write_build(tmp_path / "build", [bad]), tmp_path / "ds")


def test_statistics_count_tokens_with_a_tokenizer_made_here(tmp_path):
    """The statistics' tokens: the default pre-token count, or a real tokenizer.json (a tiny BPE trained here)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    from execrepobench_dataset.stats import compute_statistics

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(list(FILES.values()) * 5, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["[UNK]"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    tok.save(str(tmp_path / "tokenizer.json"))
    count = tokenizer_counter(tmp_path)
    assert count("def helper(x):") == len(tok.encode("def helper(x):").ids) > 0
    stats = compute_statistics(SAMPLES, [RECORD], {}, count, "tiny BPE")
    assert stats.context_tokens[0] == sum(count(FILES[p]) for p in SAMPLES[0].context_paths)
    assert stats.in_file_tokens[1] == count(SAMPLES[1].prefix_code) + count(SAMPLES[1].suffix_code)
    assert stats.tokenizer == "tiny BPE"
    default = compute_statistics(SAMPLES, [RECORD], {})
    assert default.context_tokens[0] == sum(pretokens(FILES[p]) for p in SAMPLES[0].context_paths)



def test_default_token_count_is_qwen2s_pre_tokenizer_split():
    """`pretokens` counts the pieces of Qwen2's split regex, as the `tokenizers` library splits them."""
    from pathlib import Path

    from model_fixture import QWEN2_SPLIT
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False)
    texts = [*FILES.values(), "def get_user(x):\n    return 12", "x = 'it''s'  # I'LL\r\n\tß_π = 3.14\n\n  \n",
             *(p.read_text(encoding="utf-8") for p in sorted(Path(__file__).parents[2].glob("builder/*.py"))[:5])]
    for text in texts:
        assert pretokens(text) == len(split.pre_tokenize_str(text)), text[:40]
