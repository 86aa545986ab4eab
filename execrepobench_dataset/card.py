"""The dataset card (README.md of a published folder): YAML front matter + what a user needs to know.

It tells: how the data was built, where the code of every repository comes from (pinned source,
license), what a machine needs to judge it (Linux, bubblewrap, the Python version), the commands that
prepare the environments and judge, the fingerprint and how to recompute it, fields and statistics.
It names no path of the machine that built it.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import PurePath

from .card_usage import evaluation, licenses_file, licenses_section, sources  # noqa: F401 (licenses_file: publish)
from .figures import table
from .record import FILL_TYPES, features
from .repo_record import RepoRecord, repo_features

CITATION = """@article{yang2024execrepobench,
  title={ExecRepoBench: Multi-level Executable Code Completion Evaluation},
  author={Yang, Jian and Zhang, Jiajun and Yang, Jiaxi and Jin, Ke and Zhang, Lei and Peng, Qiyao and
          Deng, Ken and Miao, Yibo and Liu, Tianyu and Cui, Zeyu and Hui, Binyuan and Lin, Junyang},
  journal={arXiv preprint arXiv:2412.11990},
  year={2024}
}"""
FIELD_DOCS = {
    "sample_id": "stable content hash of the pinned source, file, fill type and the three code parts",
    "repo_name": "repository name from the build manifest", "file_name": "repo-relative POSIX path of the masked file",
    "repo_source": "exact pinned source: `pypi:NAME==VER#sha256=...`, `git:URL@COMMIT` or `path:NAME#tree=...`",
    "prefix_code": "text of the file before the masked span", "suffix_code": "text of the file after the masked span",
    "middle_code": "the masked span (the ground truth)", "selection_rule": "rule that selected the judged tests",
    "context_code": "materialised context: other files of the repository, most relevant first, each `{path, code}`; "
                    "a column only in the materialised form (`load_samples(..., materialise_context=True)` fills it)",
    "context_paths": "the ranked context by reference: paths of the repository's other files (config "
                     "`repositories`, field `files`), most relevant first",
    "context_scores": "each context path's relevance score (import score + normalised BM25 of prefix and suffix)",
    "fill_type": "one of the paper's six fill types (`Random Span Completion`, ..., `grammar-based: block`)",
    "node_type": "tree-sitter node type of the masked span, or `span` / `line` / `lines` for random masks",
    "middle_start_byte": "UTF-8 byte offset of the start of the middle in the original file",
    "middle_end_byte": "UTF-8 byte offset of the end of the middle in the original file",
    "env_key": "the environment's identity: sha256 of {Python X.Y, pinned source, lock} (config `repositories`)",
    "seed": "seed of the builder's random choices", "builder_version": "version of the builder that made the sample",
    "test_command": "argv that runs the repository's tests in its environment",
    "judged_tests": "pytest node ids judging the sample (ground truth passes, a null fill fails); empty: whole suite",
    "guard_allowed": "audit events the ground truth triggers from the masked file; the runtime guard allows only these",
    "mutants_killed": "how many AST-level mutants of the ground truth (operator swaps, off-by-one constants, negated conditions, dropped return values) the judged tests failed",
    "mutants_total": "how many such mutants were judged (0: nothing in the middle to mutate); samples whose tests kill fewer than half are dropped",
    "excluded_tests": "tests never judged (failing or flaky in the baseline runs, or excluded by the manifest)",
    "release_date": "live snapshots: upload time (ISO 8601, UTC) of the release the sample was masked in; empty otherwise",
    "baseline_version": "live snapshots: the release the masked code is new against (empty: no earlier release)",
    "baseline_date": "live snapshots: the baseline release's upload time (empty: no earlier release)",
}
REPO_FIELD_DOCS = {
    "repo_name": "repository name (the samples' `repo_name`)", "repo_source": "pinned source (as in the samples)",
    "python": "Python version of the environment (X.Y)", "env_key": "the environment's identity (as in the samples)",
    "lock": "the test environment's requirements: exact versions with `--hash=sha256:` (installed with `--no-deps`)",
    "test_command": "the command that runs the tests", "test_paths": "test paths from the manifest",
    "pytest_args": "pytest arguments from the manifest", "excluded_tests": "tests never judged",
    "env": "environment variables of every test run (`K=V`)", "license": "the repository's license, from its metadata",
    "manifest_entry": "the manifest entry (TOML) that built this repository",
    "files": "the repository's Python files `{path, code}` (sorted by path): the context pool, stored once",
    "exclude_newer": "the date (YYYY-MM-DD, UTC) its lock was resolved against: nothing uploaded later was considered",
}


def get_code(record: RepoRecord) -> str:
    """The command that fetches a repository's pinned code by hand (`prepare` does it for you)."""
    if m := re.match(r"^pypi:([^=]+)==([^#]+)#sha256=([0-9a-f]+)$", record.repo_source):
        return f"`pip download --no-deps --no-binary {m[1]} {m[1]}=={m[2]}` (sha256 `{m[3]}`)"
    if m := re.match(r"^git:(.+)@([0-9a-f]+)$", record.repo_source):
        return f"`git clone {m[1]}` and `git checkout {m[2]}`"
    return "not portable: a local folder of the machine that built the dataset (not published)"


def _intro(report: dict, configs: str, fingerprint: str, verified: bool) -> list[str]:
    manifest = PurePath(str(report.get("manifest") or "")).name or "(not recorded)"
    return ["# ExecRepoBench", "",
            "Repository-level, multi-level code completion judged by **running the repository's own tests** "
            "(ExecRepoBench, [arXiv 2412.11990](https://arxiv.org/abs/2412.11990)). Each sample masks a span (random "
            "span / line / lines, or a grammar-based expression / statement / block) of a Python file of a real, "
            "pinned repository; a completion passes when the sample's judged tests pass with it in the repository's "
            f"pinned environment. Configs: {configs}.", "",
            "## How it was built", "",
            f"Built by the ExecRepoBench builder version `{report['builder_version']}` from the manifest `{manifest}` "
            f"with seed `{report['seed']}`." + (" Samples were verified: the ground truth passes the judged tests and "
                                                 "a null fill fails them." if verified else ""), "",
            f"Fingerprint: `{fingerprint}`. Recompute it from this folder or its Hub id with "
            "`execrepobench fingerprint DIR_OR_HUB_ID`: the sha256 over every sample then every repository record, "
            "each as one line of canonical JSON (sorted keys, UTF-8), samples sorted by `sample_id`, records by "
            "`repo_name` (see `execrepobench_dataset.load.dataset_fingerprint`).", ""]


def _requirements(records: list[RepoRecord]) -> list[str]:
    pythons = ", ".join(sorted({r.python for r in records})) or "-"
    return ["## Requirements", "",
            "Judging runs each repository's tests, so it needs: **Linux** with **bubblewrap** (`bwrap`, e.g. "
            "`apt-get install bubblewrap`: the sandbox of every judged run), **Python " + pythons + "** installed (the "
            "environments are made with uv for exactly that version; uv does not download interpreters here), and "
            "network access to PyPI while preparing (the pinned sources and the locked packages).", "",
            "## How to get the code", "",
            "The repositories' code is not in this dataset: each repository is pinned (config `repositories`: pinned "
            "source, Python version, locked requirements with hashes, test command, license, the manifest entry). "
            "`execrepobench prepare` fetches each pinned source, checks its hash, makes its environment from the "
            "lock (nothing is re-resolved) and checks a few samples (ground truth passes, null fill fails):", "",
            "```bash", "pip install ./execrepobench   # the ExecRepoBench package: its repository checkout, or a wheel",
            "execrepobench prepare --dataset <this dataset's Hub id or folder>   # prints `ready` or why not, per "
            "repository", "```", ""]


def repository_rows(records: list[RepoRecord], report: dict, samples: list[dict]) -> list[list]:
    per_repo = Counter(s["repo_name"] for s in samples)
    rows = [[r.repo_name, f"`{r.repo_source}`", r.license or "unknown", r.python, f"`{r.env_key}`",
             per_repo.get(r.repo_name, 0), get_code(r)] for r in records]
    known = {r.repo_name for r in records}
    rows += [[x.get("repo", "?"), "-", "-", "-", "-", 0, f"not published ({x.get('status', '?')})"]
             for x in report.get("repos", []) if x.get("repo") not in known]
    return rows


def live_section(live: dict) -> list[str]:
    """What a live snapshot is: its window, how "new" was decided, and what happened to each candidate."""
    t = live.get("totals", {})
    rows = [[e.get("candidate"), e.get("status"), (e.get("target") or {}).get("version", "-"),
             ((e.get("target") or {}).get("uploaded") or "-")[:10], (e.get("baseline") or {}).get("version", "-"),
             e.get("samples", 0)] for e in live.get("candidates", [])]
    return ["## Live snapshot", "",
            f"Config `{live['window']['config_name']}`: samples masked only in code released in the window - "
            f"{live.get('window_text', '')}. Score a model on it only if its training data ends before the window "
            "(`execrepobench evaluate --cutoff YYYY-MM-DD` keeps the samples released after a date).", "",
            "How \"new\" was decided: " + str(live.get("how_new", "")), "",
            f"{t.get('samples', 0)} samples from {t.get('projects_with_samples', 0)} of "
            f"{t.get('with_release_in_window', 0)} candidate projects with a release in the window "
            f"({t.get('candidates_asked', 0)} asked). Per candidate:", "",
            *table(["candidate", "status", "target", "uploaded", "baseline", "samples"], rows)]


def human_bytes(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def _context_pool(pool: str | None) -> str:
    """Which files a sample's context is drawn from (the build report's `context_pool`)."""
    if pool == "with-tests":
        return ("every other Python file of its repository, test files included: this build asked for them "
                "with `--context-with-tests`, unlike the paper")
    return ("the other Python files of its repository that the paper may mask: no `tests/`, `test/`, `docs/`, "
            "`build/`, `setup.py` or test modules" + ("" if pool == "paper" else " - the builder's default; this "
                                                       "build's report does not say which pool it used"))


def _context_section(context: str, sizes: dict, inline: int | None, config: str = "exec_repo_bench",
                     pool: str | None = None) -> list[str]:
    """How the context is stored, the size per config and (`inline`) the bytes of context code materialised."""
    mib = {name: human_bytes(info.get("bytes", 0)) for name, info in sizes.items()}
    form = ("by reference: `context_paths` (+ `context_scores`) name the files, whose code is stored once per "
            "repository in the `repositories` config (field `files`); the rows have no `context_code` column (it "
            "would always be empty). To materialise it: `execrepobench_dataset.load_samples(DATASET, "
            "materialise_context=True)` gives `Sample`s with `context_code` filled, in the ranked order"
            if context == "reference" else "materialised: `context_code` holds the files' code (and `context_paths` "
            "names them)")
    return ["## Cross-file context", "",
            f"Each sample's ranked cross-file context ({_context_pool(pool)}; most relevant first) is stored "
            f"{form}. `execrepobench_dataset.ranked_context(sample, files)` (or "
            "`load_samples(..., materialise_context=True)`) gives the context files in either form; "
            "`execrepobench run` does it for you.", "",
            "Parquet size per config: " + ", ".join(f"`{n}` {v}" for n, v in mib.items()) + ".", *(
                [f"Context code inside the samples: {human_bytes(inline)} of text here; by reference the samples "
                 "would not carry it (each repository's files are stored once instead)." if context != "reference"
                 else f"Materialised in every sample (as the official release stores it), the samples' context would "
                 f"add {human_bytes(inline)} of text to the `{config}` rows (Arrow size "
                 f"{human_bytes(sizes.get(config, {}).get('arrow_bytes', 0))} by reference).", ""]
                if inline is not None else [])]


def _instruct_section(instruct: dict, instruct_report: dict | None) -> list[str]:
    from .instruct_record import instruct_features

    per_fill = instruct.get("per_fill_type", {})
    lines = ["## Repo-Instruct", "", f"`repo_instruct`: {instruct['records']} records from {instruct['repos']} "
             "repositories. Fields: " + ", ".join(f"`{n}`" for n in instruct_features()) + " (`messages`: system, "
             "user with context, prefix and suffix, assistant with the middle).", "",
             *table(["fill type", "records"], [[f, per_fill.get(f, 0)] for f in FILL_TYPES])]
    if instruct_report:  # numbers only: the report's paths and reasons stay on the machine that built it
        totals = instruct_report.get("totals") if isinstance(instruct_report.get("totals"), dict) else {}
        bench = instruct_report.get("benchmark") if isinstance(instruct_report.get("benchmark"), dict) else {}
        refused = [r.get("repo", "?") for r in instruct_report.get("refused_repos", []) if isinstance(r, dict)]
        if totals:
            lines += ["Decontamination against the benchmark (the repositories and middles above):", "",
                      *table(["check", "count"], [
                          ["benchmark samples compared", bench.get("sample_count", "-")],
                          ["repositories refused (name, pinned source or source hash in the benchmark)",
                           f"{totals.get('refused_repos', 0)}" + (f" ({', '.join(refused)})" if refused else "")],
                          ["records dropped (middle equal to a benchmark middle)",
                           totals.get("dropped_contaminated", 0)],
                          ["records kept", totals.get("records", instruct["records"])]])]
        shown = {k: v for k, v in sorted(instruct_report.items()) if isinstance(v, (int, float))}
        shown.update(totals)
        lines += ["Instruct build report:", "", *(f"- {k}: `{json.dumps(v, sort_keys=True)[:300]}`"
                                                  for k, v in shown.items()), ""]
    return lines


def render_card(meta: dict, report: dict, samples: list[dict], records: list[RepoRecord], fingerprint: str,
                instruct: dict | None, instruct_report: dict | None, statistics: list[str], sizes: dict,
                context: str = "reference", inline_context_bytes: int | None = None, links: dict | None = None,
                samples_config: str = "exec_repo_bench") -> str:
    """The card: `instruct` is {records, repos, per_fill_type} of the published corpus (None without one);
    `statistics` the Markdown of `figures.markdown`; `sizes` the summary's configs (bytes per config); `links`
    {"dataset": Hub id, "metric": Space id, "code": URL}, those known."""
    import yaml

    configs = (f"`{samples_config}` (split `test`, {len(samples)} samples), `repositories` (split `train`, "
               f"{len(records)} repository records)")
    if instruct is not None:
        configs += (f", `repo_instruct` (split `train`, {instruct['records']} chat-formatted fill-in-the-middle "
                    "records, not executed)")
    verified = any("verify_candidates" in r for r in report.get("repos", []))
    lines = ["---", yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000).rstrip(), "---", "",
             *_intro(report, configs, fingerprint, verified), *sources(links or {}), *_requirements(records),
             *table(["repository", "pinned source", "license", "python", "env key", "samples", "get the code"],
                    repository_rows(records, report, samples)),
             *licenses_section(records, None if meta.get("license") == "other" else meta.get("license")),
             *(live_section(report["live"]) if isinstance(report.get("live"), dict) else []),
             *_context_section(context, sizes, inline_context_bytes, samples_config, report.get("context_pool")),
             "## Fields", "", *table(["field", "meaning"], [[f"`{n}`", FIELD_DOCS.get(n, "see record.py")]
                                                           for n in features()]),
             "Config `repositories`:", "",
             *table(["field", "meaning"], [[f"`{n}`", REPO_FIELD_DOCS.get(n, "see repo_record.py")]
                                           for n in repo_features()]),
             *statistics]
    if instruct is not None:
        lines += _instruct_section(instruct, instruct_report)
    usage = evaluation(links or {}).replace('"exec_repo_bench"', f'"{samples_config}"')
    return "\n".join([*lines, usage, "## Citation", "", "```bibtex", CITATION, "```", ""])
