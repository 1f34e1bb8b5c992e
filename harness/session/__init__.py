"""One connected unit: the driver (commands, handshake, waiting), events in order, clock sync, link health, traces and preparing a race."""
