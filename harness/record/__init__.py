"""Recording sessions on a unit (live or from a trace) into scenario files, and replaying them with a diff."""
