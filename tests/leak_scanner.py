"""The leak scanner: run INSIDE a judged run's view (standard library only, the environment's interpreter),
it reads every file it can and reports each place where an answer is.

    python leak_scanner.py NEEDLES.json REPORT.json

NEEDLES.json (written by tests/metric/test_leak_scan.py, outside the run):
- "texts": [{"id", "b64"}] - byte strings whose presence anywhere is a hit: the original masked file's
  full text, and each middle long enough to be distinctive (the hit rule is in tests/metric/test_leak_scan.py);
- "sources": [{"id", "b64"}] - original files: a code object equal to one compiled from them (whole
  module, at optimisation levels 0-2, or a function/class whose lines cover the middle) found in any
  marshalled bytecode (a `.pyc`, also inside archives) is a hit;
- "roots": the folders to walk ("/" for everything); "skip": folders left out (see below);
  "exclude": files left out (the completed file - the completion itself - and this needles file).

Every regular file is read whole; archives are opened and their members scanned the same way, nested
up to 3 deep: zip (wheels, eggs, jars), tar (sdists, plain or gz/bz2/xz), gzip, bz2, xz/lzma.
Parquet files (compressed pages) are listed for the caller to decode outside.  `/proc` (the run's own
processes) and `/dev` are not files of the view's content and are skipped; nothing else is.
"""
import base64
import bz2
import gzip
import importlib.util
import io
import json
import lzma
import marshal
import os
import stat
import sys
import tarfile
import types
import zipfile

MAX_DEPTH = 3
ALWAYS_SKIPPED = ("/proc", "/dev")


def code_needles(sources):
    """{code object: needle id}: each original compiled whole (levels 0-2), and its functions and classes
    whose line range covers the middle's first line."""
    found = {}
    for item in sources:
        text = base64.b64decode(item["b64"]).decode("utf-8")
        line = item.get("middle_line", 0)
        for level in (0, 1, 2):
            top = compile(text, item.get("file", "<original>"), "exec", dont_inherit=True, optimize=level)
            found[top] = item["id"]
            todo = [top]
            while todo:
                code = todo.pop()
                for const in code.co_consts:
                    if isinstance(const, types.CodeType):
                        todo.append(const)
                        lines = [ln for _, _, ln in const.co_lines() if ln is not None]
                        if line and lines and min(lines + [const.co_firstlineno]) <= line <= max(lines):
                            found[const] = item["id"] + ":" + const.co_name
    return found


def all_codes(code):
    todo = [code]
    while todo:
        current = todo.pop()
        yield current
        todo.extend(c for c in current.co_consts if isinstance(c, types.CodeType))


class Scanner:
    def __init__(self, needles):
        self.texts = [(t["id"], base64.b64decode(t["b64"])) for t in needles["texts"]]
        self.codes = code_needles(needles["sources"])
        self.magic = importlib.util.MAGIC_NUMBER
        self.hits, self.parquet, self.unreadable = [], [], []
        self.files = self.members = self.bytes = 0

    def hit(self, where, kind, needle):
        self.hits.append({"where": where, "kind": kind, "needle": needle})

    def data(self, where, data, depth=0):
        self.bytes += len(data)
        for name, needle in self.texts:
            if needle in data:
                self.hit(where, "text", name)
        if data[:4] == self.magic and len(data) > 16:
            try:
                code = marshal.loads(data[16:])
            except Exception:  # noqa: BLE001 - not a pyc after all
                code = None
            if isinstance(code, types.CodeType):
                for c in all_codes(code):
                    if c in self.codes:
                        self.hit(where, "bytecode", self.codes[c])
        if data[:4] == b"PAR1":
            self.parquet.append(where)
        if depth < MAX_DEPTH:
            self.archive(where, data, depth + 1)

    def archive(self, where, data, depth):
        try:
            if data[:4] == b"PK\x03\x04" or data[-22:-18] == b"PK\x05\x06":
                with zipfile.ZipFile(io.BytesIO(data)) as zf:
                    for info in zf.infolist():
                        if not info.is_dir():
                            self.member(f"{where}!{info.filename}", zf.read(info), depth)
                return
            if len(data) > 262 and data[257:262] == b"ustar":
                self.tar(where, data, depth)
                return
            for magic, opener in ((b"\x1f\x8b", gzip.decompress), (b"BZh", bz2.decompress),
                                  (b"\xfd7zXZ\x00", lzma.decompress), (b"\x5d\x00\x00", lzma.decompress)):
                if data.startswith(magic):
                    inner = opener(data)
                    if len(inner) > 262 and inner[257:262] == b"ustar":
                        self.tar(where, inner, depth)
                    else:
                        self.member(f"{where}!", inner, depth)
                    return
        except Exception as exc:  # noqa: BLE001 - a damaged or unusual archive: say so
            self.unreadable.append(f"{where}: {type(exc).__name__}: {exc}"[:300])

    def tar(self, where, data, depth):
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            for member in tf.getmembers():
                if member.isfile():
                    self.member(f"{where}!{member.name}", tf.extractfile(member).read(), depth)

    def member(self, where, data, depth):
        self.members += 1
        self.data(where, data, depth)

    def walk(self, roots, skip, exclude):
        skip = tuple(s.rstrip("/") for s in (*skip, *ALWAYS_SKIPPED))
        seen = set()
        stack = list(roots)
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError as exc:
                self.unreadable.append(f"{folder}: {exc}")
                continue
            for entry in entries:
                path = entry.path
                if path in skip or path in exclude:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append(path)
                elif stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    try:
                        with open(path, "rb") as fh:
                            data = fh.read()
                    except OSError as exc:
                        self.unreadable.append(f"{path}: {exc}")
                        continue
                    self.files += 1
                    self.data(path, data)


def main(needles_path, report_path):
    with open(needles_path, encoding="utf-8") as fh:
        needles = json.load(fh)
    scanner = Scanner(needles)
    scanner.walk(needles["roots"], needles.get("skip", ()), set(needles.get("exclude", ())) | {needles_path})
    report = {"files": scanner.files, "members": scanner.members, "bytes": scanner.bytes, "hits": scanner.hits,
              "parquet": scanner.parquet, "unreadable": scanner.unreadable[:200], "code_needles": len(scanner.codes),
              "python": sys.version}
    with open(report_path, "w", encoding="utf-8") as fh:
        json.dump(report, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
