"""The metric as an `evaluate` module folder, and its push to a Hugging Face Space.

`evaluate.load(NAME_OR_FOLDER)` runs the script named after the folder (`execrepobench/execrepobench.py`;
on the Hub: the Space `USER/execrepobench`).  Both that script and the in-repo one
(`execrepobench_metric/execrepobench_metric.py`) are rendered by `module_script` from one template: a
thin subclass of `evaluate_module.ExecRepoBenchMetric`, so they cannot drift (a test checks the
in-repo file against the template).

`evaluate` scans a module script's import lines before running it and, for a library it cannot
import, tells the user to `pip install` the text after a `# From:` comment on that line (else the
import name).  The script's one import of this package carries `# From: execrepobench`, so the hint
names the distribution (`pip install execrepobench`), not its import names.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from execrepobench_dataset.version import __version__

from .errors import MetricPublishError

DEFAULT_NAME = "execrepobench"
DISTRIBUTION = "execrepobench"
CARD = Path(__file__).with_name("README.md")
LOAD_PLACEHOLDER = 'evaluate.load("USER/execrepobench")'
DATASET_PLACEHOLDER = "USER/execrepobench-dataset"
DATASET_LINK = "- Dataset: the dataset published with `execrepobench publish` (a Hub dataset id or folder)"
CODE_LINK = "the `execrepobench` package (`pip install execrepobench`)"

_SCRIPT = '''"""ExecRepoBench for `evaluate`: repository-level code completion judged by running the
repository's own tests in a sandbox (pass@k and edit similarity per fill type).

Rendered by execrepobench_metric.hub_module.module_script (`execrepobench publish-metric`); do not edit.
The metric lives in the `{dist}` package (pip install {dist}); this script only names it.
"""
import execrepobench_metric.evaluate_module as module  # From: {dist}


class {cls}(module.ExecRepoBenchMetric):
    __doc__ = module.ExecRepoBenchMetric.__doc__
'''

_APP = '''"""The Space's page: evaluate's standard widget for this metric (judging needs Linux, bubblewrap
and the benchmark's environments: see the card)."""
from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(str(Path(__file__).with_name("{name}.py")))
launch_gradio_widget(module)
'''


def check_name(name: str) -> str:
    """A module name evaluate can import (the script and folder are named after it)."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise MetricPublishError(f"module name {name!r}: use letters, digits and underscores (a Python "
                                 "identifier); the script, its folder and the Space share this name")
    return name


def class_name(name: str) -> str:
    """`execrepobench_metric` -> `ExecrepobenchMetric` (evaluate names the module from the class)."""
    return "".join(part[:1].upper() + part[1:] for part in check_name(name).split("_") if part)


def module_script(name: str = DEFAULT_NAME) -> str:
    return _SCRIPT.format(dist=DISTRIBUTION, cls=class_name(name))


def card(repo_id: str | None = None, dataset_id: str | None = None, code_url: str | None = None) -> str:
    """The metric card (README.md with the Space front matter): `repo_id` fills the load call, `dataset_id` the
    front matter's `datasets:` (the Hub links the Space and the dataset) and the examples, `code_url` the link to
    the code."""
    import yaml

    text = CARD.read_text(encoding="utf-8")
    if repo_id:
        text = text.replace(LOAD_PLACEHOLDER, f'evaluate.load("{repo_id}")')
    if code_url:
        text = text.replace(CODE_LINK + "\n", code_url + "\n")
    if not dataset_id:
        return text
    text = text.replace(DATASET_LINK, f"- Dataset: [{dataset_id}](https://huggingface.co/datasets/{dataset_id})")
    _, front, body = text.split("---\n", 2)
    meta = {**yaml.safe_load(front), "datasets": [dataset_id]}
    body = body.replace(DATASET_PLACEHOLDER, dataset_id)
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000) + "---\n" + body


def module_files(name: str = DEFAULT_NAME, *, repo_id: str | None = None, requirement: str | None = None,
                 dataset_id: str | None = None, code_url: str | None = None) -> dict[str, str]:
    """File name -> text of the module folder."""
    requirement = requirement or f"{DISTRIBUTION}=={__version__}"
    if not requirement.strip() or "\n" in requirement:
        raise MetricPublishError(f"requirement {requirement!r}: one pip requirement line expected")
    return {f"{name}.py": module_script(name), "README.md": card(repo_id, dataset_id, code_url),
            "app.py": _APP.format(name=name),
            "requirements.txt": requirement.strip() + "\n"}


def write_metric_folder(out: Path, *, name: str | None = None, repo_id: str | None = None,
                        requirement: str | None = None, overwrite: bool = False, dataset_id: str | None = None,
                        code_url: str | None = None) -> Path:
    """Write OUT/NAME/ (script, card, app, requirements) and return it.  NAME defaults to the
    Space's name when `repo_id` is given, else `execrepobench`.  Written to a temporary sibling and
    renamed, so a failure never leaves a half-written folder."""
    name = check_name(name or (repo_id.split("/")[-1] if repo_id else DEFAULT_NAME))
    if repo_id is not None:
        check_repo_id(repo_id)
        if repo_id.split("/")[-1] != name:
            raise MetricPublishError(f"the Space {repo_id!r} must be named like the module ({name!r}): "
                                     f"evaluate.load({repo_id!r}) fetches {repo_id.split('/')[-1]}.py")
    if dataset_id is not None:
        check_repo_id(dataset_id)
    files = module_files(name, repo_id=repo_id, requirement=requirement, dataset_id=dataset_id, code_url=code_url)
    target = Path(out) / name
    if target.exists() and any(target.iterdir()) and not overwrite:
        raise MetricPublishError(f"{target} exists and is not empty (pass overwrite / --overwrite to replace it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        for file_name, text in files.items():
            (tmp / file_name).write_text(text, encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def check_repo_id(repo_id: str) -> str:
    if not isinstance(repo_id, str) or not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id):
        raise MetricPublishError(f"repo id {repo_id!r} is not of the form owner/name")
    return repo_id


def push_metric(folder: Path, repo_id: str, *, private: bool = False, token: str | None = None, api=None,
                commit_message: str | None = None):
    """Create (or reuse) the Gradio Space `repo_id` and upload the module folder to it."""
    folder = Path(folder)
    check_repo_id(repo_id)
    script = folder / f"{repo_id.split('/')[-1]}.py"
    if not script.is_file() or not (folder / "README.md").is_file():
        raise MetricPublishError(f"{folder}: not a metric folder for {repo_id} ({script.name} and README.md expected)")
    import huggingface_hub

    token = token or huggingface_hub.get_token()
    if not token:
        raise MetricPublishError("no Hugging Face token: log in with `hf auth login` or set HF_TOKEN")
    api = api if api is not None else huggingface_hub.HfApi(token=token)
    try:  # the Hub's refusals (HTTP errors) and an unreachable Hub are OSErrors: the user's to fix, not a bug
        api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True, token=token)
        return api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="space",
                                 commit_message=commit_message or "Publish the ExecRepoBench metric", token=token)
    except OSError as exc:
        raise MetricPublishError(f"pushing {folder} to the Hub Space {repo_id!r} failed: {exc}") from exc
