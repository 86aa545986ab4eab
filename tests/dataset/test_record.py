import dataclasses

import pytest

from conftest import make_sample
from execrepobench_dataset.record import (FILL_BLOCK, FILL_TYPES, ContextFile, RecordError, Sample,
                                          make_sample_id, read_jsonl, write_jsonl)


# a valid record with a context file and non-ASCII code (its byte offsets differ from its character offsets)
S1 = make_sample(file_name="pkg/m.py", middle="return x * 2  # é", fill_type=FILL_BLOCK, prefix_code="def f(x):\n    ",
                 sample_id="s1", repo_source="path:/r#tree=ab", context_code=(ContextFile("pkg/a.py", "A = 1\n"),),
                 builder_version="0")


def test_six_paper_fill_types():
    assert FILL_TYPES == ("Random Span Completion", "Random Single-line Completion",
                          "Random Multi-line Completion", "grammar-based: expression",
                          "grammar-based: statement", "grammar-based: block")


def test_round_trip_jsonl(tmp_path):
    s = dataclasses.replace(S1, judged_tests=("t.py::a",))
    write_jsonl([s], tmp_path / "x.jsonl")
    (back,) = read_jsonl(tmp_path / "x.jsonl")
    assert back == s and back.original_code == s.prefix_code + s.middle_code + s.suffix_code


def test_byte_offsets_are_utf8_and_checked():
    with pytest.raises(RecordError, match="byte offsets"):
        dataclasses.replace(S1, middle_end_byte=S1.middle_end_byte - 1)  # 'é' is two bytes


@pytest.mark.parametrize("over, match", [
    ({"fill_type": "Random Line"}, "fill_type"),
    ({"file_name": "/abs/m.py"}, "file_name"),
    ({"seed": "0"}, "seed"),
    ({"judged_tests": (1,)}, "judged_tests"),
])
def test_bad_fields_named(over, match):
    with pytest.raises(RecordError, match=match):
        dataclasses.replace(S1, **over)


def test_from_dict_names_missing_and_unknown_fields():
    d = S1.to_dict()
    del d["middle_code"]
    with pytest.raises(RecordError, match="s1.*middle_code"):
        Sample.from_dict(d)
    d = dict(S1.to_dict(), extra=1)
    with pytest.raises(RecordError, match="unknown field.*extra"):
        Sample.from_dict(d)


def test_corrupt_jsonl_line_named(tmp_path):
    p = tmp_path / "x.jsonl"
    write_jsonl([S1], p)
    p.write_text(p.read_text() + "{not json\n")
    with pytest.raises(RecordError, match=r"x.jsonl:2"):
        list(read_jsonl(p))


def test_sample_id_is_content_hash():
    a = make_sample_id("src", "f.py", "p", "m", "s", FILL_BLOCK)
    assert a == make_sample_id("src", "f.py", "p", "m", "s", FILL_BLOCK)
    assert a != make_sample_id("src", "f.py", "pm", "", "s", FILL_BLOCK)  # boundaries matter
    assert len({f.name for f in dataclasses.fields(Sample)}) >= 15
