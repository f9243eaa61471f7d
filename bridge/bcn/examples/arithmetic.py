"""Safe arithmetic for the rules bot: find an expression in a sentence and evaluate it exactly.

Text from a chat is hostile input, so nothing here calls `eval`: the expression is parsed
by Python's `ast` and walked over a whitelist of number literals and operators, with
limits on length, exponents and result size so that `9**9**9` cannot hang the bot.
Results are exact fractions, so `0.1 + 0.2` is `0.3`.
"""

from __future__ import annotations

import ast
import math
import re
from fractions import Fraction

MAX_EXPRESSION_LENGTH = 200
MAX_EXPONENT = 64
MAX_DIGITS = 60


class CannotCompute(ValueError):
    """The text is not an expression this evaluator will compute; the message says why."""


_WORD_OPERATORS = (
    (re.compile(r"\bmultiplied\s+by\b|\btimes\b", re.IGNORECASE), "*"),
    (re.compile(r"\bdivided\s+by\b|\bover\b", re.IGNORECASE), "/"),
    (re.compile(r"\bplus\b", re.IGNORECASE), "+"),
    (re.compile(r"\bminus\b", re.IGNORECASE), "-"),
    (re.compile(r"\bmod(?:ulo)?\b", re.IGNORECASE), "%"),
    (re.compile(r"\bto\s+the\s+power\s+of\b", re.IGNORECASE), "^"),
)
_SYMBOLS = str.maketrans({"×": "*", "·": "*", "÷": "/", "−": "-", "^": "**", "x": "*", "X": "*"})
_EXPRESSION_RUN = re.compile(r"[\d\s.+\-*/()^%×÷·−xX]+")
_HAS_DIGIT = re.compile(r"\d")

_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
}


def find_expression(text: str) -> str | None:
    """The first run of arithmetic in `text` ("what is 17*3?" → "17*3"), or None.

    Number words for operators ("3 times 4") are read as their symbols first. Only a run
    that holds a digit counts, so "x" alone or a lone "-" is not an expression.
    """
    spelled = text
    for pattern, symbol in _WORD_OPERATORS:
        spelled = pattern.sub(symbol, spelled)
    for match in _EXPRESSION_RUN.finditer(spelled):
        candidate = match.group().strip().strip("xX").strip()
        if _HAS_DIGIT.search(candidate):
            return candidate
    return None


def evaluate(expression: str) -> Fraction:
    """Compute `expression` exactly; raise `CannotCompute` for anything else."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CannotCompute(f"the expression is longer than {MAX_EXPRESSION_LENGTH} characters")
    source = expression.translate(_SYMBOLS).strip()
    if not source:
        raise CannotCompute("there is nothing to compute")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        raise CannotCompute(f"{expression.strip()!r} is not an arithmetic expression") from None
    return _check_size(_value(tree.body))


def format_number(value: Fraction) -> str:
    """An integer as is; anything else as a decimal with up to 10 significant digits."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.10g}"


def _value(node: ast.expr) -> Fraction:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise CannotCompute("only numbers can be computed")
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise CannotCompute("the number is too large")
        # A float literal means what it says in decimal: 0.1 is 1/10, not its binary value.
        return Fraction(repr(node.value)) if isinstance(node.value, float) else Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        operand = _value(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left), _value(node.right)
        operation = _BINARY.get(type(node.op))
        if operation is not None:
            return _check_size(operation(left, right))
        if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod):
            if right == 0:
                raise CannotCompute("division by zero")
            if isinstance(node.op, ast.Div):
                return left / right
            return Fraction(left // right) if isinstance(node.op, ast.FloorDiv) else left % right
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
    raise CannotCompute("only + - * / // % and ^ on numbers can be computed")


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        raise CannotCompute("only whole-number exponents can be computed")
    if abs(exponent) > MAX_EXPONENT:
        raise CannotCompute(f"exponents above {MAX_EXPONENT} are too large")
    if base == 0 and exponent < 0:
        raise CannotCompute("division by zero")
    return _check_size(base ** int(exponent))


def _check_size(value: Fraction) -> Fraction:
    if max(len(str(abs(value.numerator))), len(str(value.denominator))) > MAX_DIGITS:
        raise CannotCompute(f"the result has more than {MAX_DIGITS} digits")
    return value
