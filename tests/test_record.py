import dataclasses

import pytest

from execrepobench_dataset.record import (FILL_BLOCK, FILL_TYPES, ContextFile, RecordError, Sample,
                                          make_sample_id, read_jsonl, write_jsonl)


def _sample(**over):
    prefix, middle, suffix = "def f(x):\n    ", "return x * 2  # é", "\n"
    base = dict(sample_id="s1", repo_name="r", repo_source="path:/r#tree=ab", file_name="pkg/m.py",
                prefix_code=prefix, middle_code=middle, suffix_code=suffix,
                context_code=(ContextFile("pkg/a.py", "A = 1\n"),), fill_type=FILL_BLOCK,
                node_type="return_statement", middle_start_byte=len(prefix.encode()),
                middle_end_byte=len((prefix + middle).encode()), env_key="k", seed=0, builder_version="0")
    base.update(over)
    return Sample(**base)


def test_six_paper_fill_types():
    assert FILL_TYPES == ("Random Span Completion", "Random Single-line Completion",
                          "Random Multi-line Completion", "grammar-based: expression",
                          "grammar-based: statement", "grammar-based: block")


def test_round_trip_jsonl(tmp_path):
    s = _sample(judged_tests=("t.py::a",))
    write_jsonl([s], tmp_path / "x.jsonl")
    (back,) = read_jsonl(tmp_path / "x.jsonl")
    assert back == s and back.original_code == s.prefix_code + s.middle_code + s.suffix_code


def test_byte_offsets_are_utf8_and_checked():
    with pytest.raises(RecordError, match="byte offsets"):
        _sample(middle_end_byte=_sample().middle_end_byte - 1)  # 'é' is two bytes


@pytest.mark.parametrize("over, match", [
    ({"fill_type": "Random Line"}, "fill_type"),
    ({"file_name": "/abs/m.py"}, "file_name"),
    ({"seed": "0"}, "seed"),
    ({"judged_tests": (1,)}, "judged_tests"),
])
def test_bad_fields_named(over, match):
    with pytest.raises(RecordError, match=match):
        _sample(**over)


def test_from_dict_names_missing_and_unknown_fields():
    d = _sample().to_dict()
    del d["middle_code"]
    with pytest.raises(RecordError, match="s1.*middle_code"):
        Sample.from_dict(d)
    d = dict(_sample().to_dict(), extra=1)
    with pytest.raises(RecordError, match="unknown field.*extra"):
        Sample.from_dict(d)


def test_corrupt_jsonl_line_named(tmp_path):
    p = tmp_path / "x.jsonl"
    write_jsonl([_sample()], p)
    p.write_text(p.read_text() + "{not json\n")
    with pytest.raises(RecordError, match=r"x.jsonl:2"):
        list(read_jsonl(p))


def test_sample_id_is_content_hash():
    a = make_sample_id("src", "f.py", "p", "m", "s", FILL_BLOCK)
    assert a == make_sample_id("src", "f.py", "p", "m", "s", FILL_BLOCK)
    assert a != make_sample_id("src", "f.py", "pm", "", "s", FILL_BLOCK)  # boundaries matter
    assert len({f.name for f in dataclasses.fields(Sample)}) >= 15
