"""Arithmetic for the agent, without `eval`: the expression is parsed with `ast` and walked by hand.

Allowed: numbers, + - * / // % **, unary + and -, parentheses, and the functions abs, round, min, max, sqrt.
Limits: an exponent above 1000 in absolute value, an intermediate integer over 10,000 digits, or an expression
over 300 characters is refused. Names, attributes, calls to anything else, subscripts, strings and lambdas
are refused with a ToolError, so `__import__('os')` and attribute tricks fail cleanly.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from typing import Any

from offline_agent.errors import ToolError

MAX_LENGTH = 300
MAX_EXPONENT = 1000
MAX_DIGITS = 10_000

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_FUNCTIONS = {"abs": abs, "round": round, "min": min, "max": max, "sqrt": math.sqrt}


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression; raise ToolError with a short reason on anything else."""
    text = expression.strip()
    if not text:
        raise ToolError("empty expression")
    if len(text) > MAX_LENGTH:
        raise ToolError(f"expression longer than {MAX_LENGTH} characters")
    text = text.replace("^", "**").replace("×", "*").replace("÷", "/")
    if not any(name in text for name in _FUNCTIONS):
        # Thousands separators ("1,234") only where no function call could be using the comma.
        text = _THOUSANDS.sub("", text)
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise ToolError(f"not an arithmetic expression: {expression!r}") from exc
    try:
        value = _eval(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except OverflowError:
        raise ToolError("result too large") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("result is not a finite number")
    return value


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ToolError("only numbers are allowed")
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        _check_size(node.op, left, right)
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):
            raise ToolError("result is not a real number")
        return result
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if node.keywords or not node.args or len(node.args) > 8:
            raise ToolError(f"bad call to {node.func.id}")
        args = [_eval(arg) for arg in node.args]
        try:
            return _FUNCTIONS[node.func.id](*args)
        except (TypeError, ValueError) as exc:
            raise ToolError(f"{node.func.id}: {exc}") from None
    raise ToolError(f"not allowed in arithmetic: {type(node).__name__.lower()}")


def _check_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse a power or product whose exact integer result would be huge, before computing it."""
    if isinstance(op, ast.Pow) and abs(right) > MAX_EXPONENT:
        raise ToolError(f"exponent above {MAX_EXPONENT}")
    if not (isinstance(left, int) and isinstance(right, int)):
        return  # floats overflow to an error instead of growing
    if isinstance(op, ast.Pow) and right > 0 and abs(left) > 1:
        digits = right * math.log10(abs(left))
    elif isinstance(op, ast.Mult):
        digits = _digits(left) + _digits(right)
    else:
        return
    if digits > MAX_DIGITS:
        raise ToolError(f"result over {MAX_DIGITS} digits")


def _digits(value: int) -> int:
    return len(str(abs(value))) if abs(value) < 10**50 else int(abs(value).bit_length() * 0.30103) + 1


def format_number(value: int | float) -> str:
    """Integers as they are; floats rounded to 10 significant digits, without a trailing .0."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.10g}"
    return str(value)


class CalculatorTool:
    """`calculator[{"expression": "3*7"}]`: arithmetic on numbers the agent found."""

    name = "calculator"
    description = "evaluates an arithmetic expression, e.g. differences of years or sums of numbers"
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"expression": {"type": "string", "maxLength": 100}},
        "required": ["expression"],
    }
    example = '{"expression": "1969 - 1903"}'

    def __call__(self, argument: dict[str, Any]) -> str:
        expression = argument["expression"]
        return f"{expression} = {format_number(evaluate(expression))}"
