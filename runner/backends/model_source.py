"""Where a model backend's `--model` comes from: a local model folder, or a Hugging Face Hub model id resolved
through the Hugging Face cache (`huggingface_hub.snapshot_download`: the cached snapshot when there is one,
else a download; offline (HF_HUB_OFFLINE=1, or no network) a missing model is an error that says how to fetch
it).  Prompts are fitted with the model's own tokenizer.json, so every backend that renders prompts needs the
files on this machine."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from execrepobench_dataset.errors import UsageError

from ..errors import ModelNotFound

HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class ResolvedModel:
    path: Path  # the local folder (a Hub model: its snapshot in the Hugging Face cache)
    hub_id: str | None = None  # the Hub model id, when --model was one
    commit: str | None = None  # the Hub commit of the snapshot

    def record(self) -> dict:
        """What metrics.json records beside --model: the Hub commit read (nothing for a local folder)."""
        return {"model_commit": self.commit} if self.hub_id else {}


# What prompts need of a model a server runs elsewhere (the openai backend): its tokenizer and config, no weights
TOKENIZER_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                   "special_tokens_map.json", "added_tokens.json")


def _hub_snapshot(repo_id: str, backend: str, allow_patterns: tuple[str, ...] | None = None) -> Path:
    import huggingface_hub
    from huggingface_hub import constants, errors

    fetch = (f"fetch it where there is network with `hf download {repo_id}` (the same HF_HOME; or "
             f"`hf download {repo_id} --local-dir DIR` and pass --model DIR)")
    try:
        return Path(huggingface_hub.snapshot_download(repo_id=repo_id, local_files_only=True,
                                                      allow_patterns=allow_patterns))
    except errors.LocalEntryNotFoundError:
        if constants.HF_HUB_OFFLINE:
            raise ModelNotFound(f"model {repo_id!r} (the {backend!r} backend) is not in the Hugging Face cache "
                                f"({constants.HF_HUB_CACHE}) and the Hub is offline (HF_HUB_OFFLINE=1): "
                                f"{fetch}") from None
    try:
        return Path(huggingface_hub.snapshot_download(repo_id=repo_id, allow_patterns=allow_patterns))
    except errors.RepositoryNotFoundError:
        raise ModelNotFound(f"model {repo_id!r}: no such local folder, and no such model on the Hugging Face Hub "
                            "(or it is gated or private: log in with `hf auth login`)") from None
    except errors.LocalEntryNotFoundError:
        raise ModelNotFound(f"model {repo_id!r} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and "
                            f"the Hub cannot be reached: {fetch}") from None


def resolve_model(model: str | None, backend: str, tokenizer_only: bool = False) -> ResolvedModel:
    """The model folder, checked (it must hold a config.json): `model` itself when it is a local folder, else
    the Hub model id's snapshot in the Hugging Face cache (`tokenizer_only`: its TOKENIZER_FILES alone, for a
    model served elsewhere - no weights are downloaded)."""
    if not model:
        raise UsageError(f"the {backend!r} backend needs --model: a local model folder (config.json, weights, "
                         "tokenizer) or a Hugging Face Hub model id (OWNER/NAME)")
    path = Path(model).expanduser()
    hub_id = commit = None
    if not path.is_dir():
        if not HUB_ID_RE.match(model) or model.startswith((".", "/", "~")):
            raise ModelNotFound(f"model folder {model!r} does not exist, and it is not a Hugging Face Hub model "
                                "id (OWNER/NAME)")
        path, hub_id = _hub_snapshot(model, backend, TOKENIZER_FILES if tokenizer_only else None), model
        commit = path.name if path.parent.name == "snapshots" else None
    if not (path / "config.json").is_file():
        raise ModelNotFound(f"model {model!r} ({path}) has no config.json: not a Hugging Face model folder")
    return ResolvedModel(path, hub_id, commit)
