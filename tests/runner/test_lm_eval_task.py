"""The lm-evaluation-harness side, with lm-eval itself (no mock): results.json read by lm-eval's table printer, and
the shipped task (runner/lm_eval_task/) run by `lm_eval` with its own hf backend on the tiny local model
(tests/model_fixture.py), judged by our metric, scoring what `execrepobench evaluate` scores for the same
generations.  Runs in the model environment (scripts/test.sh part 2), where it FAILS when lm-eval is missing:

    .venv-models/bin/python -m pytest tests/runner/test_lm_eval_task.py
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import require

require("lm_eval", at_import=True)  # skipped on a developer machine without it; FAILS in part 2 of scripts/test.sh

from model_fixture import NAME, make_tiny_model  # noqa: E402

from execrepobench.runner.lm_eval_results import FILL_SLUGS, results_document  # noqa: E402


def test_results_json_is_read_by_lm_evals_table_printer(tmp_path):
    from lm_eval.utils import make_table

    span = "Random Span Completion"
    details = [{"sample_id": s, "fill_type": span, "passed": p, "es": e}
               for s, p, e in (("a", True, 1.0), ("b", False, 0.25), ("c", True, 0.5))]
    metrics = {"pass@1": 2 / 3, "es": 1.75 / 3, f"pass@1/{span}": 2 / 3, f"es/{span}": 1.75 / 3, "n_samples": 3,
               "run": {"backend": "vllm", "model": "m", "n": 1}}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results_document(metrics, details)))
    table = make_table(json.loads(path.read_text()))
    row = next(line for line in table.splitlines() if "|pass@1" in line.replace(" ", ""))
    assert "0.6667" in row and "±" in row and "0.3333" in row  # the score and its stderr
    assert "execrepobench" in table and "es_random_span" in table


@pytest.mark.sandbox
def test_lm_eval_task_scores_equal_execrepobench_on_the_same_generations(built_minirepo, tmp_path):
    from lm_eval.utils import make_table

    from execrepobench.runner.cli import main
    from execrepobench.runner.cli_lm_eval import TASK_FOLDER
    from execrepobench.runner.postprocess import clean
    from execrepobench.runner.templates import get_template

    model = make_tiny_model(tmp_path / NAME)
    samples = built_minirepo["out"] / "samples.jsonl"
    out = tmp_path / "lm_eval_out"
    env = {**os.environ, "HF_ALLOW_CODE_EVAL": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "lm_eval", "run", "--model", "hf",
               "--model_args", f"pretrained={model},dtype=float32", "--tasks", "execrepobench",
               "--include_path", str(TASK_FOLDER), "--metadata", json.dumps({"dataset": str(samples),
                                                                             "max_new_tokens": 16}),
               "--gen_kwargs", "max_gen_toks=16", "--batch_size", "2", "--output_path", str(out), "--log_samples",
               "--confirm_run_unsafe_code"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    results_file = next(out.rglob("results_*.json"))
    theirs = json.loads(results_file.read_text())
    make_table(theirs)  # lm-eval reads its own output
    scores = theirs["results"]["execrepobench"]
    logged = [json.loads(line) for line in next(out.rglob("samples_execrepobench_*.jsonl")).read_text().splitlines()]
    assert len(logged) == sum(1 for _ in samples.open()) and len(logged) >= 2

    # the same generations, cut at the template's stops as the task cuts them, judged by `execrepobench evaluate`
    stops = get_template("qwen2.5-coder").stop
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"sample_id": rec["doc"]["sample_id"],
                                         "completion": clean(rec["resps"][0][0], stops)}) + "\n" for rec in logged))
    assert main(["evaluate", "--samples", str(samples), "--predictions", str(preds), "--out", str(tmp_path / "ev"),
                 "--allow-exec", "--no-progress"]) == 0
    ours = json.loads((tmp_path / "ev" / "results.json").read_text())["results"]["execrepobench"]
    metrics = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert scores["pass@1,none"] == pytest.approx(metrics["pass@1"]) == pytest.approx(ours["pass@1,none"])
    assert scores["es,none"] == pytest.approx(metrics["es"])
    for key, value in ours.items():  # every score and stderr, per fill type too, as lm-eval computed them
        if key != "alias":
            assert scores[key] == (value if isinstance(value, str) else pytest.approx(value)), key
    fills = {rec["doc"]["fill"] for rec in logged}
    assert fills <= set(FILL_SLUGS.values()) and all(f"pass@1_{f},none" in scores for f in fills)
