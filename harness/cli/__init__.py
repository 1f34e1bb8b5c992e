"""The command line (unohil); app.py builds it from one module per command."""
from unohil.harness.cli.app import main

__all__ = ["main"]
