"""Reports of a run, apart from running it: the console, the JSON results file, JUnit XML, whole-or-nothing file writes."""
