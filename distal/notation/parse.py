"""The text form of index notation: `A(i,j) = B(i,k) * C(k,j)`.

Grammar (operators associate to the left; `-` also unary):

    stmt   := access ("=" | "+=") expr
    access := NAME [ "(" [ NAME { "," NAME } ] ")" ]
    expr   := term { ("+" | "-") term }
    term   := unary { ("*" | "/") unary }
    unary  := "-" unary | atom
    atom   := NUMBER | access | "(" expr ")" | "sum" "(" NAME "," expr ")" | FUNC "(" expr ")"
    FUNC   := "abs" | "conj" | "exp" | "sqrt"

`sum` and the function names are read as such unless a tensor of that name
is given (then they are that tensor's accesses).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from distal.errors import DistalError, NotationError, ParseError
from distal.notation.ast import (
    FUNCTIONS,
    Access,
    Add,
    Assignment,
    Call,
    Div,
    Expr,
    IndexVar,
    Literal,
    Mul,
    Neg,
    Sub,
    Sum,
)
from distal.notation.check import check_statement
from distal.notation.tensor_base import TensorBase
from distal.notation.variable import TensorVar, live_tensor

__all__ = ["parse"]

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op>\+=|[-+*/(),=]))"
)
_MAX_DEPTH = 200


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "num", "name", "op", "end"
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ParseError(f"unexpected character {text[pos]!r}", text, pos)
        kind = m.lastgroup
        assert kind is not None
        toks.append(_Tok(kind, m.group(kind), m.start(kind)))
        pos = m.end()
    toks.append(_Tok("end", "", len(text)))
    return toks


class _Parser:
    def __init__(self, text: str, tensors: dict[str, TensorVar]) -> None:
        self.text = text
        self.tensors = tensors
        self.toks = _tokenize(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def fail(self, expected: str, tok: _Tok | None = None) -> ParseError:
        tok = tok or self.peek()
        found = "end of text" if tok.kind == "end" else repr(tok.text)
        return ParseError(f"expected {expected}, but found {found}", self.text, tok.pos)

    def expect(self, op: str) -> _Tok:
        tok = self.peek()
        if tok.kind != "op" or tok.text != op:
            raise self.fail(repr(op))
        return self.take()

    def statement(self) -> Assignment:
        lhs = self.access(self.take_name("a tensor name"))
        tok = self.peek()
        if tok.kind != "op" or tok.text not in ("=", "+="):
            raise self.fail("'=' or '+='")
        self.take()
        rhs = self.expr()
        if self.peek().kind != "end":
            raise self.fail("an operator or end of text")
        return Assignment(lhs, rhs, accumulate=tok.text == "+=")

    def take_name(self, what: str) -> _Tok:
        tok = self.peek()
        if tok.kind != "name":
            raise self.fail(what)
        return self.take()

    def access(self, name: _Tok) -> Access:
        tensor = self.tensors.get(name.text)
        if tensor is None:
            known = ", ".join(sorted(self.tensors)) or "none"
            raise ParseError(
                f"expected a known tensor (given: {known}), but found {name.text!r}",
                self.text,
                name.pos,
            )
        indices: list[IndexVar] = []
        if self.peek().kind == "op" and self.peek().text == "(":
            self.take()
            if not (self.peek().kind == "op" and self.peek().text == ")"):
                indices.append(IndexVar(self.take_name("an index variable").text))
                while self.peek().kind == "op" and self.peek().text == ",":
                    self.take()
                    indices.append(IndexVar(self.take_name("an index variable").text))
            self.expect(")")
        try:
            return Access(tensor, tuple(indices))
        except NotationError as exc:
            raise ParseError(exc.message, self.text, name.pos) from None

    def expr(self) -> Expr:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise ParseError("expression nested too deeply", self.text, self.peek().pos)
        e = self.term()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            op = self.take().text
            rhs = self.term()
            e = Add(e, rhs) if op == "+" else Sub(e, rhs)
        self.depth -= 1
        return e

    def term(self) -> Expr:
        e = self.unary()
        while self.peek().kind == "op" and self.peek().text in ("*", "/"):
            op = self.take().text
            rhs = self.unary()
            e = Mul(e, rhs) if op == "*" else Div(e, rhs)
        return e

    def unary(self) -> Expr:
        if self.peek().kind == "op" and self.peek().text == "-":
            self.take()
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise ParseError("expression nested too deeply", self.text, self.peek().pos)
            e = Neg(self.unary())
            self.depth -= 1
            return e
        return self.atom()

    def atom(self) -> Expr:
        tok = self.peek()
        if tok.kind == "num":
            self.take()
            value: int | float = float(tok.text) if re.search("[.eE]", tok.text) else int(tok.text)
            if isinstance(value, float) and not math.isfinite(value):
                raise ParseError(f"expected a finite number, but found {tok.text}", self.text, tok.pos)
            return Literal(value)
        if tok.kind == "name":
            self.take()
            if tok.text == "sum" and "sum" not in self.tensors:
                self.expect("(")
                var = IndexVar(self.take_name("an index variable").text)
                self.expect(",")
                body = self.expr()
                self.expect(")")
                return Sum(var, body)
            if tok.text in FUNCTIONS and tok.text not in self.tensors:
                self.expect("(")
                operand = self.expr()
                self.expect(")")
                return Call(tok.text, operand)
            return self.access(tok)
        if tok.kind == "op" and tok.text == "(":
            self.take()
            e = self.expr()
            self.expect(")")
            return e
        raise self.fail("a tensor, a number, '-' or '('")


def parse(text: str, **tensors: TensorBase | TensorVar) -> Assignment:
    """Parse the text form of a statement over the named tensors (user `Tensor`s or their `TensorVar`s).

    The statement is also recorded on its output tensor, as the Python form
    does (given a var, on its tensor while that is alive).

    >>> import distal as dt
    >>> A, B, C = (dt.Tensor(n, (2, 2)) for n in "ABC")
    >>> str(dt.parse("A(i,j) = B(i,k) * C(k,j)", A=A, B=B, C=C))
    'A(i,j) = B(i,k) * C(k,j)'
    """
    if not isinstance(text, str):
        raise NotationError(f"expected statement text, but found {type(text).__name__}")
    for name, t in tensors.items():
        if not isinstance(t, TensorBase | TensorVar):
            raise NotationError(f"expected a Tensor for {name}, but found {type(t).__name__}")
        if t.name != name:
            raise NotationError(f"expected tensor {t.name} to be passed as {t.name}=, but found {name}=")
    try:
        stmt = _Parser(text, {n: t.var if isinstance(t, TensorBase) else t for n, t in tensors.items()}).statement()
        check_statement(stmt)
    except DistalError:
        raise
    except RecursionError:
        raise ParseError("expression nested too deeply", text, 0) from None
    out = next((t for t in tensors.values() if isinstance(t, TensorBase) and t.var.uid == stmt.lhs.tensor.uid),
               None) or live_tensor(stmt.lhs.tensor.uid)
    if out is not None:
        out.record(stmt)
    return stmt
