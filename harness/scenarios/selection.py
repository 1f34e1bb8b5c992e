"""-k EXPR: pick scenarios by words in their name, file and tags, as pytest's -k does."""
from __future__ import annotations

import re

from unohil.harness.errors import SelectionError

_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_OPERATORS = {"and", "or", "not", "(", ")"}


def matcher(expression: str):
    tokens = _TOKEN.findall(expression)
    if not tokens:
        raise SelectionError(f"-k {expression!r}: empty expression")
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def parse_binary(word: str, operand, combine):
        def parse():
            left = operand()
            while peek() == word:
                take()
                left = (lambda a, b: lambda s: combine(a(s), b(s)))(left, operand())
            return left
        return parse

    def parse_or():
        return parse_binary("or", parse_and, lambda x, y: x or y)()

    def parse_and():
        return parse_binary("and", parse_not, lambda x, y: x and y)()

    def parse_not():
        if peek() == "not":
            take()
            inner = parse_not()
            return lambda s: not inner(s)
        return parse_atom()

    def parse_atom():
        tok = peek()
        if tok is None or tok in ("and", "or", ")"):
            raise SelectionError(f"-k {expression!r}: expected a word at {tok or 'the end'}")
        take()
        if tok == "(":
            inner = parse_or()
            if peek() != ")":
                raise SelectionError(f"-k {expression!r}: missing ')'")
            take()
            return inner
        word = tok.lower()
        return lambda s: word in s

    fn = parse_or()
    if pos != len(tokens):
        hint = ""
        if tokens[pos] not in _OPERATORS and pos and tokens[pos - 1] not in _OPERATORS:
            # words in a row: pytest's -k joins nothing implicitly either
            joined = " and ".join(t for t in tokens if t not in _OPERATORS)
            hint = f"; to pick by several words, join them with 'and' (or 'or'): -k {joined!r}"
        raise SelectionError(f"-k {expression!r}: unexpected {tokens[pos]!r}{hint}")
    return lambda sc: fn(" ".join([sc.name, sc.file, *sc.tags, sc.unit]).lower())
