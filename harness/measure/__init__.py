"""What the harness measures about a unit and its link, one module per measure (unohil bench, unohil fairness).

latency.py        adjudication latency of each unit kind over its link, beside the link's raw floor (unohil bench)
latency_races.py  the races the latency bench runs on each kind of unit, each ending in the unit's verdict
link_floor.py     the child process that writes the raw floor's stamped packets (python -m ...measure.link_floor)
roundtrip.py      a command's round trip beside raw echoes (a canned responder, Python and C), turn about
rig_latency.py    latency from the physical press to the physical output through a rig (unohil bench --rig)
fairness.py       side skew and tie window from outside through a rig: the verdict's flip point, with its
                  interval; every Flash seat against a reference seat (unohil fairness)
"""
