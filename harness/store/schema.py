"""The store's schema as ordered migrations: each step is applied once, in order, when a store is opened,
and the schema_version table says how far a store has come. A step is never edited once released: a change
is a new step. {id} is the dialect's auto-numbered primary key, {float} its double-precision type."""
from __future__ import annotations

MIGRATIONS: list[list[str]] = [
    # 1: runs, the units they ran on, their scenarios and races, and each race's figures
    [
        """CREATE TABLE runs (
            id {id}, command TEXT NOT NULL, started_unix {float} NOT NULL, duration_s {float},
            results_path TEXT, status TEXT NOT NULL, scenarios INTEGER NOT NULL DEFAULT 0,
            passed INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0,
            other INTEGER NOT NULL DEFAULT 0, races INTEGER NOT NULL DEFAULT 0, recorded_unix {float} NOT NULL)""",
        """CREATE TABLE units (
            id {id}, run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, url TEXT NOT NULL,
            kind TEXT, serial BIGINT, firmware TEXT, boot_id BIGINT, catalog_crc TEXT, error TEXT)""",
        """CREATE TABLE scenarios (
            id {id}, run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            unit_id BIGINT REFERENCES units(id), kind TEXT NOT NULL, name TEXT NOT NULL, file TEXT, line INTEGER,
            status TEXT NOT NULL, races INTEGER NOT NULL, failed_races INTEGER NOT NULL, error TEXT)""",
        """CREATE TABLE races (
            id {id}, scenario_id BIGINT NOT NULL REFERENCES scenarios(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL, status TEXT NOT NULL, verdict TEXT)""",
        """CREATE TABLE figures (
            race_id BIGINT NOT NULL REFERENCES races(id) ON DELETE CASCADE, name TEXT NOT NULL,
            value_us BIGINT NOT NULL)""",
        "CREATE INDEX scenarios_by_run ON scenarios(run_id)",
        "CREATE INDEX races_by_scenario ON races(scenario_id)",
        "CREATE INDEX figures_by_race ON figures(race_id)",
        "CREATE INDEX units_by_firmware ON units(kind, firmware)",
    ],
    # 2: conform's checks and coverage; races and scenarios that failed and then passed when run again (flaky)
    [
        """CREATE TABLE checks (
            id {id}, run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, section TEXT NOT NULL,
            name TEXT NOT NULL, status TEXT NOT NULL, detail TEXT)""",
        """CREATE TABLE coverage (
            run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, item TEXT NOT NULL,
            status TEXT NOT NULL)""",
        "ALTER TABLE races ADD COLUMN flaky INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE scenarios ADD COLUMN flaky INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN flaky INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX checks_by_run ON checks(run_id)",
    ],
]

DIALECT = {
    "sqlite": {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "float": "REAL"},
    "postgresql": {"id": "BIGSERIAL PRIMARY KEY", "float": "DOUBLE PRECISION"},
}


def steps(dialect: str, version: int) -> list[str]:
    """Migration `version`'s SQL (1-based) in the dialect's words."""
    words = DIALECT[dialect]
    return [sql.format(**words) for sql in MIGRATIONS[version - 1]]
