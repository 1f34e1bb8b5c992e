"""Running scenarios: scheduling races on a unit, judging them, keeping what was found, a rack of units and device pools."""
