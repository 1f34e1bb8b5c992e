"""The results store: runs, units, scenarios, races, checks and coverage kept across runs, in SQLite (a
file) or PostgreSQL (a lab's shared server), through one schema and its migrations."""
