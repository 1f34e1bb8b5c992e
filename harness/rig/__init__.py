"""Timing truth from outside the unit: a stimulus-and-capture rig (protocol/SPEC.md section 13).
What is measured through it (latency from the press, fairness) is in harness/measure/.

links.py    a unit and its rig opened together (emurig:// wires an emulated rig to an emulated unit)
session.py  RigSession: the unit's driver and the rig's, the reference wiring, presses at rig times, the loopback
races.py    the races each kind runs through the rig, with both views of each (unit's and rig's)
unit.py     rig mode: the unit's driver whose stimuli are RIG_EDGEs at mapped rig times (unohil run --rig),
            and what no rig can play
views.py    rig mode: each race as the rig saw it (timestamp and reaction errors, decision to each output),
            and the expectations on it (expect: rig)
"""
