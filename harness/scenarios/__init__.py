"""The scenario format: its dataclasses, the validating loader (validation/), its expressions, the unit
vocabulary and roles, the runner's lead, -k selection and where the installed library is."""
