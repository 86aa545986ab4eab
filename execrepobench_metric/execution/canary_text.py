"""The source of a canary test module (`canaries.py`): plain test functions, each a few assertions on
random constants, like an ordinary unit test; one that must fail asserts a value off by a little (or,
where module doctests are judged, a plain function's docstring example shows a result off by one).

No imports, no fixtures, no markers, no warnings: nothing a repository's configuration (warnings as
errors, strict markers, autouse fixtures keyed on names) reacts to differently than for its own
simple tests.  The expected value is written as a literal, so the module says nothing about which
tests are canaries other than what running them shows.
"""
from __future__ import annotations

from typing import Sequence

# Each template: (setup lines, the asserted expression, the right value, a wrong one) from random draws.


def _sum(rng, words):
    values = [rng.randint(2, 99) for _ in range(rng.randint(3, 5))]
    return [f"values = {values!r}"], "sum(values)", sum(values), sum(values) + rng.choice((-2, -1, 1, 2))


def _upper(rng, words):
    word = rng.choice(words)
    wrong = word[:-1].upper() + ("X" if word[-1:].upper() != "X" else "Y")
    return [f"name = {word!r}"], "name.upper()", word.upper(), wrong


def _smallest(rng, words):
    items = rng.sample(range(1, 200), rng.randint(3, 6))
    ordered = sorted(items)
    return [f"items = {items!r}"], "sorted(items)[0]", ordered[0], ordered[1]


def _lookup(rng, words):
    keys = rng.sample(list(words) if len(words) >= 3 else ["alpha", "beta", "gamma"], 3)
    table = {k: rng.randint(0, 50) for k in keys}
    key = rng.choice(keys)
    return [f"table = {table!r}"], f"table.get({key!r}, 0)", table[key], table[key] + 1


def _parts(rng, words):
    count = rng.randint(2, 5)
    text = "-".join(rng.choice(words) for _ in range(count))
    return [f"text = {text!r}"], "len(text.split('-'))", count, count + 1


def _span(rng, words):
    values = rng.sample(range(-50, 150), rng.randint(3, 5))
    return [f"values = {values!r}"], "max(values) - min(values)", max(values) - min(values), \
        max(values) - min(values) - 1


TEMPLATES = (_sum, _upper, _smallest, _lookup, _parts, _span)


def function_text(name: str, must_fail: bool, words: Sequence[str], rng) -> str:
    lines = [f"def {name}():"]
    picked = rng.sample(TEMPLATES, rng.randint(1, 2))
    failing = rng.randrange(len(picked)) if must_fail else -1
    for i, template in enumerate(picked):
        setup, expression, right, wrong = template(rng, words)
        lines += [f"    {line}" for line in setup]
        lines.append(f"    assert {expression} == {(wrong if i == failing else right)!r}")
    return "\n".join(lines) + "\n"


def doctest_text(name: str, rng) -> str:
    """A plain function whose docstring example must fail (its shown result is off by one)."""
    values = [rng.randint(2, 60) for _ in range(rng.randint(2, 4))]
    shown = sum(values) + rng.choice((-1, 1))
    return (f'def {name}(values):\n    """The total of the values.\n\n    >>> {name}({values!r})\n    {shown}\n'
            f'    """\n    return sum(values)\n')


def module_text(functions: Sequence[tuple[str, str]], words: Sequence[str], rng, doctest: str = "") -> str:
    """A test module of `functions` ((name, "passed" | "failed") in order) and, with `doctest` (a function
    name), a function whose docstring example must fail, at a random place among them."""
    parts = [function_text(name, expected == "failed", words, rng) for name, expected in functions]
    if doctest:
        parts.insert(rng.randint(0, len(parts)), doctest_text(doctest, rng))
    return "\n\n".join(parts)
