"""A small, safe expression language for scenario times and conditions.

Integers, sweep variables, + - * // %, unary minus, parentheses, comparisons
(chained), `and`, `or`, `not`, abs(). Nothing else parses.
"""
from __future__ import annotations

import ast
import operator

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod}
_CMP = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.Eq: operator.eq, ast.NotEq: operator.ne}


class ExprError(ValueError):
    pass


def parse(text: str) -> ast.expr:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {text!r}: {exc.msg}") from None
    _check(tree.body, text)
    return tree.body


def _check(node: ast.AST, text: str) -> None:
    ok = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Name, ast.Constant, ast.Load, ast.Call,
          ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or, *_BIN, *_CMP)
    for sub in ast.walk(node):
        if not isinstance(sub, ok):
            raise ExprError(f"{text!r}: {type(sub).__name__} is not allowed here")
        if isinstance(sub, ast.Constant) and not isinstance(sub.value, int):
            raise ExprError(f"{text!r}: only integers (microseconds) are allowed, not {sub.value!r}")
        if isinstance(sub, ast.Call) and not (isinstance(sub.func, ast.Name) and sub.func.id == "abs"
                                              and len(sub.args) == 1 and not sub.keywords):
            raise ExprError(f"{text!r}: only abs(x) may be called")


def names(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id != "abs"}


def evaluate(node: ast.expr, env: dict[str, int]):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        try:
            return env[node.id]
        except KeyError:
            raise ExprError(f"unknown name {node.id!r}") from None
    if isinstance(node, ast.BinOp):
        return _BIN[type(node.op)](evaluate(node.left, env), evaluate(node.right, env))
    if isinstance(node, ast.UnaryOp):
        v = evaluate(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else (+v if isinstance(node.op, ast.UAdd) else not v)
    if isinstance(node, ast.Compare):
        left = evaluate(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            right = evaluate(comp, env)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        vals = (evaluate(v, env) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Call):
        return abs(evaluate(node.args[0], env))
    raise ExprError(f"cannot evaluate {ast.dump(node)}")
