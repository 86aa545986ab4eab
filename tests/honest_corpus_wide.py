"""More of the honest corpus (tests/honest_corpus.py): a fixture repository whose code uses gettext (plural
forms, the deprecated float plural that makes `gettext._as_int` call `sys._getframe` with the completion's
frame on the stack) with unittest-style tests and doctests, and masked sites drawn from a real
repository's source (`auto_sites`: the unique `return` and small `if` statements of a file).
"""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

I18NREPO = {
    "pyproject.toml": '''
        [project]
        name = "i18nrepo"
        version = "0.1"

        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        ''',
    "i18nrepo/__init__.py": "",
    "i18nrepo/plural.py": '''
        """Messages with plural forms (gettext)."""
        import gettext

        _PLURAL = gettext.c2py("n != 1")
        _CATALOG = gettext.NullTranslations()


        def files_message(count):
            """
            >>> files_message(1)
            '1 file'
            >>> files_message(3)
            '3 files'
            """
            word = _CATALOG.ngettext("file", "files", count)
            return f"{count} {word}"


        def plural_index(n):
            """Which plural form a count takes (a float count is deprecated in gettext: it warns)."""
            if isinstance(n, float) and n.is_integer():
                n = int(n)
            return _PLURAL(n)


        def size_message(size):
            if size < 1024:
                return _CATALOG.ngettext("%d byte", "%d bytes", size) % size
            kib = size / 1024
            return f"{kib:.1f} KiB"


        def join_names(names):
            """
            >>> join_names(["x", "y"])
            'x and y'
            """
            if not names:
                return ""
            if len(names) == 1:
                return names[0]
            return ", ".join(names[:-1]) + " and " + names[-1]
        ''',
    "tests/__init__.py": "",
    "tests/test_plural.py": '''
        import unittest
        import warnings

        from i18nrepo.plural import files_message, join_names, plural_index, size_message


        class PluralTests(unittest.TestCase):
            def test_files(self):
                self.assertEqual(files_message(1), "1 file")
                self.assertEqual(files_message(0), "0 files")

            def test_index(self):
                self.assertEqual(plural_index(1), 0)
                self.assertEqual(plural_index(4), 1)
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # a whole float count is no deprecated plural
                    self.assertEqual(plural_index(1.0), 0)

            def test_float_count_warns(self):
                with self.assertWarns(DeprecationWarning):
                    self.assertEqual(plural_index(2.5), 1)

            def test_sizes(self):
                self.assertEqual(size_message(1), "1 byte")
                self.assertEqual(size_message(10), "10 bytes")
                self.assertEqual(size_message(2048), "2.0 KiB")


        class JoinTests(unittest.TestCase):
            def test_join(self):
                self.assertEqual(join_names([]), "")
                self.assertEqual(join_names(["a"]), "a")
                self.assertEqual(join_names(["a", "b", "c"]), "a, b and c")


        def test_join_two():
            assert join_names(["p", "q"]) == "p and q"


        if __name__ == "__main__":
            unittest.main()
        ''',
}
I18NREPO_MANIFEST = '''[[repo]]
source = "path:{path}"
name = "i18nrepo"
test_paths = ["i18nrepo", "tests"]
pytest_args = ["--doctest-modules"]
'''
# (masked middle, the judged tests: those whose id names one of these words)
I18NREPO_SITES = [
    ('word = _CATALOG.ngettext("file", "files", count)', ("files",)),
    ("if isinstance(n, float) and n.is_integer():\n        n = int(n)", ("index", "float")),
    ("return _PLURAL(n)", ("index", "float")),
    ('if size < 1024:\n        return _CATALOG.ngettext("%d byte", "%d bytes", size) % size', ("sizes",)),
    ("kib = size / 1024", ("sizes",)),
    ("if len(names) == 1:\n        return names[0]", ("join",)),
    ('return ", ".join(names[:-1]) + " and " + names[-1]', ("join",)),
]


def write_i18nrepo(root: Path) -> Path:
    for name, text in I18NREPO.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def auto_sites(text: str, limit: int) -> list[str]:
    """Masked middles drawn from a real file: `return` statements with an operator or a constant, and `if`
    statements of at most four lines, that occur once in the file, in the file's order."""
    tree = ast.parse(text)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Return, ast.If)) or node.col_offset == 0:
            continue
        if isinstance(node, ast.Return) and (node.value is None or isinstance(node.value, ast.Name)):
            continue
        if node.end_lineno - node.lineno > 3 or (isinstance(node, ast.If) and node.orelse):
            continue
        segment = ast.get_source_segment(text, node)
        if segment and not segment.startswith("elif") and text.count(segment) == 1 and any(
                isinstance(n, (ast.BinOp, ast.Compare, ast.BoolOp, ast.Constant)) for n in ast.walk(node)):
            out.append((node.lineno, segment))
    return [s for _, s in sorted(out)][:limit]
