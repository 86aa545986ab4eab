"""`execrepobench push-results RUN_DIR --repo OWNER/NAME` (and `run --push-results OWNER/NAME`): a run's
scores, run record and per-sample details uploaded to a Hub dataset, one config per run.

The dataset (the way the Open LLM Leaderboard publishes a "details" dataset per model) holds one folder per
run, `<config>/`, with the run's metrics.json (scores, `run`, `run_record`), results.json (lm-eval's layout,
with stderrs), results.jsonl (the verdict of every completion: the config's data, split `latest`),
generations.jsonl (prompts and completions) and latex.txt.  The config's name is the model's name made safe
and a hash of what identifies the run (metrics.json `run`, not the machine's record): pushing the same run
again replaces its folder, another run adds a config.  The card (README.md) lists every config of the
dataset with its headline scores and is rewritten on every push from the configs the dataset holds.

A folder of the dataset is a run folder again: `execrepobench compare` reads the downloaded `<config>/`
folders as it reads the run folders themselves.
"""
from __future__ import annotations

import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from .errors import PushResultsError

FILES = ("metrics.json", "results.json", "results.jsonl", "generations.jsonl", "latex.txt")
REQUIRED = ("metrics.json", "results.jsonl")
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def read_metrics(run_dir: Path) -> dict:
    missing = [name for name in REQUIRED if not (run_dir / name).is_file()]
    if missing:
        raise PushResultsError(f"{run_dir}: no {' or '.join(missing)}: not a finished `execrepobench run` / "
                               "`evaluate` folder (a run with harness errors has no scores to push)")
    return json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))


def config_name(metrics: dict) -> str:
    """`<model>_<hash of run>`: the model's name made safe (letters, digits, _ -) and 10 hex digits of the
    sha256 of metrics.json's `run` (what identifies the results; the machine's record is not part of it)."""
    run = metrics.get("run") or {}
    model = str(run.get("model") or run.get("backend") or metrics.get("model_name") or "run").rstrip("/")
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", model.split("/")[-1] if Path(model).is_absolute() else model)
    digest = hashlib.sha256(json.dumps(run, sort_keys=True).encode()).hexdigest()[:10]
    return f"{slug.strip('_')[:60] or 'run'}_{digest}"


def card(repo_id: str, configs: dict[str, dict]) -> str:
    """The dataset card: YAML front matter with one config per run (data: its results.jsonl), then a table."""
    lines = ["---", "pretty_name: ExecRepoBench results", "tags:", "- execrepobench", "- evaluation", "configs:"]
    for name in sorted(configs):
        lines += [f"- config_name: {name}", "  data_files:", "  - split: latest", f"    path: {name}/results.jsonl"]
    lines += ["---", "", f"# ExecRepoBench results: {repo_id}", "",
              "One config per run of `execrepobench run` / `evaluate`: its folder holds metrics.json (scores as "
              "fractions, what was run under `run`, the machine under `run_record`), results.json "
              "(lm-evaluation-harness's layout, every score with its standard error), results.jsonl (the verdict of "
              "every completion: the config's data), generations.jsonl (prompts and completions) and latex.txt.", "",
              "```python", "from datasets import load_dataset",
              f"details = load_dataset({repo_id!r}, {next(iter(sorted(configs)), 'CONFIG')!r}, split='latest')",
              "```", "", "| config | model | dataset | n | pass@1 | ES | date |", "|---|---|---|---|---|---|---|"]
    for name in sorted(configs):
        m = configs[name]
        run, record = m.get("run") or {}, m.get("run_record") or {}
        dataset = run.get("dataset") or {}
        dataset_name = dataset.get("name") if isinstance(dataset, dict) else dataset
        lines.append(f"| {name} | {run.get('model') or run.get('backend') or ''} | {dataset_name or ''} | "
                     f"{m.get('n_samples', '')} | {100 * m.get('pass@1', 0):.1f}% | {100 * m.get('es', 0):.1f}% | "
                     f"{(record.get('date') or '')[:10]} |")
    return "\n".join(lines) + "\n"


def push_results(run_dir: Path, repo_id: str, *, token: str | None = None, private: bool = False,
                 api: Any = None) -> str:
    """Upload `run_dir` as the config `config_name(...)` of the dataset `repo_id` and rewrite its card; returns
    the config's name.  `api`: a huggingface_hub.HfApi (made with `token` when None)."""
    import huggingface_hub

    run_dir = Path(run_dir)
    if not REPO_ID.match(repo_id or ""):
        raise PushResultsError(f"--push-results {repo_id!r}: expected a Hub dataset id OWNER/NAME")
    metrics = read_metrics(run_dir)
    name = config_name(metrics)
    api = api if api is not None else huggingface_hub.HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True, token=token)
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / name
        staged.mkdir()
        for file_name in FILES:
            if (run_dir / file_name).is_file():
                (staged / file_name).write_bytes((run_dir / file_name).read_bytes())
        api.upload_folder(folder_path=str(staged), repo_id=repo_id, repo_type="dataset", path_in_repo=name,
                          commit_message=f"results of {name}", token=token)
        configs = {name: metrics}
        for path in api.list_repo_files(repo_id, repo_type="dataset", token=token):
            parts = path.split("/")
            if len(parts) == 2 and parts[1] == "metrics.json" and parts[0] != name:
                local = api.hf_hub_download(repo_id, path, repo_type="dataset", token=token)
                configs[parts[0]] = json.loads(Path(local).read_text(encoding="utf-8"))
        readme = Path(tmp) / "README.md"
        readme.write_text(card(repo_id, configs), encoding="utf-8")
        api.upload_file(path_or_fileobj=str(readme), path_in_repo="README.md", repo_id=repo_id, repo_type="dataset",
                        commit_message=f"card: {len(configs)} run(s)", token=token)
    return name
