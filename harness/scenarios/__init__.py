"""The scenario format: its dataclasses, the validating loader, its expressions, the unit vocabulary and -k selection."""
