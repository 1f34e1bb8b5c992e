"""Whole games of UNO Showdown, UNO Flash and UNO Attack around a unit, with simulated players.

cards.py (decks, matching, scoring), table.py (where every card is), players.py (the player model and
seat maps), rules.py (what the games share), one module per game with its unit adapter (showdown.py,
flash.py, attack.py) and unit.py (what the adapters share), stats.py (statistics with expectations),
play.py (games in a row, results), reference.py (a failed game replayed on the reference emulator and
recorded as a scenario).
"""
