"""The command line (unohil); app.py builds it from one module per command."""
import sys


def main(argv: list[str] | None = None) -> int:
    # Imported here, not above: Ctrl-C while the command line's modules load is one line, not a traceback
    try:
        from unohil.harness.cli.app import main as run
    except KeyboardInterrupt:
        print("interrupted by SIGINT", file=sys.stderr)
        return 130
    return run(argv)


__all__ = ["main"]
