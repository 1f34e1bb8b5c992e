"""Reports of a run, apart from running it: the console, the JSON results file, JUnit XML, a verdict in words,
whole-or-nothing file writes, the run's figures as OpenMetrics text; drawn from a results file, the HTML page
(and the page of several runs) and VCD; from trace files, Perfetto; the scenario JSON Schema."""
