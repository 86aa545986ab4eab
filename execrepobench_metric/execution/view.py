"""What a judged run can read: an allow-list of host paths, never `/`.

Everything a run can read is a possible answer key (an sdist in the cache's downloads, an extracted
source, uv's cache, a dataset, a checkout's samples.jsonl, another environment's copy of the module,
the original module's bytecode).  So a bubblewrap run starts from an empty root and sees only:

- the system: `/usr` and the top-level `/bin`, `/sbin`, `/lib*` (as the host has them: folders or
  merged-/usr symlinks), and a few named files of `/etc` (`ETC`: the dynamic loader's cache, TLS
  certificates, users and groups, name service, time zone, MIME types, OS release);
- the interpreter: the base prefix of the environment's venv (`pyvenv.cfg`'s `home`; a pyenv or
  uv-managed Python lives outside `/usr`), read-only;  its own `site-packages` and every
  `site-packages`/`dist-packages` folder of the system's Pythons are empty folders in the view
  (the venv does not use them, and another installation of the repository may sit there);
- the environment's venv and the guard/plugin folder (the run's `visible` paths), read-only;
- the run's view of the tree (the overlay), its out folder, `/dev`, `/proc` of its own namespace,
  and an empty `/tmp` (also its home).

Hidden inside what is visible, when the run replaces a file (`hidden_paths`): the bytecode compiled
from the original file (`__pycache__/<stem>.*.pyc`, a `<stem>.pyc` beside it) and every other file
with the original's exact bytes in the tree or the venv (a `build/lib` copy, a vendored copy), with
their bytecode.  The tree's are whited out in the overlay; the venv's are covered by an empty file.

A path the run would need outside the allow-list (a venv symlink or a `.pth` entry leading elsewhere,
an interpreter that is not where its venv says) raises `ViewError` before anything runs: a harness
error, never a silently different run.  tests/metric/test_leak_scan.py reads every file a real judged run can
read and finds no answer; tests/metric/test_attacks_view.py shows the attacks this stops.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import ViewError

SYSTEM_TOP = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl", "ca-certificates", "ca-certificates.conf", "pki",
       "crypto-policies", "passwd", "group", "nsswitch.conf", "host.conf", "hosts", "gai.conf", "localtime",
       "timezone", "protocols", "services", "mime.types", "os-release", "debian_version", "lsb-release",
       "alternatives", "fonts", "locale.alias")
_SITE_GLOBS = ("lib/python3*/site-packages", "lib/python3*/dist-packages", "lib/python3/dist-packages",
               "local/lib/python3*/site-packages", "local/lib/python3*/dist-packages")

# Tests only: the former view (`/` read-only, nothing hidden), to show that each answer-finding attack
# of tests/metric/test_attacks_view.py is real.  Never set by the package.
HOST_VIEW_FOR_TESTS = False


@dataclass(frozen=True)
class Mount:
    kind: str  # "ro-bind", "symlink" (source = the link's target), "empty-dir" (an empty read-only folder)
    source: str
    dest: str


@lru_cache(maxsize=1)
def _top_level() -> tuple[Mount, ...]:
    """The system part (the same for every run of this process)."""
    mounts = []
    for path in SYSTEM_TOP:
        if os.path.islink(path):
            mounts.append(Mount("symlink", os.readlink(path), path))
        elif os.path.isdir(path):
            mounts.append(Mount("ro-bind", path, path))
    for name in ETC:
        path = f"/etc/{name}"
        if os.path.islink(path):
            mounts.append(Mount("symlink", os.readlink(path), path))
        elif os.path.exists(path):
            mounts.append(Mount("ro-bind", path, path))
    return tuple(mounts)


def _under(path: str, roots) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def interpreter_prefix(venv: Path) -> Path:
    """The base interpreter's prefix of `venv` (from pyvenv.cfg's `home`, symlinks resolved)."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ViewError(f"environment {venv}: no readable pyvenv.cfg ({exc}); its interpreter cannot be "
                        "placed in the judged run's view") from None
    home = next((ln.split("=", 1)[1].strip() for ln in lines if ln.split("=", 1)[0].strip() == "home"), "")
    if not home or not os.path.isdir(home):
        raise ViewError(f"environment {venv}: pyvenv.cfg names no existing interpreter home ({home!r})")
    home_path = Path(os.path.realpath(home))
    return home_path.parent if home_path.name == "bin" else home_path


@lru_cache(maxsize=64)
def _site_folders(prefixes: tuple[str, ...]) -> tuple[str, ...]:
    found = set()
    for prefix in prefixes:
        for pattern in _SITE_GLOBS:
            found.update(str(p) for p in Path(prefix).glob(pattern) if p.is_dir() and not p.is_symlink())
    return tuple(sorted(found))


@dataclass(frozen=True)
class _Index:
    by_size: dict  # file size -> paths (regular files)
    outside: tuple[str, ...]  # what the folder needs from outside the allow-list (for ViewError)


@lru_cache(maxsize=256)
def _index(folder: str, stamp: tuple, allowed: tuple[str, ...], is_venv: bool) -> _Index:
    """Sizes of every regular file under `folder`; for a venv, what its symlinks and .pth files reach
    outside `allowed`.  Cached per folder (environments are never written after they are made)."""
    by_size: dict[int, list[str]] = {}
    outside = []
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                target = os.path.realpath(entry.path)
                if is_venv and os.path.exists(target) and not _under(target, allowed):
                    outside.append(f"{entry.path} -> {target}")
            elif entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                by_size.setdefault(entry.stat(follow_symlinks=False).st_size, []).append(entry.path)
                if is_venv and entry.name.endswith(".pth"):
                    outside += _pth_outside(Path(entry.path), allowed)
    return _Index({k: tuple(v) for k, v in by_size.items()}, tuple(sorted(outside)))


def _pth_outside(pth: Path, allowed) -> list[str]:
    try:
        lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "import ", "import\t")):
            continue
        target = os.path.realpath(os.path.join(pth.parent, line))
        if os.path.exists(target) and not _under(target, allowed):
            out.append(f"{pth} puts {target} on sys.path")
    return out


def _folder_index(folder: Path, allowed: tuple[str, ...], is_venv: bool) -> _Index:
    st = folder.stat()
    return _index(str(folder), (st.st_ino, st.st_mtime_ns), allowed, is_venv)


def _bytecode_of(source: Path) -> list[Path]:
    cache = source.parent / "__pycache__"
    found = sorted(cache.glob(f"{source.stem}.*.pyc")) if cache.is_dir() else []
    legacy = source.with_suffix(".pyc")
    return found + ([legacy] if legacy.is_file() else [])


def copies_of(original: Path, folders) -> list[Path]:
    """Files under `folders` (indexed) with exactly the bytes of `original` (the original itself included)."""
    data = original.read_bytes()
    out = []
    for index in folders:
        for path in index.by_size.get(len(data), ()):
            try:
                with open(path, "rb") as fh:
                    same = fh.read(len(data) + 1) == data
            except OSError:
                continue
            if same:
                out.append(Path(path))
    return out


@dataclass(frozen=True)
class View:
    mounts: tuple[Mount, ...]  # before the tree (system, interpreter, emptied site folders, visible paths)
    hidden_tree: tuple[str, ...]  # repo-relative paths whited out in the overlay
    hidden_files: tuple[str, ...]  # host paths (outside the tree) covered by an empty file


def build_view(root: Path, visible: tuple[Path, ...], replaced: str | None) -> View:
    """The allow-list of a run of the tree `root` with the `visible` host folders (a venv, the plugin
    folder), hiding every copy of the file `replaced` (repo-relative) and its bytecode.  Raises ViewError."""
    venvs = [Path(v) for v in visible if (Path(v) / "pyvenv.cfg").is_file()]
    prefixes = sorted({str(interpreter_prefix(v)) for v in venvs})
    system = [os.path.realpath(p) for p in SYSTEM_TOP if os.path.isdir(p)]
    allowed = tuple(sorted({*system, *prefixes, *(os.path.realpath(p) for p in (root, *visible))}))
    mounts = list(_top_level())
    for venv in venvs:
        python = os.path.realpath(venv / "bin" / "python")
        if not _under(python, allowed):
            raise ViewError(f"environment {venv}: its interpreter {python} is outside the judged run's view")
    mounts += [Mount("ro-bind", p, p) for p in prefixes if not _under(p, system)]
    mounts += [Mount("empty-dir", "", p) for p in _site_folders((*prefixes, "/usr"))]
    mounts += [Mount("ro-bind", str(v), str(v)) for v in visible]
    indexes = {v: _folder_index(v, allowed, True) for v in venvs}
    for venv, index in indexes.items():
        if index.outside:
            raise ViewError(f"environment {venv} needs paths outside the judged run's view: "
                            + "; ".join(index.outside[:3]))
    if replaced is None:
        return View(tuple(mounts), (), ())
    original = root / replaced
    if not original.is_file():
        return View(tuple(mounts), (), ())
    tree_index = _folder_index(root, allowed, False)
    copies = copies_of(original, [tree_index, *indexes.values()])
    hidden = {p for c in [original, *copies] for p in _bytecode_of(c)} | {c for c in copies if c != original}
    hidden_tree = sorted(p.relative_to(root).as_posix() for p in hidden if p.is_relative_to(root))
    hidden_files = sorted(str(p) for p in hidden if not p.is_relative_to(root))
    return View(tuple(mounts), tuple(hidden_tree), tuple(hidden_files))


def mount_args(mounts) -> list[str]:
    """bubblewrap's arguments for `mounts` (the emptied folders stay writable until `remount_args`)."""
    args: list[str] = []
    for m in mounts:
        if m.kind == "ro-bind":
            args += ["--ro-bind", m.source, m.dest]
        elif m.kind == "symlink":
            args += ["--symlink", m.source, m.dest]
        else:
            args += ["--tmpfs", m.dest]
    return args


def remount_args(mounts) -> list[str]:
    """Last of all binds (a visible folder may lie inside an emptied one): the emptied folders read-only."""
    return [a for m in mounts if m.kind == "empty-dir" for a in ("--remount-ro", m.dest)]
