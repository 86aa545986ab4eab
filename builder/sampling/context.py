"""Cross-file context for a masked file: every other file of the pool it is given (the paper's pool by default,
`repo_files.context_pool`), most relevant first.

score(f) = import_score(f) + bm25_norm(f), sorted by score descending, ties: imported files first, then by path.

* import_score is 1.0 when the masked file imports `f` (absolute or relative imports, `from pkg import
  submodule`, and the package `__init__.py` files on the way), found with tree-sitter in prefix+suffix.
* bm25_norm is rank_bm25.BM25Okapi(k1=1.5, b=0.75) between the tokens of prefix and suffix (the query)
  and each file, divided by the query's max score (0 if the max is <= 0; negative scores clamp to 0).

The ground-truth middle never influences the ranking: the query and the import scan use prefix+suffix
only, and the masked file is left out of the BM25 corpus used for its own queries (its full text holds
the middle and would change IDF / avgdl).  Every file is tokenized once when the index is built; the
BM25 index over "corpus minus the masked file" is built lazily once per masked file and kept in a small
LRU cache, so several samples from one file share it.

Tokens: `\\w+` runs, lowercased; a run made of several snake_case / camelCase parts also yields
its parts (`getUserName` -> getusername, get, user, name).  prefix and suffix are tokenized separately
so no phantom token is glued together across the cut.

Import roots: the repo root, `src/` when the repo has one, and the masked file's own base directory
(its first ancestor directory that is not a package, as a script or pytest's prepend mode sees it).
"""
from __future__ import annotations

import posixpath
import re
import threading
from collections import Counter, OrderedDict
from typing import Collection, Iterable, Mapping

import tree_sitter
import tree_sitter_python
from rank_bm25 import BM25Okapi

from execrepobench_dataset.record import ContextFile

K1 = 1.5
B = 0.75
SCORE_DIGITS = 6  # decimals of a stored context score
_WORD = re.compile(r"\w+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z\d]+|[A-Z\d]+|[^\W_]+")
_PARSERS = threading.local()  # one tree-sitter parser per thread: repositories are built concurrently


def tokenize(text: str) -> list[str]:
    """`\\w+` identifiers, lowercased, plus their snake_case / camelCase parts when there are several."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.append(word.lower())
        parts = [p.lower() for chunk in word.split("_") if chunk for p in _PART.findall(chunk)]
        if len(parts) > 1:
            out.extend(parts)
    return out


def _parser() -> tree_sitter.Parser:
    if not hasattr(_PARSERS, "parser"):
        _PARSERS.parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))
    return _PARSERS.parser


def _dotted(node) -> list[str]:
    return [c.text.decode("utf-8", "replace") for c in node.named_children if c.type == "identifier"]


def _import_nodes(root) -> Iterable:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in ("import_statement", "import_from_statement"):
            yield node
        else:
            stack.extend(node.children)


def _parse_imports(code: str) -> list[tuple[int, list[str], list[list[str]]]]:
    """(level, module parts, imported names) per import; `import a.b` is (0, [a, b], [])."""
    tree = _parser().parse(code.encode("utf-8"))
    found: list[tuple[int, list[str], list[list[str]]]] = []
    for node in _import_nodes(tree.root_node):
        names = []
        for n in node.children_by_field_name("name"):
            if n.type == "aliased_import":
                n = n.child_by_field_name("name")
            if n is not None and n.type == "dotted_name":
                names.append(_dotted(n))
        if node.type == "import_statement":
            found.extend((0, parts, []) for parts in names if parts)
            continue
        module = node.child_by_field_name("module_name")
        if module is None:
            continue
        if module.type == "relative_import":
            level = sum(c.text.count(b".") for c in module.children if c.type == "import_prefix")
            sub = next((c for c in module.children if c.type == "dotted_name"), None)
            found.append((level, _dotted(sub) if sub is not None else [], names))
        elif module.type == "dotted_name":
            found.append((0, _dotted(module), names))
    return found


def _dirs_of(paths: Collection[str]) -> set[str]:
    dirs = {""}
    for p in paths:
        d = posixpath.dirname(p)
        while d and d not in dirs:
            dirs.add(d)
            d = posixpath.dirname(d)
    return dirs


def _resolve(base: str, parts: list[str], paths: Collection[str], dirs: set[str]) -> list[str] | None:
    """Files imported by importing `parts` below directory `base` (None when it is not in the repo)."""
    out: list[str] = []
    d = base
    for i, part in enumerate(parts):
        d = posixpath.join(d, part) if d else part
        if d + "/__init__.py" in paths:
            out.append(d + "/__init__.py")
        elif i == len(parts) - 1 and d + ".py" in paths:
            out.append(d + ".py")
        elif d not in dirs:  # neither regular nor namespace package
            return None
    return out


def _base_dir(file_name: str, paths: Collection[str]) -> str:
    d = posixpath.dirname(file_name)
    while d and posixpath.join(d, "__init__.py") in paths:
        d = posixpath.dirname(d)
    return d


def imported_paths(code: str, file_name: str, all_paths: Collection[str]) -> set[str]:
    """Repo files (from `all_paths`) that `code`, living at `file_name`, imports; never `file_name` itself."""
    paths = all_paths if isinstance(all_paths, (set, frozenset, dict)) else set(all_paths)
    return _imported(code, file_name, paths, _dirs_of(paths))


def _imported(code: str, file_name: str, paths: Collection[str], dirs: set[str]) -> set[str]:
    roots = list(dict.fromkeys([_base_dir(file_name, paths), ""] + (["src"] if "src" in dirs else [])))
    out: set[str] = set()
    for level, parts, names in _parse_imports(code):
        if level:
            if level - 1 > file_name.count("/"):
                continue  # beyond the repo root
            base = posixpath.dirname(file_name)
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            if posixpath.join(base, "__init__.py") in paths:
                out.add(posixpath.join(base, "__init__.py"))
            bases = [base]
        else:
            bases = roots
        for base in bases:
            hit = _resolve(base, parts, paths, dirs)
            if hit is None:
                continue
            out.update(hit)
            for name in names:
                out.update(_resolve(base, parts + name, paths, dirs) or ())
            break
    out.discard(file_name)
    return out


class RepoContextIndex:
    """Ranks a repository's files as cross-file context for masked files; build once per repository."""

    def __init__(self, files: Mapping[str, str], cache_size: int = 32) -> None:
        self.files = dict(files)
        self.paths = sorted(self.files)
        self._path_set = frozenset(self.paths)
        self._dirs = _dirs_of(self.paths)
        self._tokens = {p: tokenize(self.files[p]) for p in self.paths}
        self._cache: OrderedDict[str, tuple[list[str], BM25Okapi | None]] = OrderedDict()
        self._cache_size = max(1, cache_size)
        self.stats = {"files_tokenized": len(self.paths), "bm25_built": 0, "bm25_cache_hits": 0, "queries": 0}

    def limit_cache(self, size: int) -> None:
        """Keep at most `size` BM25 indexes (each is a copy of the corpus statistics; a few suffice when the
        queries come grouped by file)."""
        self._cache_size = max(1, size)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _bm25(self, file_name: str) -> tuple[list[str], BM25Okapi | None]:
        if file_name in self._cache:
            self._cache.move_to_end(file_name)
            self.stats["bm25_cache_hits"] += 1
            return self._cache[file_name]
        docs = [p for p in self.paths if p != file_name]
        corpus = [self._tokens[p] for p in docs]
        # BM25Okapi divides by the vocabulary size and avgdl: no index for an empty corpus.
        bm25 = BM25Okapi(corpus, k1=K1, b=B) if any(corpus) else None
        self.stats["bm25_built"] += 1
        self._cache[file_name] = (docs, bm25)
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return docs, bm25

    def _bm25_norm(self, file_name: str, prefix: str, suffix: str) -> dict[str, float]:
        docs, bm25 = self._bm25(file_name)
        if bm25 is None:
            return {p: 0.0 for p in docs}
        # Same sum as bm25.get_scores(query) (which counts repeated query tokens once per occurrence),
        # grouped by distinct token so long queries stay cheap.
        total = None
        for tok, count in Counter(tokenize(prefix) + tokenize(suffix)).items():
            if tok in bm25.idf:
                s = count * bm25.get_scores([tok])
                total = s if total is None else total + s
        if total is None:
            return {p: 0.0 for p in docs}
        top = float(total.max())
        return {p: (max(float(s), 0.0) / top if top > 0 else 0.0) for p, s in zip(docs, total)}

    def scores(self, file_name: str, prefix: str, suffix: str) -> list[tuple[str, float, float]]:
        """(path, import_score, bm25_norm) for every file except `file_name`, in ranked order."""
        self.stats["queries"] += 1
        imports = _imported(prefix + suffix, file_name, self._path_set, self._dirs)
        bm25 = self._bm25_norm(file_name, prefix, suffix)
        rows = [(p, 1.0 if p in imports else 0.0, bm25[p]) for p in self.paths if p != file_name]
        rows.sort(key=lambda r: (-(r[1] + r[2]), -r[1], r[0]))  # a tie: the file it imports first
        return rows

    def rank(self, file_name: str, prefix: str, suffix: str) -> list[ContextFile]:
        """Every file except `file_name` as ContextFile(path, code), most relevant first."""
        return [ContextFile(p, self.files[p]) for p, _, _ in self.scores(file_name, prefix, suffix)]

    def ranked_paths(self, file_name: str, prefix: str, suffix: str) -> tuple[tuple[str, ...], tuple[float, ...]]:
        """(paths, scores) of every file except `file_name`, most relevant first: the context by reference.
        A score is import_score + bm25_norm, rounded to SCORE_DIGITS decimals (stable bytes)."""
        rows = self.scores(file_name, prefix, suffix)
        return tuple(p for p, _, _ in rows), tuple(round(i + b, SCORE_DIGITS) for _, i, b in rows)
