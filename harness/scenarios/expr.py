"""The scenario language's expressions (times, conditions): protocol/expr.py, which the catalogue's
wait bounds are written in too."""
from protocol.expr import ExprError, evaluate, names, parse

__all__ = ["ExprError", "evaluate", "names", "parse"]
