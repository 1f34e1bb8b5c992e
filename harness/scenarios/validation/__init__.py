"""The scenario validator, a module per section of a scenario file: the words of the language and its
caps (words.py), the node reader every check reports through (reader.py), YAML text to node trees
(compose.py), races and times (times.py), configuration and switches (settings.py), steps (steps.py)
and expectations (expectations.py). harness/scenarios/load.py is the top level that reads a file."""
