"""Evidence of a run: one folder per (sample, completion index) that shows why a verdict was what it was.

`run_pytest` fills it with `command.json` (argv, environment variables, project root, isolation,
timeout) before the run, and afterwards with every file the run left in its private folder (pytest's
junit XML, our plugin's records, the selection), `stdout.txt` / `stderr.txt` (the capped tails) and
`run.json` (exit code, timeout, duration).  The engine adds `verdict.json` (the verdict, sample id,
completion index, environment key, result key), `completion.txt` and, for a harness error,
`traceback.txt`.  Folders are kept when asked (`keep_artifacts`) and always for `error` verdicts.
"""
from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Mapping, Sequence

from execrepobench_metric.environments.layout import cache_root

from .process import ProcessResult

FILE_CAP = 8 << 20  # a run file larger than this is not copied (its size is recorded instead)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def write_command(folder: Path, *, argv: Sequence[str], env: Mapping[str, str], root: Path, isolation: str,
                  timeout_s: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = {"argv": list(argv), "env": dict(sorted(env.items())), "root": str(root), "isolation": str(isolation),
            "timeout_s": timeout_s}
    (folder / "command.json").write_text(json.dumps(data, indent=1), encoding="utf-8")


def keep_run_files(folder: Path, run_dir: Path, proc: ProcessResult) -> None:
    """Copy what the run wrote into its private folder, plus its output tails and timing."""
    folder.mkdir(parents=True, exist_ok=True)
    skipped = {}
    for path in sorted(run_dir.iterdir()):
        if not path.is_file() or path.name.startswith("coverage"):
            continue
        size = path.stat().st_size
        if size > FILE_CAP:
            skipped[path.name] = size
        else:
            shutil.copyfile(path, folder / path.name)
    (folder / "stdout.txt").write_text(proc.stdout_tail, encoding="utf-8")
    (folder / "stderr.txt").write_text(proc.stderr_tail, encoding="utf-8")
    run = {"returncode": proc.returncode, "timed_out": proc.timed_out, "duration_s": round(proc.duration_s, 3),
           "not_copied_bytes": skipped}
    (folder / "run.json").write_text(json.dumps(run, indent=1), encoding="utf-8")


def pack_folder(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (relative POSIX path -> bytes), to send a run's evidence home from
    another machine; files over FILE_CAP are left out (their sizes are in run.json)."""
    if not folder.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.stat().st_size <= FILE_CAP}


def unpack_folder(folder: Path, files: dict[str, bytes]) -> None:
    """Write what `pack_folder` sent into `folder` (names that would leave it are skipped)."""
    for name, data in files.items():
        target = folder / name
        if ".." in Path(name).parts or Path(name).is_absolute():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def default_root() -> Path:
    """Where evidence goes when the caller names no folder: under the cache, one folder per
    evaluation, so concurrent evaluations never mix."""
    return cache_root() / "artifacts" / uuid.uuid4().hex[:12]


class EvidenceStore:
    """Folders `<root>/<sample id>/<completion index>`; rows point to them relative to `root.parent`."""

    def __init__(self, root: Path | None, keep_all: bool) -> None:
        self.root = root if root is not None else default_root()
        self.keep_all = keep_all

    def folder(self, sample_id: str, index: int) -> Path:
        path = self.root / _UNSAFE.sub("_", sample_id) / str(index)
        shutil.rmtree(path, ignore_errors=True)  # a previous, interrupted attempt at the same item
        return path

    def relative(self, folder: Path) -> str:
        return folder.relative_to(self.root.parent).as_posix()

    def finish(self, folder: Path, verdict: dict, *, completion: str, traceback: str = "") -> str:
        """Keep or drop `folder` for this verdict; returns the row's pointer ("" when dropped)."""
        if not (self.keep_all or verdict.get("reason") == "error"):
            shutil.rmtree(folder, ignore_errors=True)
            return ""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "verdict.json").write_text(json.dumps(verdict, indent=1), encoding="utf-8")
        (folder / "completion.txt").write_text(completion, encoding="utf-8")
        if traceback:
            (folder / "traceback.txt").write_text(traceback, encoding="utf-8")
        return self.relative(folder)

    def copy(self, source: Path, sample_id: str, index: int, verdict: dict) -> str:
        """Another position judged by the same run (identical completed file): its own copy."""
        target = self.folder(sample_id, index)
        shutil.copytree(source, target)
        (target / "verdict.json").write_text(json.dumps(verdict, indent=1), encoding="utf-8")
        return self.relative(target)


    def close(self) -> None:
        """Remove the folders left empty by dropped evidence (the root too, when nothing was kept)."""
        if not self.root.is_dir():
            return
        for path in sorted((p for p in self.root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            _rmdir_if_empty(path)
        _rmdir_if_empty(self.root)


def _rmdir_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
