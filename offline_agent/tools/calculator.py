"""Arithmetic for the agent, without `eval`: the expression is parsed with `ast` and walked by hand.

Allowed: numbers, + - * / // % **, unary + and -, parentheses, and the functions abs, round, min, max, sqrt.
Names, attributes, calls to anything else, subscripts, strings and lambdas are refused with a ToolError, so
`__import__('os')` and attribute tricks fail cleanly.

Every input the grammar allows must finish at once, so each costly operation is bounded before it runs, not
after: an expression over 300 characters, an exponent above 1000 in absolute value, a product or power whose
integer result would pass 4,000 digits (under Python's 4,300-digit limit for printing an integer), and a
`round` to more than 1000 digits either side of the point (CPython computes 10**-ndigits for a negative
one: `round(1, -10**8)` ran for minutes) are refused; so are numbers that are not finite and nesting deeper
than the parser or the walk can take. Thousands separators are read where no function call is written ("1,000 +
2"); inside one ("min(1,000)") they could be argument commas too, and are refused rather than guessed at. Every
refusal is a ToolError with a short reason.
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
MAX_DIGITS = 4000  # below sys.get_int_max_str_digits()'s default (4300): every result can be printed
MAX_ROUND_DIGITS = 1000

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
_GROUPED = re.compile(r"\d+(?:,\d{3})+\b")
_FUNCTIONS = {"abs": abs, "round": round, "min": min, "max": max, "sqrt": math.sqrt}


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression; raise ToolError with a short reason on anything else."""
    text = expression.strip()
    if not text:
        raise ToolError("empty expression")
    if len(text) > MAX_LENGTH:
        raise ToolError(f"expression longer than {MAX_LENGTH} characters")
    text = text.replace("^", "**").replace("×", "*").replace("÷", "/")
    ambiguous = _THOUSANDS.search(text)
    if ambiguous is None:
        pass
    elif not any(name in text for name in _FUNCTIONS):
        # Thousands separators ("1,234") only where no function call could be using the comma.
        text = _THOUSANDS.sub("", text)
    else:  # "min(1,000)": one number or two arguments? Never guess (it read as min(1, 0) = 0).
        shown = next(m.group() for m in _GROUPED.finditer(text) if m.start() < ambiguous.start() < m.end())
        raise ToolError(
            f"{shown!r} in a function call could be one number or a list of arguments: write it without commas "
            "(1000), or with a space after each comma that separates arguments (min(1, 200))"
        )
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise ToolError(f"not an arithmetic expression: {expression!r}") from exc
    except (RecursionError, MemoryError):
        raise ToolError("expression nested too deeply") from None
    try:
        value = _eval(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except OverflowError:
        raise ToolError("result too large") from None
    except RecursionError:
        raise ToolError("expression nested too deeply") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("result is not a finite number")
    return value


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ToolError("only numbers are allowed")
        return _checked(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        _check_size(node.op, left, right)
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):
            raise ToolError("result is not a real number")
        return _checked(result)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if node.keywords or not node.args or len(node.args) > 8:
            raise ToolError(f"bad call to {node.func.id}")
        args = [_eval(arg) for arg in node.args]
        if node.func.id == "round":
            _check_round(args)
        try:
            return _checked(_FUNCTIONS[node.func.id](*args))
        except (TypeError, ValueError) as exc:
            raise ToolError(f"{node.func.id}: {exc}") from None
    raise ToolError(f"not allowed in arithmetic: {type(node).__name__.lower()}")


def _checked(value: Any) -> Any:
    """`value`, unless it is a float that is not finite or an integer over MAX_DIGITS digits."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("result is not a finite number")
    if isinstance(value, int) and _digits(value) > MAX_DIGITS:
        raise ToolError(f"result over {MAX_DIGITS} digits")
    return value


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


def _check_round(args: list[Any]) -> None:
    """round(x, n) computes 10**-n for a negative n: bound n before CPython does that."""
    if len(args) == 2 and isinstance(args[1], int) and abs(args[1]) > MAX_ROUND_DIGITS:
        raise ToolError(f"round: more than {MAX_ROUND_DIGITS} digits")


def _digits(value: int) -> int:
    """Decimal digits of |value| (at most one too many), from its bit length: no conversion to text."""
    return max(1, int(abs(value).bit_length() * 0.30103) + 1)


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
