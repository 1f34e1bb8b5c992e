"""Reports of a run, apart from running it: the console, the JSON results file, JUnit XML, whole-or-nothing file
writes; drawn from a results file, the HTML page and VCD; from trace files, Perfetto; the scenario JSON Schema."""
