"""ExecRepoBench: repository-level code completion judged by running the repository's tests."""
import datasets
import evaluate

from execrepobench_dataset.record import features as record_features
from execrepobench_metric.api import compute

_CITATION = """\
@article{yang2024execrepobench,
  title={ExecRepoBench: Multi-level Executable Code Completion Evaluation},
  author={Yang, Jian and Zhang, Jiajun and Yang, Jiaxi and Jin, Ke and Zhang, Lei and Peng, Qiyao and
          Deng, Ken and Miao, Yibo and Liu, Tianyu and Cui, Zeyu and Hui, Binyuan and Lin, Junyang},
  journal={arXiv preprint arXiv:2412.11990},
  year={2024}
}
"""

_DESCRIPTION = """\
ExecRepoBench puts each completion into its masked file, runs the repository's own tests for that
sample in a sandbox (bubblewrap: no network, read-only filesystem except a private overlay view of
the repository, PID namespace, resource limits, wall-clock timeout) and reports pass@1 / pass@k
together with edit similarity (ES), per fill type, per level and per repository.

A completion passes only if every judged test of the sample ran and passed according to pytest's
junit XML report and pytest finished its session; the exit code or printed text never makes a pass.
The environments are made from the dataset's repository records (`execrepobench prepare`).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: one completion (str) per sample, or a list of n completions per sample.
    references: the samples: records (dicts as in the dataset), their JSON text, or sample ids
        (then `dataset` must name the builder output folder or its samples.jsonl).
    k: list of k for pass@k (default [1]); pass@k is reported for k <= n.
    num_workers: parallel sandboxed runs (default: number of cores).
    timeout: seconds per run (default 300).
    test_selection: "judged" (the sample's selected tests; the whole suite when it has none) or "suite".
    dataset: where to look up sample ids and repository records: a builder output folder, a published
        dataset folder or a Hub dataset id.
    prepare: make missing environments first (from `dataset`'s repository records); default
        EXECREPOBENCH_PREPARE=1. Otherwise missing environments raise one error naming them and the
        `execrepobench prepare` command, and nothing is judged.
    allow_exec: must be True (or EXECREPOBENCH_ALLOW_EXEC=1) to run model code at all.
    allow_weak_sandbox: accept running without bubblewrap (rlimits + timeout only); the output says so.
    journal: JSONL file recording each verdict as it lands; re-running with it resumes.
    use_cache: reuse verdicts of identical completed files (default True).
    model_name: first cell of the LaTeX row.
Returns:
    A flat dict: `pass@1` (and `pass@k`), `es`, the same per fill type (`pass@1/<fill type>`), per
    level (`pass@1/level/<level>`) and per repository (`pass@1/repo/<name>`), `verdicts/<reason>`
    counts, `sandbox`, `sandbox_note`, `latex` (a LaTeX row in the paper's column order, ES then
    Pass@1 per group) and `details` (per completion: verdict, reason, failing tests, duration, stderr tail).
Examples:
    >>> import evaluate  # doctest: +SKIP
    >>> metric = evaluate.load("path/to/execrepobench_metric")  # doctest: +SKIP
    >>> out = metric.compute(predictions=[s["middle_code"] for s in samples], references=samples,
    ...                      allow_exec=True)  # doctest: +SKIP
    >>> out["pass@1"]  # doctest: +SKIP
    100.0
    >>> from execrepobench_metric.api import normalize_predictions
    >>> normalize_predictions(["x = 1", ["a", "b"]])
    [['x = 1'], ['a', 'b']]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ExecrepobenchMetric(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features({"predictions": datasets.List(datasets.Value("string")),
                                   "references": record_features()}),
                datasets.Features({"predictions": datasets.Value("string"), "references": record_features()}),
                datasets.Features({"predictions": datasets.List(datasets.Value("string")),
                                   "references": datasets.Value("string")}),
                datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            ],
            homepage="https://arxiv.org/abs/2412.11990",
            codebase_urls=[],
            reference_urls=["https://arxiv.org/abs/2412.11990"],
        )

    def _compute(self, predictions, references, k=(1,), num_workers=None, timeout=300.0,
                 test_selection="judged", dataset=None, allow_exec=None, allow_weak_sandbox=False,
                 journal=None, use_cache=True, model_name="model", prepare=None):
        return compute(predictions, references, k=k, num_workers=num_workers, timeout=timeout,
                       test_selection=test_selection, dataset=dataset, allow_exec=allow_exec,
                       allow_weak_sandbox=allow_weak_sandbox, journal=journal, use_cache=use_cache,
                       model_name=model_name, prepare=prepare)
