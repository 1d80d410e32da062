"""Safe arithmetic expressions: CLARAty numeric attributes and joint-constraint laws.

CLARAty files write numbers as C-like expressions (``M_PI/2``, ``-M_PI``) and
couple joints with laws such as ``2*joint1 + 0.1`` or
``atan2(sin(joint1), 2 + cos(joint1))``. This module parses that language with
a small recursive-descent parser into an expression tree; nothing is ever
handed to Python's ``eval``. Anything outside the grammar is refused with an
:class:`ExpressionError` that says where and why.

Grammar (``^`` is power, right-associative, binding tighter than unary minus,
so ``-2^2 == -4`` and ``2^-1 == 0.5``)::

    expression := sum
    sum        := product (("+" | "-") product)*
    product    := signed (("*" | "/") signed)*
    signed     := ("+" | "-") signed | power
    power      := atom ("^" signed)?
    atom       := number | name | name "(" sum ("," sum)* ")" | "(" sum ")"

Names are the math.h constants in :data:`CONSTANTS` (they win over variables
of the same name) or the variables the caller allows (joint names). Functions
are those in :data:`FUNCTIONS`. Values and gradients are computed together by
forward-mode differentiation of the tree, on numpy arrays (so batches work).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Collection, Iterator, Mapping

import numpy as np

from ...errors import SolveError, suggest

MAX_LENGTH = 4000
MAX_DEPTH = 64

CONSTANTS: dict[str, float] = {
    "M_E": math.e,
    "M_LOG2E": 1.0 / math.log(2.0),
    "M_LOG10E": 1.0 / math.log(10.0),
    "M_LN2": math.log(2.0),
    "M_LN10": math.log(10.0),
    "M_PI": math.pi,
    "M_PI_2": math.pi / 2.0,
    "M_PI_4": math.pi / 4.0,
    "M_1_PI": 1.0 / math.pi,
    "M_2_PI": 2.0 / math.pi,
    "M_2_SQRTPI": 2.0 / math.sqrt(math.pi),
    "M_SQRT2": math.sqrt(2.0),
    "M_SQRT1_2": math.sqrt(0.5),
}

Array = np.ndarray
Gradient = np.ndarray | None  # (..., n_variables), None when the value does not depend on any variable


@dataclass(frozen=True)
class _Function:
    arity: int
    value: Callable[..., Array]
    partials: tuple[Callable[..., Array], ...]  # d value / d argument k, as functions of all arguments


def _hypot2(y: Array, x: Array) -> Array:
    return x * x + y * y


FUNCTIONS: dict[str, _Function] = {
    "sin": _Function(1, np.sin, (np.cos,)),
    "cos": _Function(1, np.cos, (lambda x: -np.sin(x),)),
    "tan": _Function(1, np.tan, (lambda x: 1.0 / np.cos(x) ** 2,)),
    "asin": _Function(1, np.arcsin, (lambda x: 1.0 / np.sqrt(1.0 - x * x),)),
    "acos": _Function(1, np.arccos, (lambda x: -1.0 / np.sqrt(1.0 - x * x),)),
    "atan": _Function(1, np.arctan, (lambda x: 1.0 / (1.0 + x * x),)),
    "atan2": _Function(2, np.arctan2, (lambda y, x: x / _hypot2(y, x), lambda y, x: -y / _hypot2(y, x))),
    "sqrt": _Function(1, np.sqrt, (lambda x: 0.5 / np.sqrt(x),)),
    "exp": _Function(1, np.exp, (np.exp,)),
    "log": _Function(1, np.log, (lambda x: 1.0 / x,)),
    "abs": _Function(1, np.abs, (np.sign,)),
    "pow": _Function(2, np.power, ()),  # differentiated like "^"
}


class ExpressionError(ValueError):
    """The text is not an expression of the accepted language (``position`` is 0-based)."""

    def __init__(self, message: str, position: int | None = None, expected: str = ""):
        self.message = message
        self.position = position
        self.expected = expected
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"{message}{where}")


# ---------------------------------------------------------------------- tree
def _add(a: Gradient, b: Gradient) -> Gradient:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _scale(factor: Array, g: Gradient) -> Gradient:
    return None if g is None else np.asarray(factor)[..., None] * g


def _power(base: Array, gb: Gradient, exponent: Array, ge: Gradient) -> tuple[Array, Gradient]:
    value = np.power(base, exponent)
    grad = _scale(exponent * np.power(base, exponent - 1.0), gb)
    if ge is not None:  # only when the exponent varies: log(base) is needed
        grad = _add(grad, _scale(value * np.log(base), ge))
    return value, grad


class _Node:
    def evaluate(self, env: Mapping[str, Array]) -> Array:
        raise NotImplementedError

    def dual(self, env: Mapping[str, Array], index: Mapping[str, int], shape: tuple[int, ...]) -> tuple[Array, Gradient]:
        """Value and gradient with respect to the variables numbered by ``index``."""
        raise NotImplementedError


@dataclass(frozen=True)
class _Number(_Node):
    value: float

    def evaluate(self, env):
        return np.float64(self.value)

    def dual(self, env, index, shape):
        return np.float64(self.value), None


@dataclass(frozen=True)
class _Variable(_Node):
    name: str

    def evaluate(self, env):
        return env[self.name]

    def dual(self, env, index, shape):
        g = np.zeros(shape + (len(index),))
        g[..., index[self.name]] = 1.0
        return env[self.name], g


@dataclass(frozen=True)
class _Negate(_Node):
    operand: _Node

    def evaluate(self, env):
        return -self.operand.evaluate(env)

    def dual(self, env, index, shape):
        v, g = self.operand.dual(env, index, shape)
        return -v, None if g is None else -g


@dataclass(frozen=True)
class _Binary(_Node):
    op: str
    left: _Node
    right: _Node

    def evaluate(self, env):
        a, b = self.left.evaluate(env), self.right.evaluate(env)
        if self.op == "+":
            return a + b
        if self.op == "-":
            return a - b
        if self.op == "*":
            return a * b
        if self.op == "/":
            return a / b
        return np.power(a, b)

    def dual(self, env, index, shape):
        a, ga = self.left.dual(env, index, shape)
        b, gb = self.right.dual(env, index, shape)
        if self.op == "+":
            return a + b, _add(ga, gb)
        if self.op == "-":
            return a - b, _add(ga, None if gb is None else -gb)
        if self.op == "*":
            return a * b, _add(_scale(b, ga), _scale(a, gb))
        if self.op == "/":
            return a / b, _add(_scale(1.0 / b, ga), _scale(-a / (b * b), gb))
        return _power(a, ga, b, gb)


@dataclass(frozen=True)
class _Call(_Node):
    name: str
    args: tuple[_Node, ...]

    def evaluate(self, env):
        return FUNCTIONS[self.name].value(*(a.evaluate(env) for a in self.args))

    def dual(self, env, index, shape):
        duals = [a.dual(env, index, shape) for a in self.args]
        values = [v for v, _ in duals]
        if self.name == "pow":
            return _power(values[0], duals[0][1], values[1], duals[1][1])
        function = FUNCTIONS[self.name]
        grad: Gradient = None
        for partial, (_, g) in zip(function.partials, duals):
            if g is not None:
                grad = _add(grad, _scale(partial(*values), g))
        return function.value(*values), grad


# ---------------------------------------------------------------------- parser
_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[-+*/^(),]))"
)
_NUMBER_TAIL = re.compile(r"[A-Za-z0-9_.]")


def _tokenize(text: str) -> Iterator[tuple[str, str, int]]:
    """(kind, text, position) triples ending with ("end", "", len); errors surface when reached."""
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            yield ("end", "", len(text))
            return
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ExpressionError(f"unexpected character {text[pos]!r}", pos,
                                  "numbers, names, + - * / ^, parentheses and commas")
        kind = match.lastgroup or "op"
        start = match.start(kind)
        token = match.group(kind)
        if kind == "number" and _NUMBER_TAIL.match(text, match.end()):
            tail = re.match(r"[A-Za-z0-9_.+-]*", text[match.end():]).group()
            raise ExpressionError(f"malformed number {token + tail!r}", start, "a number like 2, 0.5, 1e-3 or .25")
        if kind == "op" and token == "*" and text[match.end() : match.end() + 1] == "*":
            raise ExpressionError("'**' is not an operator", start, "^ for powers")
        yield (kind, token, start)
        pos = match.end()


class _Parser:
    def __init__(self, text: str, variables: Collection[str]):
        self.stream = _tokenize(text)
        self.tokens: list[tuple[str, str, int]] = []
        self.i = 0
        self.variables = variables
        self.depth = 0
        self.used: list[str] = []

    @property
    def current(self) -> tuple[str, str, int]:
        while len(self.tokens) <= self.i:  # tokens are read lazily, so errors appear in reading order
            self.tokens.append(next(self.stream))
        return self.tokens[self.i]

    def take(self) -> tuple[str, str, int]:
        token = self.current
        self.i += 1
        return token

    def expect(self, op: str) -> None:
        kind, text, pos = self.current
        if kind != "op" or text != op:
            found = "the end" if kind == "end" else repr(text)
            raise ExpressionError(f"expected {op!r}, found {found}", pos)
        self.i += 1

    def nest(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"expression nested more than {MAX_DEPTH} levels deep", pos)

    def parse(self) -> _Node:
        node = self.sum()
        kind, text, pos = self.current
        if kind != "end":
            raise ExpressionError(f"unexpected {text!r}", pos, "an operator (+ - * / ^) or the end")
        return node

    def sum(self) -> _Node:
        node = self.product()
        while self.current[0] == "op" and self.current[1] in "+-":
            op = self.take()[1]
            node = _Binary(op, node, self.product())
        return node

    def product(self) -> _Node:
        node = self.signed()
        while self.current[0] == "op" and self.current[1] in "*/":
            op = self.take()[1]
            node = _Binary(op, node, self.signed())
        return node

    def signed(self) -> _Node:
        kind, text, pos = self.current
        if kind == "op" and text in "+-":
            self.take()
            self.nest(pos)
            operand = self.signed()
            self.depth -= 1
            return operand if text == "+" else _Negate(operand)
        return self.power()

    def power(self) -> _Node:
        base = self.atom()
        if self.current[0] == "op" and self.current[1] == "^":
            pos = self.take()[2]
            self.nest(pos)
            exponent = self.signed()
            self.depth -= 1
            return _Binary("^", base, exponent)
        return base

    def atom(self) -> _Node:
        kind, text, pos = self.take()
        if kind == "number":
            return _Number(float(text))
        if kind == "name":
            if self.current[0] == "op" and self.current[1] == "(":
                return self.call(text, pos)
            if text in CONSTANTS:
                return _Number(CONSTANTS[text])
            if text in self.variables:
                if text not in self.used:
                    self.used.append(text)
                return _Variable(text)
            if text in FUNCTIONS:
                raise ExpressionError(f"function {text!r} needs arguments in parentheses", pos)
            valid = [*CONSTANTS, *self.variables]
            what = "joint or constant" if self.variables else "constant"
            raise ExpressionError(f"unknown name {text!r}", pos, f"a {what}: {suggest(text, valid)}")
        if kind == "op" and text == "(":
            self.nest(pos)
            node = self.sum()
            self.expect(")")
            self.depth -= 1
            return node
        found = "the end" if kind == "end" else repr(text)
        raise ExpressionError(f"expected a number, a name or '(', found {found}", pos)

    def call(self, name: str, pos: int) -> _Node:
        function = FUNCTIONS.get(name)
        if function is None:
            raise ExpressionError(f"unknown function {name!r}", pos, ", ".join(sorted(FUNCTIONS)))
        self.expect("(")
        self.nest(pos)
        args = [self.sum()]
        while self.current[0] == "op" and self.current[1] == ",":
            self.take()
            args.append(self.sum())
        self.expect(")")
        self.depth -= 1
        if len(args) != function.arity:
            raise ExpressionError(f"{name}() takes {function.arity} argument(s), got {len(args)}", pos)
        return _Call(name, tuple(args))


# ---------------------------------------------------------------------- public API
@dataclass(frozen=True)
class Expression:
    """A parsed expression; ``variables`` are the names it uses, in order of first use."""

    text: str
    variables: tuple[str, ...]
    _root: _Node

    @property
    def is_constant(self) -> bool:
        return not self.variables

    def value(self, env: Mapping[str, float | Array] | None = None) -> Array:
        """Value for the variable values in ``env`` (scalars or equally shaped arrays)."""
        env = {k: np.asarray(v, float) for k, v in (env or {}).items()}
        with np.errstate(all="ignore"):
            return np.asarray(self._root.evaluate(env), float)

    def value_and_gradient(self, env: Mapping[str, float | Array], wrt: tuple[str, ...]) -> tuple[Array, Array]:
        """Value and d value / d ``wrt`` (shape ``(..., len(wrt))``; zeros for unused names)."""
        arrays = {k: np.asarray(v, float) for k, v in env.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values())) if arrays else ()
        index = {name: k for k, name in enumerate(wrt)}
        with np.errstate(all="ignore"):
            value, grad = self._root.dual(arrays, index, shape)
        value = np.broadcast_to(np.asarray(value, float), shape)
        grad = np.zeros(shape + (len(wrt),)) if grad is None else np.broadcast_to(grad, shape + (len(wrt),))
        return value, grad


def parse_expression(text: str, variables: Collection[str] = ()) -> Expression:
    """Parse ``text``; names may be :data:`CONSTANTS` or members of ``variables``."""
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    if not text.strip():
        raise ExpressionError("empty expression", expected="a number or an expression")
    parser = _Parser(text, variables)
    root = parser.parse()
    return Expression(text, tuple(parser.used), root)


def evaluate_number(text: str) -> float:
    """Value of a constant expression (numbers, :data:`CONSTANTS`, operators, functions)."""
    value = float(parse_expression(text).value())
    if not math.isfinite(value):
        raise ExpressionError(f"evaluates to {value} (division by zero or a function outside its domain)",
                              expected="a finite number")
    return value


def coupling_functions(expression: Expression, sources: tuple[str, ...]
                       ) -> tuple[Callable[[np.ndarray], float | Array], Callable[[np.ndarray], Array]]:
    """``(function, gradient)`` of ``expression`` over source values given in ``sources`` order.

    Both accept ``values`` of shape ``(n,)`` or ``(..., n)``. A value that is not
    finite (e.g. ``sqrt`` of a negative number) raises :class:`SolveError`
    naming the law and the source values.
    """

    def env(values: np.ndarray) -> dict[str, np.ndarray]:
        values = np.asarray(values, float)
        if values.shape[-1:] != (len(sources),):
            raise ValueError(f"expected {len(sources)} source values, got shape {values.shape}")
        return {name: values[..., k] for k, name in enumerate(sources)}

    def check(values: np.ndarray, result: Array) -> None:
        if not np.all(np.isfinite(result)):
            at = ", ".join(f"{n}={v}" for n, v in zip(sources, np.asarray(values, float).reshape(-1, len(sources))[0]))
            raise SolveError(f"joint law {expression.text!r} is undefined (not finite) at {at or 'no sources'}")

    def function(values: np.ndarray) -> float | Array:
        result, _ = expression.value_and_gradient(env(values), sources)
        check(values, result)
        return float(result) if result.ndim == 0 else np.array(result)

    def gradient(values: np.ndarray) -> Array:
        _, grad = expression.value_and_gradient(env(values), sources)
        check(values, grad)
        return np.array(grad)

    return function, gradient
