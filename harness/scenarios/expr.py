"""The scenario language's expressions (times, conditions): protocol/expr.py, which the catalogue's
wait bounds are written in too.

Validation evaluates every expression of a scenario for every one of its races, so a run never
meets one that fails. evaluate() still turns any failure into an ExprError that is also a
ScheduleError: should one ever fail at run time (a scenario built by other code than load.py),
it is that race's error, never a crash that loses the run's results."""
from unohil.protocol.expr import ExprError as _ProtocolExprError, names
from unohil.protocol.expr import evaluate as _evaluate, parse as _parse

from unohil.harness.errors import ScheduleError

ExprError = _ProtocolExprError


class EvaluationError(ExprError, ScheduleError):
    """An expression that has no value for a race's variables (a division by zero, ...)."""


def parse(text: str):
    try:
        return _parse(text)
    except ExprError:
        raise
    except (ValueError, RecursionError, MemoryError) as exc:    # a literal over 4,300 digits, nesting
        raise ExprError(f"cannot parse {text[:40]!r}{'...' if len(text) > 40 else ''}: {exc}") from None


def evaluate(node, env: dict[str, int]):
    try:
        return _evaluate(node, env)
    except (ArithmeticError, TypeError, ValueError, RecursionError) as exc:     # ValueError: ExprError too
        raise EvaluationError(f"{exc} (with {', '.join(f'{k}={v}' for k, v in env.items()) or 'no variables'})") \
            from None


__all__ = ["EvaluationError", "ExprError", "evaluate", "names", "parse"]
