"""The dataset card's parts that point elsewhere: its sources (paper, code, the metric's Space, this dataset),
the licenses of the repositories whose code the samples hold (also LICENSES.md beside the card), and how to
evaluate with `datasets` + `evaluate` and with the `execrepobench` command."""
from __future__ import annotations

from collections import defaultdict

from .figures import table
from .repo_record import RepoRecord

PAPER = "https://arxiv.org/abs/2412.11990"
DATASET_PLACEHOLDER, METRIC_PLACEHOLDER = "OWNER/execrepobench", "OWNER/execrepobench-metric"


def sources(links: dict) -> list[str]:
    """The 'Dataset sources' section: paper, code, metric Space, this dataset on the Hub (those known)."""
    rows = [f"- **Paper:** [ExecRepoBench: Multi-level Executable Code Completion Evaluation]({PAPER})"]
    if links.get("code"):
        rows.append(f"- **Code** (builder, metric, `execrepobench` command): {links['code']}")
    else:
        rows.append("- **Code** (builder, metric, `execrepobench` command): the `execrepobench` package")
    if links.get("metric"):
        rows.append(f"- **Metric** (an `evaluate` module on a Space): "
                    f"[{links['metric']}](https://huggingface.co/spaces/{links['metric']}), "
                    f"`evaluate.load(\"{links['metric']}\")`")
    if links.get("dataset"):
        rows.append(f"- **This dataset:** [{links['dataset']}](https://huggingface.co/datasets/{links['dataset']})")
    return ["## Dataset sources", "", *rows, ""]


def _licenses(records: list[RepoRecord]) -> dict[str, list[str]]:
    by_license: dict[str, list[str]] = defaultdict(list)
    for r in records:
        by_license[r.license or "unknown (not stated in the package metadata)"].append(r.repo_name)
    return dict(sorted(by_license.items()))


def licenses_section(records: list[RepoRecord], declared: str | None) -> list[str]:
    """Which license covers which code: each sample's code (prefix, middle, suffix, context) is a file of one
    pinned repository, under that repository's license."""
    head = (f"Declared license: `{declared}`." if declared else
            "Declared license: `other` (per repository; also in `LICENSES.md`).")
    return ["## Licenses", "", head + " Every sample's code - prefix, middle, suffix and its cross-file context - "
            "is a file of one pinned repository and keeps that repository's license (from its package metadata; "
            "check the pinned source before redistributing). The masks, selections and records are ExecRepoBench's.",
            "", *table(["license", "repositories"], [[lic, ", ".join(sorted(names))]
                                                    for lic, names in _licenses(records).items()])]


def licenses_file(records: list[RepoRecord], declared: str | None) -> str:
    """LICENSES.md: the license of every repository (the card's `license_link`)."""
    return "\n".join(["# Licenses of the repositories in this dataset", "",
                      *licenses_section(records, declared)[2:], "",
                      *table(["repository", "pinned source", "license"],
                             [[r.repo_name, f"`{r.repo_source}`", r.license or "unknown"] for r in records])])


def evaluation(links: dict) -> str:
    """How to evaluate: datasets + evaluate (the code_eval way), and the command line."""
    dataset = links.get("dataset") or DATASET_PLACEHOLDER
    metric = links.get("metric") or METRIC_PLACEHOLDER
    return f"""## Evaluation

Judging runs model code: opt in with `HF_ALLOW_CODE_EVAL=1` (as for `evaluate`'s `code_eval`),
`EXECREPOBENCH_ALLOW_EXEC=1` or `allow_exec=True`. The repositories' environments must exist on the machine
(`execrepobench prepare`, above; or `prepare=True` with `dataset=`): without them the metric raises one error
naming the missing repositories and the command. Scores are fractions (0..1), as `code_eval` returns them.

```python
import evaluate
from datasets import load_dataset
from execrepobench_dataset import load_samples

bench = load_dataset("{dataset}", "exec_repo_bench", split="test")
samples = load_samples("{dataset}", materialise_context=True)  # with each sample's context code, for prompts
completions = [my_model(s) for s in samples]  # one string (or a list of n strings) per sample
metric = evaluate.load("{metric}")  # or the folder `execrepobench publish-metric --out DIR` writes
scores = metric.compute(predictions=completions, references=list(bench), dataset="{dataset}", k=[1])
print(scores["pass@1"], scores["es"])  # return_details=True: (scores, report) with one row per completion
```

Or in one command - prompts, generation (vLLM, transformers or an OpenAI-compatible server), judging, report
(`--limit N`: a subset stratified by fill type; `execrepobench compare RUN_DIR...`: a leaderboard with confidence
intervals):

```bash
execrepobench prepare --dataset {dataset}
HF_ALLOW_CODE_EVAL=1 execrepobench run --dataset {dataset} --backend vllm --model Qwen/Qwen2.5-Coder-7B --out results/
EXECREPOBENCH_ALLOW_EXEC=1 execrepobench evaluate --dataset {dataset} \\
    --predictions predictions.jsonl --out results/  # {{"sample_id": ..., "completion": ...}} per line
```
"""
