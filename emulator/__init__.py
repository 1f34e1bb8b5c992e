"""uno-hil emulator: the three units in software, speaking protocol 1.0.

Layout:
  clock.py      VirtualClock (exact, deterministic) and RealClock; one scheduling queue
  device.py     the device core: bytes, commands, NAKs, events, injects, config, time
  model.py      the unit model API (read this to write a unit) and its base class
  showdown.py   the Showdown unit
  inprocess.py  VirtualLink (in-process, virtual clock) and start_real (real clock, thread)
  serve.py      the serving loop and its ports (pty, TCP, socket)
  cli.py        python -m unohil.emulator KIND --pty | --tcp HOST:PORT  (also mountable: add_arguments/run)
  probe.py      Probe, a minimal host for the emulator's own tests and measurements, and its SelectLink
  bench.py      python -m unohil.emulator.bench: virtual races/s, real-clock verdict lateness
"""
