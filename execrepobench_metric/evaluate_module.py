"""The `evaluate` metric class, shared by the in-repo module (`execrepobench_metric.py`) and the Hub
module (`execrepobench.py`, written by `execrepobench publish-metric`): both are thin scripts that
subclass `ExecRepoBenchMetric` (see `hub_module.module_script`).

Like evaluate's `code_eval`: scores are fractions (0..1), the opt-in may be HF_ALLOW_CODE_EVAL=1, and the
scores come apart from the per-completion rows: `compute()` returns the scores only (a flat dict of numbers,
so the module works inside `evaluate.combine`); `return_details=True` returns `(scores, report)` as
`code_eval` returns `(pass_at_k, results)`.

`evaluate` casts inputs to the metric's features before `_compute` sees them (a prediction `42`
would become the text "42").  So `compute`, `add_batch` and `add` check the raw inputs first
(`inputs.check_inputs`) and hand `evaluate` one canonical form: a list of strings per prediction and
one string per reference (the record's JSON text, or a sample id).  `_compute` then calls
`api.compute`, which checks everything again (sample ids against `dataset=`) before judging.
"""
from __future__ import annotations

import dataclasses

import datasets
import evaluate

from .api import compute, samples_by_id, split_result
from .errors import InputError
from .inputs import canonical_reference, check_inputs
from .options import describe as describe_options

CITATION = """\
@article{yang2024execrepobench,
  title={ExecRepoBench: Multi-level Executable Code Completion Evaluation},
  author={Yang, Jian and Zhang, Jiajun and Yang, Jiaxi and Jin, Ke and Zhang, Lei and Peng, Qiyao and
          Deng, Ken and Miao, Yibo and Liu, Tianyu and Cui, Zeyu and Hui, Binyuan and Lin, Junyang},
  journal={arXiv preprint arXiv:2412.11990},
  year={2024}
}
"""

DESCRIPTION = """\
ExecRepoBench puts each completion into its masked file, runs the repository's own tests for that
sample in a sandbox (bubblewrap: no network, read-only filesystem except a private overlay view of
the repository, PID namespace, resource limits, wall-clock timeout) and reports pass@1 / pass@k
together with edit similarity (ES), per fill type, per level and per repository.

A completion passes only if every judged test of the sample ran and passed according to pytest's
junit XML report and pytest finished its session; the exit code or printed text never makes a pass.
The environments are made from the dataset's repository records (`execrepobench prepare`).
"""

KWARGS_DESCRIPTION = """
Args:
    predictions: one completion (str) per sample, or a non-empty list of n completions (str) per sample.
    references: the samples: records (dicts as in the dataset, or `Sample`s), their JSON text, or
        sample ids (then `dataset` names a builder output folder, its samples.jsonl, a published
        dataset folder or a Hub dataset id).  Each
        record needs every field of the dataset, a `test_command` (our pytest command) and, unless
        test_selection="suite", non-empty `judged_tests`.
""" + describe_options() + """
    return_details: False (default): the scores only; True: `(scores, report)`, as code_eval returns
        `(pass_at_k, results)` (not inside `evaluate.combine`, which merges dicts).
Raises:
    InputError (a ValueError) before anything is judged when any input or option is invalid: one message
    lists every bad item by index, sample id and field (an unknown option: `UnknownOption`, also a TypeError).
    HarnessError (execrepobench_metric.api) when any judgement failed for the harness's reasons
    (verdict `error`): everything is judged first, the exception's `.result` holds the full result.
Returns:
    The scores, a flat dict of numbers; every score is a fraction in 0..1 as in code_eval (the LaTeX row
    and the command line's tables print percent): `pass@1` (and `pass@k`), `es` (edit similarity), the
    same per fill type (`pass@1/<fill type>`), per level (`pass@1/level/<level>`) and per repository
    (`pass@1/repo/<name>`), `n_samples` (also per group), `n_completions`, `verdicts/<reason>` counts and
    `harness_errors`.
    With return_details=True, `(scores, report)`: the report has `details` (per completion: sample id,
    completion index, verdict, reason, failing tests, duration, stderr tail, `harness_error`, `artifacts`,
    fill type, repository, ES), `sandbox`, `sandbox_note`, `executor` (which executor, items and
    environments per node), `latex` (a LaTeX row in the paper's column order, ES then Pass@1 per group,
    in percent) and `artifacts_base`.
Examples:
    >>> import evaluate  # doctest: +SKIP
    >>> metric = evaluate.load("USER/execrepobench")  # doctest: +SKIP
    >>> out = metric.compute(predictions=[s["middle_code"] for s in samples], references=samples,
    ...                      allow_exec=True)  # doctest: +SKIP
    >>> out["pass@1"]  # doctest: +SKIP
    1.0
    >>> scores, report = metric.compute(predictions=[s["middle_code"] for s in samples], references=samples,
    ...                                 allow_exec=True, return_details=True)  # doctest: +SKIP
    >>> from execrepobench_metric.api import normalize_predictions
    >>> normalize_predictions(["x = 1", ["a", "b"]])
    [['x = 1'], ['a', 'b']]
    >>> normalize_predictions(["x = 1", 42])
    Traceback (most recent call last):
    ...
    execrepobench_metric.errors.InputError: 1 invalid input(s), nothing was judged:
      prediction 1, field predictions: expected a string or a non-empty list of strings, got int
"""

# One canonical form, so `evaluate` never has to choose (and cast) between several.
FEATURES = datasets.Features({"predictions": datasets.List(datasets.Value("string")),
                              "references": datasets.Value("string")})


def _shifted(exc: InputError, offset: int) -> InputError:
    """The same problems with item indices counted from the first item added to the metric."""
    if not offset:
        return exc
    return InputError.of([dataclasses.replace(p, index=p.index + offset) if p.index is not None else p
                          for p in exc.problems])


@evaluate.utils.file_utils.add_start_docstrings(DESCRIPTION, KWARGS_DESCRIPTION)
class ExecRepoBenchMetric(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=DESCRIPTION,
            citation=CITATION,
            inputs_description=KWARGS_DESCRIPTION,
            features=FEATURES,
            homepage="https://arxiv.org/abs/2412.11990",
            codebase_urls=[],
            reference_urls=["https://arxiv.org/abs/2412.11990"],
        )

    def _canonical(self, predictions, references, kwargs, *, defer_ids: bool):
        """Check raw inputs (all of them, before `evaluate` casts anything); their canonical form."""
        offset = getattr(self, "_n_added", 0)
        try:
            completions, samples = check_inputs(
                predictions, references, dataset=kwargs.get("dataset"), load_dataset=samples_by_id,
                test_selection=kwargs.get("test_selection", "judged"), k=kwargs.get("k", (1,)), defer_ids=defer_ids)
        except InputError as exc:
            raise _shifted(exc, offset) from None
        refs = [canonical_reference(s if s is not None else r) for s, r in zip(samples, references)]
        return completions, refs

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Judge and score: every raw input is checked first (`InputError` names each bad item).
        `evaluate` appends the arguments' description below."""
        if predictions is not None or references is not None:
            if predictions is None or references is None:
                raise InputError("give both predictions and references (or neither, after add/add_batch)")
            predictions, references = self._canonical(predictions, references, kwargs, defer_ids=False)
        try:
            return super().compute(predictions=predictions, references=references, **kwargs)
        finally:
            self._n_added = 0

    # add/add_batch: `dataset=` and `test_selection=` come only with `compute`, so sample ids and
    # judged_tests are checked there (still before anything is judged).
    _LATER = {"test_selection": "suite"}

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add predictions and references (checked before they are stored); judged at `compute`."""
        predictions, references = self._canonical(predictions, references, self._LATER, defer_ids=True)
        super().add_batch(predictions=predictions, references=references, **kwargs)
        self._n_added = getattr(self, "_n_added", 0) + len(predictions)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one prediction and reference (checked before they are stored); judged at `compute`."""
        predictions, references = self._canonical([prediction], [reference], self._LATER, defer_ids=True)
        super().add(prediction=predictions[0], reference=references[0], **kwargs)
        self._n_added = getattr(self, "_n_added", 0) + 1

    def _compute(self, predictions, references, return_details=False, **options):
        """`options`: the keyword arguments described above (`options.py`), checked by `api.compute`."""
        scores, report = split_result(compute(predictions, references, **options))
        if report.get("sandbox_note"):  # the weak mode, accepted with allow_weak_sandbox=True: said, not hidden
            evaluate.logging.get_logger(__name__).warning(report["sandbox_note"])
        return (scores, report) if return_details else scores
