"""A small, safe expression language: scenario times and conditions, and the catalogue's bounds.

Integers, names (sweep variables, parameters), + - * // %, unary minus, parentheses, comparisons
(chained), `and`, `or`, `not`, abs(), max() and min(). Nothing else parses.
"""
from __future__ import annotations

import ast
import operator

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod}
_CALLS = {"abs": (abs, 1, 1), "max": (max, 2, None), "min": (min, 2, None)}   # name: function, fewest, most args
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
        if isinstance(sub, ast.Call):
            fn = _CALLS.get(sub.func.id) if isinstance(sub.func, ast.Name) else None
            if fn is None or sub.keywords or len(sub.args) < fn[1] or (fn[2] is not None and len(sub.args) > fn[2]):
                raise ExprError(f"{text!r}: only abs(x), max(x, y, ...) and min(x, y, ...) may be called")


def names(node: ast.expr) -> set[str]:
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in called}


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
        return _CALLS[node.func.id][0](*(evaluate(a, env) for a in node.args))
    raise ExprError(f"cannot evaluate {ast.dump(node)}")
