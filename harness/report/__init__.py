"""Reports of a run, apart from running it: each drawn from the run's one record (run_record.py RunRecord, made
when a run ends or read back from its results file): the console, the JSON results file, JUnit XML, metrics,
the HTML page, VCD and Perfetto; whole-or-nothing file writes; the scenario JSON Schema."""
