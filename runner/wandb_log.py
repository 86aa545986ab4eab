"""`run --wandb PROJECT`: a finished run logged to Weights & Biases (optional: `pip install wandb`).

One wandb run per result folder: its config is metrics.json's `run` (what identifies the results) and
`run_record` (the machine); its summary every score (fractions; pass@k, es, per fill type, with the stderrs of
results.json); a table `samples` has one row per judged completion (sample id, fill type, completion index,
passed, reason, ES).  WANDB_MODE=offline logs to ./wandb/ without an account (`wandb sync` uploads it later).
"""
from __future__ import annotations

import json
from pathlib import Path

from execrepobench_dataset.errors import UsageError

ROW_FIELDS = ("sample_id", "fill_type", "repo_name", "completion_index", "passed", "reason", "es")


def log_run(run_dir: Path, project: str) -> str:
    """Log `run_dir` to `project`; returns the wandb run's directory (offline) or URL."""
    try:
        import wandb
    except ImportError:
        raise UsageError("--wandb needs the wandb package: pip install wandb (WANDB_MODE=offline to log "
                         "without an account)") from None
    run_dir = Path(run_dir)
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    scores = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    results_json = run_dir / "results.json"
    if results_json.is_file():
        entry = json.loads(results_json.read_text(encoding="utf-8"))["results"]["execrepobench"]
        scores.update({"lm_eval/" + k.split(",")[0]: v for k, v in entry.items() if isinstance(v, float)})
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    run = metrics.get("run") or {}
    name = str(run.get("model") or run.get("backend") or run_dir.name)
    with wandb.init(project=project, name=name.rstrip("/").split("/")[-1], job_type="evaluation",
                    config={"run": run, "run_record": metrics.get("run_record") or {}}) as logged:
        table = wandb.Table(columns=list(ROW_FIELDS), data=[[row.get(f) for f in ROW_FIELDS] for row in rows])
        logged.log({"samples": table})
        for key, value in scores.items():
            logged.summary[key] = value
        where = logged.url or logged.dir
    return str(where)
