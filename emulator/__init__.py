"""uno-hil emulator: the three units and the stimulus-and-capture rig in software, speaking protocol 1.0.

Layout:
  clock.py        VirtualClock (exact, deterministic) and RealClock; one scheduling queue
  device.py       the device core: bytes, commands, NAKs, events, injects, config, time
  build.py        what a Device is built from: its kind's model, unit options, `without=`
  model.py        the unit model API (read this to write a unit) and its base class, which reads the
                  kind's power-on state and capabilities from the catalogue
  deadlines.py    a model's pending deadlines, with the deadline-first rule at one instant
  showdown.py     the Showdown unit (SPEC 7)
  flash.py        the Flash base (SPEC 8)
  launcher.py     the card launcher (SPEC 9)
  rig.py          the stimulus-and-capture rig (SPEC 13), wired to a unit through path.py
  path.py         a unit's input and output path between its switches and lamps and its model
  faults.py       a noisy, lossy, slow or flaky link
  inprocess.py    VirtualLink (in-process, virtual clock) and start_real (real clock, thread)
  serve.py        the serving loop and its ports (pty, TCP, socket); rehearsal.py keeps a served
                  unit's code in the CPU's caches for its next due time
  terminal.py     the interactive unit (unohil emulate KIND --interactive)
  usb_backend.py  emulated units on an emulated USB bus, as a pyusb backend
  cli.py          python -m unohil.emulator KIND --pty | --tcp HOST:PORT  (also mountable: add_arguments/run)
  probe.py        Probe, a minimal host for the emulator's own tests and measurements, and its SelectLink
  bench.py        python -m unohil.emulator.bench: virtual races/s, real-clock verdict lateness
"""
