"""Tests for builder/sampling/context.py: cross-file context ranking (imports first, then BM25), leak-free."""
from __future__ import annotations

import importlib.util
import pathlib
import random

from execrepobench.builder.sampling.context import RepoContextIndex, imported_paths, tokenize
from execrepobench_dataset.record import ContextFile

# Lexical noise shared with the masked files below, so BM25 alone would NOT put the imported files first.
NOISE = "def render_widget(canvas, palette):\n    return canvas.draw(palette.color, palette.brush)\n"


def paths_of(ctx):
    return [c.path for c in ctx]


def split(code: str, middle: str):
    """prefix, suffix around the first occurrence of `middle` in code."""
    i = code.index(middle)
    return code[:i], code[i + len(middle):]


def top_set(index, name, prefix, suffix, n):
    return set(paths_of(index.rank(name, prefix, suffix))[:n])


def noise_files(n=4, where="noise"):
    return {f"{where}/n{i}.py": NOISE * (i + 1) + f"VALUE_{i} = {i}\n" for i in range(n)}


# ---------------------------------------------------------------- tokenizer


def test_tokenize_splits_snake_and_camel_case_and_lowercases():
    toks = tokenize("getUserName = parse_xml_file(HTTPServer)")
    for t in ("getusername", "get", "user", "name", "parse_xml_file", "parse", "xml", "file",
              "httpserver", "http", "server"):
        assert t in toks
    assert tokenize("__init__") == ["__init__"]
    assert all(t == t.lower() for t in toks)


# ---------------------------------------------------------------- imports rank first


def test_absolute_import_ranks_first_with_package_init():
    files = {
        "pkg/__init__.py": "",
        "pkg/models.py": "class Record:\n    pass\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/deep.py": "class Deep:\n    pass\n",
        "app.py": "import pkg.sub.deep\n" + NOISE + "x = render_widget(None, None)\n",
        **noise_files(),
    }
    idx = RepoContextIndex(files)
    prefix, suffix = split(files["app.py"], "x = ")
    assert top_set(idx, "app.py", prefix, suffix, 3) == {"pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/deep.py"}
    # Without the import line, BM25 puts the noise files first: the import score is what lifted them.
    no_import = RepoContextIndex(files).rank("app.py", prefix.replace("import pkg.sub.deep\n", ""), suffix)
    assert paths_of(no_import)[0].startswith("noise/")


def test_relative_single_dot_import():
    files = {
        "pkg/__init__.py": "",
        "pkg/helpers.py": "def fmt(v):\n    return str(v)\n",
        "pkg/core.py": "from .helpers import fmt\n" + NOISE + "y = fmt(1)\n",
        "pkg/unrelated.py": "def other():\n    return 2\n",
        **noise_files(),
    }
    idx = RepoContextIndex(files)
    prefix, suffix = split(files["pkg/core.py"], "y = ")
    assert top_set(idx, "pkg/core.py", prefix, suffix, 2) == {"pkg/__init__.py", "pkg/helpers.py"}
    rows = idx.scores("pkg/core.py", prefix, suffix)
    assert {p for p, imp, _ in rows if imp == 1.0} == {"pkg/__init__.py", "pkg/helpers.py"}


def test_relative_double_dot_import_and_from_dot_import_submodule():
    files = {
        "pkg/__init__.py": "",
        "pkg/base.py": "class Base:\n    pass\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/sibling.py": "S = 1\n",
        "pkg/sub/deep.py": "from ..base import Base\nfrom . import sibling\n" + NOISE + "z = Base()\n",
        **noise_files(),
    }
    idx = RepoContextIndex(files)
    prefix, suffix = split(files["pkg/sub/deep.py"], "z = ")
    assert top_set(idx, "pkg/sub/deep.py", prefix, suffix, 4) == {
        "pkg/__init__.py", "pkg/base.py", "pkg/sub/__init__.py", "pkg/sub/sibling.py"}


def test_from_pkg_import_submodule_vs_attribute():
    paths = {"pkg/__init__.py", "pkg/mod.py", "pkg/other.py", "lib.py"}
    code = "from pkg import mod, helper_function\nfrom pkg import (other as o)\n"
    assert imported_paths(code, "lib.py", paths) == {"pkg/__init__.py", "pkg/mod.py", "pkg/other.py"}
    # An attribute import pulls the package only; stdlib / unknown modules resolve to nothing.
    assert imported_paths("from pkg import helper_function\nimport os, json\n", "lib.py", paths) == {"pkg/__init__.py"}


def test_src_layout_and_script_directory():
    files = {
        "src/mylib/__init__.py": "",
        "src/mylib/io.py": "def read(path):\n    return open(path).read()\n",
        "src/mylib/misc.py": "def misc():\n    return 0\n",
        "tests/conftest_helpers.py": "def make():\n    return 1\n",
        "tests/test_io.py": "from mylib.io import read\nimport conftest_helpers\n" + NOISE + "def test_read():\n    pass\n",
        **noise_files(),
    }
    idx = RepoContextIndex(files)
    prefix, suffix = split(files["tests/test_io.py"], "    pass")
    assert top_set(idx, "tests/test_io.py", prefix, suffix, 3) == {
        "src/mylib/__init__.py", "src/mylib/io.py", "tests/conftest_helpers.py"}


def test_imported_paths_never_contains_the_file_itself_and_skips_beyond_root():
    paths = {"pkg/__init__.py", "pkg/a.py"}
    assert imported_paths("from . import a\n", "pkg/__init__.py", paths) == {"pkg/a.py"}
    assert imported_paths("from .... import a\nimport pkg.a\n", "pkg/a.py", paths) == {"pkg/__init__.py"}


# ---------------------------------------------------------------- BM25 among non-imported files


def test_bm25_orders_non_imported_files_by_lexical_overlap():
    query_words = ["alpha_sensor", "bravo_meter", "charlie_gauge", "delta_probe"]
    pad = lambda k, n: " ".join(f"pad{k}w{j}" for j in range(n))  # equal lengths, unique filler words
    files = {
        "q.py": "\n".join(f"{w} = read({w!r})" for w in query_words) + "\nMIDDLE\n",
        "f4.py": " ".join(query_words) + "\n",
        "f3.py": " ".join(query_words[:3]) + " " + pad(3, 3) + "\n",
        "f2.py": " ".join(query_words[:2]) + " " + pad(2, 6) + "\n",
        "f1.py": query_words[0] + " " + pad(1, 9) + "\n",
        "f0.py": pad(0, 12) + "\n",
        "g0.py": pad(10, 12) + "\n",
        **{f"other/x{k}.py": pad(20 + k, 12) + "\n" for k in range(6)},
    }
    idx = RepoContextIndex(files)
    prefix, suffix = split(files["q.py"], "MIDDLE")
    rows = idx.scores("q.py", prefix, suffix)
    assert [p for p, _, _ in rows][:6] == ["f4.py", "f3.py", "f2.py", "f1.py", "f0.py", "g0.py"]
    assert rows[0][2] == 1.0 and all(0.0 <= b <= 1.0 for _, _, b in rows)
    assert all(b == 0.0 for _, _, b in rows[4:])  # zero-score ties: path ascending
    assert [p for p, _, _ in rows][4:] == sorted(p for p, _, _ in rows[4:])


# ---------------------------------------------------------------- the middle cannot leak


def test_masked_file_never_in_its_own_context():
    files = {"pkg/__init__.py": "from . import a\n", "pkg/a.py": "import pkg\n", "b.py": "import b\n"}
    idx = RepoContextIndex(files)
    for name, code in files.items():
        ctx = idx.rank(name, code, "")
        assert name not in paths_of(ctx)
        assert sorted(paths_of(ctx)) == sorted(set(files) - {name})


def _leak_repo():
    files = {f"mod{i}.py": f"def func_{i}(arg):\n    return arg + {i}\n" + NOISE * (i % 3) for i in range(8)}
    files["pkg/__init__.py"] = ""
    files["pkg/secret.py"] = "zanzibar_quokka = 42\n" * 3
    files["pkg/target.py"] = "import mod1\n\ndef compute(v):\n    MIDDLE\n    return func_1(v)\n"
    return files


def test_middle_cannot_change_ranking_property():
    base = _leak_repo()
    prefix, suffix = split(base["pkg/target.py"], "MIDDLE")
    rng = random.Random(0)
    vocab = sorted({t for code in base.values() for t in tokenize(code)}) + ["zanzibar_quokka", "brand_new_token"]
    expected = None
    for trial in range(12):
        n = rng.choice([0, 1, 5, 50, 2000])
        middle = " ".join(rng.choice(vocab) for _ in range(n))
        if trial % 3 == 0:
            middle += "\n    from . import secret\n    import mod5, mod6\n"
        files = dict(base, **{"pkg/target.py": prefix + middle + suffix})
        idx = RepoContextIndex(files)
        got = (idx.scores("pkg/target.py", prefix, suffix), idx.rank("pkg/target.py", prefix, suffix))
        if expected is None:
            expected = got
        assert got == expected, f"trial {trial}: middle of {n} tokens changed the ranking"


def test_rare_token_only_in_middle_is_not_promoted():
    files = _leak_repo()
    prefix, suffix = split(files["pkg/target.py"], "MIDDLE")
    middle = "x = zanzibar_quokka + zanzibar_quokka"
    files["pkg/target.py"] = prefix + middle + suffix
    idx = RepoContextIndex(files)
    rows = {p: (imp, bm) for p, imp, bm in idx.scores("pkg/target.py", prefix, suffix)}
    assert rows["pkg/secret.py"] == (0.0, 0.0)
    assert paths_of(idx.rank("pkg/target.py", prefix, suffix))[0] == "mod1.py"
    # Sanity: a query that leaks the middle WOULD promote it, so the assertion above is meaningful.
    leaky = idx.scores("pkg/target.py", prefix + middle + suffix, "")
    assert leaky[0][0] in ("mod1.py", "pkg/secret.py") and dict((p, b) for p, _, b in leaky)["pkg/secret.py"] > 0.5


def test_imports_only_in_the_middle_are_not_counted():
    files = _leak_repo()
    prefix, suffix = split(files["pkg/target.py"], "MIDDLE")
    middle = "from . import secret\n    import mod7\n"
    files["pkg/target.py"] = prefix + middle + suffix
    idx = RepoContextIndex(files)
    imported = {p for p, imp, _ in idx.scores("pkg/target.py", prefix, suffix) if imp}
    assert imported == {"mod1.py"}
    assert imported_paths(prefix + middle + suffix, "pkg/target.py", files) >= {"pkg/secret.py", "mod7.py"}


# ---------------------------------------------------------------- determinism and caching


def test_deterministic_regardless_of_insertion_order():
    files = _leak_repo()
    prefix, suffix = split(files["pkg/target.py"], "MIDDLE")
    a = RepoContextIndex(files).rank("pkg/target.py", prefix, suffix)
    b = RepoContextIndex(dict(reversed(list(files.items())))).rank("pkg/target.py", prefix, suffix)
    idx = RepoContextIndex(files)
    assert a == b == idx.rank("pkg/target.py", prefix, suffix) == idx.rank("pkg/target.py", prefix, suffix)
    assert all(isinstance(c, ContextFile) and c.code == files[c.path] for c in a)


def test_each_file_tokenized_once_and_bm25_built_once_per_masked_file():
    files = _leak_repo()
    idx = RepoContextIndex(files)
    assert idx.stats["files_tokenized"] == len(files)
    names = sorted(files)[:3]
    for _ in range(5):
        for name in names:
            code = files[name]
            idx.rank(name, code[: len(code) // 2], code[len(code) // 2 + 1:])
    assert idx.stats["files_tokenized"] == len(files)
    assert idx.stats["bm25_built"] == len(names)
    assert idx.stats["queries"] == 15


# ---------------------------------------------------------------- a real package


def test_real_package_sibling_import_ranked_first():
    spec = importlib.util.find_spec("tqdm")  # a dependency of the project: always installed
    root = pathlib.Path(spec.origin).parent.parent
    files = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
             for p in sorted((root / "tqdm").rglob("*.py"))}
    assert "tqdm/dask.py" in files and "tqdm/auto.py" in files and len(files) > 20
    idx = RepoContextIndex(files)
    code = files["tqdm/dask.py"]
    cut = code.index("class TqdmCallback")
    prefix, suffix = code[:cut], code[cut + 40:]
    assert "from .auto import" in prefix
    ranked = paths_of(idx.rank("tqdm/dask.py", prefix, suffix))
    assert set(ranked[:2]) == {"tqdm/auto.py", "tqdm/__init__.py"}
    assert "tqdm/dask.py" not in ranked and len(ranked) == len(files) - 1


def test_the_context_pool_is_the_papers_unless_tests_are_asked_for(tmp_path):
    from execrepobench.builder.sampling.repo_files import context_pool, read_pool

    for rel in ("pkg/__init__.py", "pkg/core.py", "pkg/test_core.py", "tests/test_pkg.py", "test/helpers.py",
                "docs/conf.py", "build/lib/pkg/core.py", "setup.py", "conftest.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n", encoding="utf-8")
    pool = read_pool(tmp_path)
    assert sorted(context_pool(pool, tmp_path)) == ["pkg/__init__.py", "pkg/core.py"]  # what the paper may mask
    assert context_pool(pool, tmp_path, with_tests=True) == pool  # the explicit option: every .py file
