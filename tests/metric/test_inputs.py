"""Inputs are checked before anything is cast or run: through `api.compute`, through `evaluate.load(...)`
(in-repo and published module) and through the CLI.  Every bad item is named (index, sample id, field)
and nothing is judged: the journal and the result cache stay empty."""
import json
from pathlib import Path

import pytest

from conftest import make_sample
from execrepobench_dataset.record import ContextFile, Sample, write_jsonl
from execrepobench_metric import api
from execrepobench_metric.execution.pytest_run import COMMAND_PREFIX
from execrepobench_metric.inputs import InputError, canonical_reference, check_inputs

METRIC_DIR = Path(__file__).parents[2] / "execrepobench_metric"
PREFIX, MIDDLE, SUFFIX = "def f(x):\n    ", "return x + 1", "\n"


def record(sample_id="s0", **changes):
    """A reference as a caller passes it: a valid sample's mapping, then `changes` (valid or not)."""
    sample = make_sample(file_name="r/m.py", middle=MIDDLE, judged=("tests/test_m.py::test_f",), prefix_code=PREFIX,
                         suffix_code=SUFFIX, sample_id=sample_id, context_code=(ContextFile("r/a.py", "A = 1\n"),),
                         env_key="e" * 16, builder_version="t", test_command=(*COMMAND_PREFIX, "--", "tests"))
    return {**sample.to_dict(), **changes}


def without(name, **changes):
    rec = record(**changes)
    del rec[name]
    return rec


# (predictions, references, the line every InputError must contain)
CASES = {
    "prediction 42": ([42], [record()], "prediction 0 (sample s0), field predictions: expected a string or a "
                                        "non-empty list of strings, got int"),
    "row [gt, 7]": ([[MIDDLE, 7]], [record()], "prediction 0 (sample s0), field predictions: expected a list of "
                                               "strings: completion 1 is int"),
    "empty row": ([[]], [record()], "prediction 0 (sample s0), field predictions: an empty list"),
    "None": ([None], [record()], "prediction 0 (sample s0), field predictions: expected a string"),
    "no env_key": ([MIDDLE], [without("env_key")], "reference 0 (sample s0), field env_key: missing"),
    "empty env_key": ([MIDDLE], [record(env_key=" ")], "reference 0 (sample s0), field env_key: must not be empty"),
    "no judged_tests": ([MIDDLE], [without("judged_tests")], "reference 0 (sample s0), field judged_tests: missing"),
    "empty judged_tests": ([MIDDLE], [record(judged_tests=[])], "reference 0 (sample s0), field judged_tests: empty"),
    "no test_command": ([MIDDLE], [without("test_command")], "reference 0 (sample s0), field test_command: missing"),
    "foreign test_command": ([MIDDLE], [record(test_command=["bash", "-c", "exit 0"])],
                             "reference 0 (sample s0), field test_command: test command 'bash -c exit 0' does not "
                             "start with"),
    "test_command text": ([MIDDLE], [record(test_command="python -m pytest")],
                          "reference 0 (sample s0), field test_command: must be a list of strings, got str"),
    "code field type": ([MIDDLE], [record(prefix_code=3)], "reference 0 (sample s0), field prefix_code: must be a "
                                                           "string, got int"),
    "fill_type": ([MIDDLE], [record(fill_type="Random Line")], "reference 0 (sample s0), field fill_type: 'Random "
                                                                "Line' is not one of"),
    "seed type": ([MIDDLE], [record(seed="0")], "reference 0 (sample s0), field seed: must be an integer"),
    "context_code": ([MIDDLE], [record(context_code=["a.py"])], "reference 0 (sample s0), field context_code"),
    "unknown field": ([MIDDLE], [record(extra=1)], "reference 0 (sample s0), field extra: unknown field"),
    "offsets": ([MIDDLE], [record(middle_end_byte=3)], "reference 0 (sample s0), field record: record 's0': middle "
                                                        "byte offsets"),
    "reference 7": ([MIDDLE], [7], "reference 0, field references: expected a sample record"),
    "bad JSON": ([MIDDLE], ["{not json"], "reference 0, field references: not valid JSON"),
    "id, no dataset": ([MIDDLE], ["s0"], "reference 0 (sample s0), field sample_id: is a sample id, but no dataset="),
    "lengths": ([MIDDLE, MIDDLE], [record()], "field predictions: 2 prediction(s) for 1 reference(s)"),
    "nothing": ([], [], "input, field references: no samples given"),
    "predictions text": (MIDDLE, [record()], "input, field predictions: must be a list (one entry per sample), got str"),
}


@pytest.fixture()
def tmp_cache(tmp_path, monkeypatch):
    """Own result cache and Hub caches; the journal path; both must stay absent after a refused call."""
    monkeypatch.setenv("EXECREPOBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    return tmp_path


def assert_nothing_ran(tmp_path):
    assert not (tmp_path / "journal.jsonl").exists()
    assert not (tmp_path / "cache" / "results").exists()


@pytest.mark.parametrize("case", sorted(CASES))
def test_api_refuses_bad_input_before_running(case, tmp_cache):
    preds, refs, expected = CASES[case]
    with pytest.raises(InputError) as info:
        api.compute(preds, refs, allow_exec=True, journal=tmp_cache / "journal.jsonl", progress=False)
    assert expected in str(info.value), str(info.value)
    assert info.value.problems and all(p.field for p in info.value.problems)
    assert_nothing_ran(tmp_cache)


def test_every_problem_is_listed_at_once(tmp_cache):
    refs = [record("a"), without("env_key", sample_id="b"), record("c", judged_tests=[])]
    with pytest.raises(InputError) as info:
        api.compute([MIDDLE, MIDDLE, 42], refs, allow_exec=True, journal=tmp_cache / "journal.jsonl")
    where = sorted((p.kind, p.index, p.sample_id, p.field) for p in info.value.problems)
    assert where == [("prediction", 2, "c", "predictions"), ("reference", 1, "b", "env_key"),
                     ("reference", 2, "c", "judged_tests")]
    assert_nothing_ran(tmp_cache)


def test_suite_selection_needs_no_judged_tests_and_k_is_checked():
    completions, samples = check_inputs([MIDDLE, [MIDDLE, "pass"]], [record(judged_tests=[]), json.dumps(record("t"))],
                                        test_selection="suite")
    assert completions == [[MIDDLE], [MIDDLE, "pass"]] and [s.sample_id for s in samples] == ["s0", "t"]
    with pytest.raises(InputError, match="field k: must be a non-empty list of positive integers"):
        check_inputs([MIDDLE], [record()], k=[0])
    with pytest.raises(InputError, match="field test_selection"):
        check_inputs([MIDDLE], [record()], test_selection="all")


def test_sample_ids_resolve_through_the_dataset(tmp_path):
    write_jsonl([Sample.from_dict(record("a")), Sample.from_dict(record("b", judged_tests=[]))], tmp_path / "samples.jsonl")
    _, samples = check_inputs([MIDDLE], ["a"], dataset=tmp_path, load_dataset=api.samples_by_id)
    assert samples[0].sample_id == "a"
    with pytest.raises(InputError) as info:  # a stored sample is checked like any record
        check_inputs([MIDDLE, MIDDLE], ["b", "zz"], dataset=tmp_path, load_dataset=api.samples_by_id)
    assert [(p.index, p.sample_id, p.field) for p in info.value.problems] == [(0, "b", "judged_tests"),
                                                                             (1, "zz", "sample_id")]
    with pytest.raises(InputError, match="reference 0 \\(sample a\\), field sample_id: dataset .* could not be read"):
        check_inputs([MIDDLE], ["a"], dataset=tmp_path / "missing", load_dataset=api.samples_by_id)


def test_canonical_reference_round_trips():
    sample = Sample.from_dict(record())
    for ref in (sample, record(), json.dumps(record())):
        assert Sample.from_dict(json.loads(canonical_reference(ref))) == sample
    assert canonical_reference("some-id") == "some-id"


@pytest.fixture(scope="module")
def published_module(tmp_path_factory):
    from execrepobench_metric.hub_module import write_metric_folder

    return write_metric_folder(tmp_path_factory.mktemp("hub"))


@pytest.mark.parametrize("which", ["in-repo", "published"])
@pytest.mark.parametrize("case", ["prediction 42", "row [gt, 7]", "no env_key", "no judged_tests", "no test_command",
                                  "reference 7", "lengths"])
def test_evaluate_module_checks_raw_inputs_before_casting(which, case, tmp_cache, published_module):
    import evaluate

    metric = evaluate.load(str(METRIC_DIR if which == "in-repo" else published_module))
    preds, refs, expected = CASES[case]
    with pytest.raises(InputError) as info:
        metric.compute(predictions=preds, references=refs, allow_exec=True, journal=str(tmp_cache / "journal.jsonl"))
    assert expected in str(info.value), str(info.value)
    assert_nothing_ran(tmp_cache)


def test_evaluate_add_batch_names_items_across_batches(tmp_cache):
    import evaluate

    metric = evaluate.load(str(METRIC_DIR))
    metric.add_batch(predictions=[MIDDLE], references=[record()])
    with pytest.raises(InputError, match=r"prediction 1 \(sample t\), field predictions: expected a list of strings"):
        metric.add_batch(predictions=[[MIDDLE, 7]], references=[record("t")])
    with pytest.raises(InputError, match=r"reference 1 \(sample u\), field env_key: missing"):
        metric.add(prediction=MIDDLE, reference=without("env_key", sample_id="u"))
    metric.add(prediction=MIDDLE, reference="t")  # an id: checked at compute, against dataset=
    with pytest.raises(InputError, match=r"reference 1 \(sample t\), field sample_id: is a sample id, but no dataset"):
        metric.compute(allow_exec=True, journal=str(tmp_cache / "journal.jsonl"))
    assert_nothing_ran(tmp_cache)


def test_cli_evaluate_exits_2_on_bad_predictions(tmp_path, tmp_cache, capsys):
    from execrepobench.runner.cli import main

    write_jsonl([Sample.from_dict(record("a")), Sample.from_dict(record("b"))], tmp_path / "samples.jsonl")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"sample_id": "a", "completion": 42}) + "\n"
                     + json.dumps({"sample_id": "b", "completion": MIDDLE}) + "\n")
    args = ["evaluate", "--samples", str(tmp_path / "samples.jsonl"), "--predictions", str(preds), "--out",
            str(tmp_path / "res"), "--allow-exec", "--no-progress"]
    assert main(args) == 2
    assert "prediction 0 (sample a), field predictions: expected a string" in capsys.readouterr().err
    preds.write_text(json.dumps({"sample_id": "a", "text": MIDDLE}) + "\n")
    assert main(args) == 2
    assert f"{preds}:1: " in capsys.readouterr().err
    assert not (tmp_path / "res" / "journal.jsonl").exists() and not (tmp_path / "cache" / "results").exists()
