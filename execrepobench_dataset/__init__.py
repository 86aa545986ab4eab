"""ExecRepoBench dataset: the shared sample record, publishing to and loading from Hugging Face.

Importing the package stays fast: `datasets` and `pyarrow` are imported only inside the functions
that need them, and the record exports below are resolved lazily.

`execrepobench_dataset.publish` and `execrepobench_dataset.load` are the submodules (so
`from execrepobench_dataset.publish import PublishError` and patching by dotted path work), and they
are callable as their main function: `publish(samples_dir, out_dir, ...)`, `load(path_or_repo_id, ...)`.
"""
from importlib import import_module
from types import ModuleType

from . import load, publish  # light modules: no `datasets` import at module level

_EXPORTS = {
    "Sample": "record", "ContextFile": "record", "RecordError": "record", "features": "record",
    "FEATURES": "record", "read_jsonl": "record", "write_jsonl": "record",
    "InstructRecord": "instruct_record", "instruct_features": "instruct_record",
    "load_samples": "load", "load_instruct": "load", "push_to_hub": "publish", "PublishError": "publish",
    "RepoRecord": "repo_record", "environment_key": "repo_record", "repo_features": "repo_record",
    "open_dataset": "load", "dataset_fingerprint": "load", "load_repositories": "load",
    "ranked_context": "context", "ContextResolver": "context", "ContextUnavailable": "context",
    "materialise": "context",
}
__all__ = sorted([*_EXPORTS, "load", "publish"])


class _CallableModule(ModuleType):
    """A submodule that can be called as the function of the same name (documented module `__class__` use)."""

    def __call__(self, *args, **kwargs):
        return getattr(self, self.__name__.rsplit(".", 1)[1])(*args, **kwargs)


load.__class__ = _CallableModule
publish.__class__ = _CallableModule


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
