"""The execrepobench lm-eval task's functions (execrepobench.yaml): the samples with their prompts, and judging.

`load_samples(**metadata)` (lm-eval's `custom_dataset`; metadata = the task's `metadata`, lm-eval's
`--metadata` and the model's `--model_args` merged) opens `dataset` (a published dataset folder, a Hub dataset
id, or a builder's samples.jsonl; optional `dataset_config`, `dataset_revision`, `limit`, `timeout`) and renders every sample's prompt as
`execrepobench run` does: template `template` (default: detected from the model name), fitted with the tokenizer
of `tokenizer` / `pretrained` / `model` (a local folder or a Hub model id in the cache) to the model's length
minus `max_new_tokens` (default 512: keep it equal to the task's max_gen_toks).

`process_results(doc, results)` cuts each generation at the template's stop strings (runner.postprocess.clean,
as `run` does), judges them with ExecRepoBench's judge (the repository's tests in the sandbox; code is run only
with HF_ALLOW_CODE_EVAL=1, the opt-in lm-eval's code tasks use) and returns pass@1 (correct completions / n,
the unbiased pass@1 with lm-eval's `repeats`), es (mean edit similarity) and the same two under the sample's fill
type (pass@1_<fill>, es_<fill>).  A harness error (a judgement that failed for the harness's reasons) stops the
evaluation with the error: it is never scored as a model failure.
"""
from __future__ import annotations

import os
from typing import Any


# lm-eval loads this file by path without registering it in sys.modules, so no dataclass here (dataclasses look
# their module up there): the opened dataset is a plain dict - samples (id -> Sample), dataset, stops, timeout.
_LOADED: list[dict] = []  # the opened dataset: lm-eval calls process_results with the doc alone


def _allow_exec() -> bool:
    return os.environ.get("HF_ALLOW_CODE_EVAL", "") == "1"


def _model_name(meta: dict) -> str:
    for key in ("tokenizer", "pretrained", "model"):
        if meta.get(key):
            return str(meta[key])
    raise ValueError("execrepobench task: no model to fit the prompts to: give --model_args pretrained=MODEL "
                     "(hf, vllm) or tokenizer=MODEL (local-completions), or --metadata '{\"tokenizer\": MODEL}'")


def load_samples(**meta: Any):
    import datasets

    from execrepobench.runner.backends.model_source import resolve_model
    from execrepobench.runner.dataset_source import stratified_subset
    from execrepobench.runner.lm_eval_results import FILL_SLUGS
    from execrepobench.runner.prompts import (MAX_GENERATION_TOKENS, build_prompt_for_sample, load_tokenizer,
                                              model_max_length)
    from execrepobench.runner.templates import get_template, resolve_template
    from execrepobench_dataset.load import open_dataset

    if not _allow_exec():
        raise PermissionError("execrepobench task: judging runs the model's code in the sandbox; set "
                              "HF_ALLOW_CODE_EVAL=1 (and pass --confirm_run_unsafe_code) to allow it")
    if not meta.get("dataset"):
        raise ValueError("execrepobench task: give the samples with --metadata '{\"dataset\": FOLDER_OR_HUB_ID}' "
                         "(a published dataset folder, a Hub dataset id, or a builder's samples.jsonl)")
    opened = open_dataset(str(meta["dataset"]), meta.get("dataset_revision"), meta.get("dataset_config"))
    samples = stratified_subset(list(opened.samples), int(meta["limit"]) if meta.get("limit") else None)
    model = _model_name(meta)
    template = get_template(resolve_template(meta.get("template"), model))
    if template.kind == "chat":
        raise ValueError(f"execrepobench task: template {template.name!r} is a chat template; the lm-eval task "
                         "sends plain-text prompts (a FIM or base template: --metadata '{\"template\": NAME}')")
    folder = resolve_model(model, "transformers", tokenizer_only=True).path
    tokenizer, model_max = load_tokenizer(folder), model_max_length(folder)
    max_new = int(meta.get("max_new_tokens") or MAX_GENERATION_TOKENS)
    rows = {"sample_id": [], "fill_type": [], "fill": [], "prompt": []}
    for sample in samples:
        sample = opened.resolver.materialise(sample)
        prompt = build_prompt_for_sample(template, sample, tokenizer, max_generation_tokens=max_new,
                                         model_max=model_max)
        rows["sample_id"].append(sample.sample_id)
        rows["fill_type"].append(sample.fill_type)
        rows["fill"].append(FILL_SLUGS[sample.fill_type])
        rows["prompt"].append(prompt.text)
    dataset = opened.name if opened.commit is None or opened.revision is None else opened.folder
    _LOADED[:] = [{"samples": {s.sample_id: s for s in samples}, "dataset": dataset, "stops": tuple(template.stop),
                   "timeout": float(meta["timeout"]) if meta.get("timeout") else None}]
    return datasets.DatasetDict({"test": datasets.Dataset.from_dict(rows)})


def process_results(doc: dict, results: list) -> dict[str, float]:
    from execrepobench.runner.postprocess import clean
    from execrepobench_metric.api import compute_with
    from execrepobench_metric.options import EvaluationOptions, RuntimeOptions

    if not _LOADED:
        raise RuntimeError("execrepobench task: process_results before load_samples")
    loaded = _LOADED[0]
    sample = loaded["samples"][doc["sample_id"]]
    raws = [x for r in results for x in ([r] if isinstance(r, str) else r)]  # a list: every repeat, unfiltered
    completions = [clean(raw, loaded["stops"]) for raw in raws]
    result = compute_with([completions], [sample],
                          EvaluationOptions(dataset=loaded["dataset"], timeout=loaded["timeout"]),
                          RuntimeOptions(allow_exec=_allow_exec(), progress=False))
    rows = result["details"]
    scores = {"pass@1": sum(1 for r in rows if r["passed"]) / len(rows),
              "es": sum(float(r["es"]) for r in rows) / len(rows)}
    return {**scores, **{f"{name}_{doc['fill']}": value for name, value in scores.items()}}
