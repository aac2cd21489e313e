"""Assert shapes that can never fail, found by reading every test file's syntax tree.

``assert a == b if c else d`` parses as ``assert (a == b) if c else d``: whenever ``c`` is false it
asserts ``d``, a truthy value, and passes. ``assert x in (True, False)`` passes for every bool.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def vacuous_asserts(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Assert):
            continue
        test = node.test
        if isinstance(test, ast.IfExp):
            found.append((node.lineno, "conditional expression: parenthesize the value compared"))
        elif (
            isinstance(test, ast.Compare)
            and isinstance(test.ops[0], ast.In)
            and isinstance(test.comparators[0], ast.Tuple | ast.List | ast.Set)
            and {ast.literal_eval(e) for e in test.comparators[0].elts if isinstance(e, ast.Constant)} == {True, False}
        ):
            found.append((node.lineno, "membership in (True, False): assert the expected value"))
    return found


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ('assert f() == "x"[:3] + "..." if len(v) > 3 else v', [1]),
        ("assert f() == (1 if c else 2)", []),
        ("assert s['ok'] in (True, False)", [1]),
        ("assert s['ok'] in (True, None)", []),
        ("x = 1\nassert x in [False, True]", [2]),
    ],
)
def test_the_detector_flags_exactly_the_vacuous_shapes(source: str, lines: list[int]) -> None:
    assert [line for line, _ in vacuous_asserts(source)] == lines


def test_no_test_file_has_an_assert_that_cannot_fail() -> None:
    files = sorted(TESTS.rglob("*.py"))
    assert len(files) > 20
    found = [
        f"{path.relative_to(TESTS)}:{line}: {why}" for path in files for line, why in vacuous_asserts(path.read_text())
    ]
    assert found == []
