"""The calculator: arithmetic only, parsed with ast; hostile input fails with a ToolError, never runs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offline_agent.errors import ToolError
from offline_agent.tools import CalculatorTool, ToolRegistry
from offline_agent.tools.calculator import evaluate, format_number


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("3*7", 21),
        ("1979 - 1961", 18),
        ("2**10", 1024),
        ("2^10", 1024),
        ("-(4 + 6) / 4", -2.5),
        ("7 // 2", 3),
        ("7 % 4", 3),
        ("1,234 + 1", 1235),
        ("abs(-3) + max(1, 5, 2) + min(4, 9)", 12),
        ("round(2.567, 2)", 2.57),
        ("sqrt(16)", 4.0),
        ("  12  ", 12),
        ("1e3 + 1", 1001.0),
    ],
)
def test_arithmetic(expression: str, expected: float) -> None:
    assert evaluate(expression) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "   ",
        "__import__('os').system('echo hacked')",
        "().__class__.__bases__[0].__subclasses__()",
        "open('/etc/passwd').read()",
        "x + 1",
        "eval('1+1')",
        "(lambda: 1)()",
        "'a' * 3",
        "[1, 2, 3]",
        "1 if True else 2",
        "a.b",
        "abs.__call__(1)",
        "True + 1",
        "9**9**9",
        "round(1, -10**8)",
        "round(1, 10**8)",
        "(10**999)**5",
        "10**1001",
        "2**100000",
        "1/0",
        "1 % 0",
        "sqrt(-1)",
        "(-8) ** 0.5",
        "max()",
        "round(1, ndigits=2)",
        "1e308 * 10",
        "1" * 301,
        "1 +",
        "import os",
    ],
)
def test_hostile_or_bad_input_is_refused(expression: str) -> None:
    with pytest.raises(ToolError):
        evaluate(expression)


def test_huge_products_are_bounded() -> None:
    with pytest.raises(ToolError):
        evaluate(" * ".join(["(10**900)"] * 12))


def test_every_result_can_be_printed() -> None:
    """Results stay under Python's int-to-string limit (4,300 digits), so formatting never raises."""
    assert CalculatorTool()({"expression": "(10**999)*(10**999)*(10**999)*(10**999)"}).endswith(" = 1" + "0" * 3996)
    with pytest.raises(ToolError, match="over 4000 digits"):
        evaluate("(10**999)*(10**999)*(10**999)*(10**999)*(10**999)")
    assert evaluate("round(123456, -3)") == 123000 and evaluate("round(5, -1000)") == 0


@given(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6))
def test_matches_python_on_integers(a: int, b: int) -> None:
    assert evaluate(f"{a} + {b}") == a + b
    assert evaluate(f"{a} * ({b})") == a * b
    if b:
        assert evaluate(f"{a} // ({b})") == a // b


@given(st.text(max_size=30))
def test_never_raises_anything_but_tool_error(text: str) -> None:
    try:
        value = evaluate(text)
    except ToolError:
        return
    assert isinstance(value, (int, float)) and not isinstance(value, bool)
    assert not isinstance(value, float) or math.isfinite(value)


def test_formatting() -> None:
    assert format_number(4.0) == "4"
    assert format_number(2 / 3) == "0.6666666667"
    assert format_number(10**20) == str(10**20)


def test_tool_through_registry_turns_errors_into_observations() -> None:
    registry = ToolRegistry([CalculatorTool()])
    ok = registry.run("calculator", {"expression": "6*7"})
    assert ok.observation == "6*7 = 42" and not ok.is_error
    bad = registry.run("calculator", {"expression": "__import__('os')"})
    assert bad.is_error and bad.observation.startswith("Error:")
    wrong_shape = registry.run("calculator", {"expr": "1"})
    assert wrong_shape.is_error and "keys" in wrong_shape.observation
    missing = registry.run("nope", "x")
    assert missing.is_error and "no tool" in missing.observation
