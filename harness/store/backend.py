"""Opening a store: a SQLite file or a PostgreSQL server, one schema brought up to date on open.

Statements are written once, with `?` placeholders; a PostgreSQL connection (pg8000, the `postgres`
extra: pure Python, so no compiler or libpq on the runner) is handed them with `%s`. Every failure to open,
migrate or write is one StoreError naming the store, so a command can say it and go on."""
from __future__ import annotations

import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urlsplit

from unohil.harness.errors import HarnessError
from unohil.harness.store.schema import MIGRATIONS, steps

SCHEMES = ("postgresql://", "postgres://")


class StoreError(HarnessError):
    """The store could not be opened, brought up to date, read or written."""


def default_path() -> Path:
    """The store of `--store default`: a file in the user's data folder (XDG_DATA_HOME, else ~/.local/share;
    LOCALAPPDATA on Windows)."""
    base = os.environ.get("XDG_DATA_HOME") or os.environ.get("LOCALAPPDATA") or Path.home() / ".local" / "share"
    return Path(base) / "unohil" / "results.sqlite"


def shown(where: str) -> str:
    """A store's name fit to print: a server URL without its password."""
    if not where.startswith(SCHEMES):
        return where
    parts = urlsplit(where)
    if parts.password is None:
        return where
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


class Store:
    """One open store: run(sql, args) and rows(sql, args) in `?` style, whatever the backend."""

    def __init__(self, where: str, conn, dialect: str):
        self.where = where
        self.conn = conn
        self.dialect = dialect
        self._types: dict[str, dict[str, str]] = {}

    @classmethod
    def open(cls, where: str, *, upto: int | None = None) -> "Store":
        """The store at a path or a postgresql:// URL, migrated to the newest schema (or to `upto`)."""
        where = str(where)
        if where == "default":
            where = str(default_path())
        try:
            store = cls(where, *_connect(where))
        except StoreError:
            raise
        except Exception as exc:        # the drivers' own errors: one line naming the store
            raise StoreError(f"store {shown(where)}: cannot open it: {_why(exc)}") from None
        store.migrate(len(MIGRATIONS) if upto is None else upto)
        return store

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.dialect == "postgresql" else sql

    @contextmanager
    def _said(self):
        """A driver's error as one StoreError naming the store, the transaction rolled back."""
        try:
            yield
        except StoreError:
            raise
        except Exception as exc:
            self._rollback()
            raise StoreError(f"store {shown(self.where)}: {_why(exc)}") from None

    def rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._said():
            cur = self.conn.cursor()
            cur.execute(self._sql(sql), args)
            return [tuple(r) for r in cur.fetchall()]

    def insert(self, sql: str, args: tuple = ()) -> int:
        """An INSERT ... RETURNING id: the new row's id."""
        return self.rows(sql + " RETURNING id", args)[0][0]

    def run(self, sql: str, args: tuple = ()) -> None:
        with self._said():
            self.conn.cursor().execute(self._sql(sql), args)

    def many(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """Many rows into `table`. On PostgreSQL one INSERT ... SELECT FROM unnest(one array a column): the
        driver's executemany costs a round trip a row, and a multi-row VALUES list of thousands of parameters
        costs the server more to parse than the rows cost to write (docs/results-store.md has the figures)."""
        if not rows:
            return
        cols = ", ".join(columns)
        with self._said():
            cur = self.conn.cursor()
            if self.dialect != "postgresql":
                cur.executemany(f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(columns))})", rows)
                return
            types = self._column_types(table)
            arrays = ", ".join(f"%s::{types[c]}[]" for c in columns)
            cur.execute(f"INSERT INTO {table} ({cols}) SELECT * FROM unnest({arrays})", [list(c) for c in zip(*rows)])

    def insert_many(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> list[int]:
        """Many rows into `table`; their new ids, in the rows' order. PostgreSQL draws the ids from the table's
        sequence in one query and inserts them with the rows (the order of a batch's RETURNING rows is not
        promised); SQLite, in the process, inserts row by row."""
        if not rows:
            return []
        if self.dialect != "postgresql":
            marks = ", ".join("?" * len(columns))
            return [self.insert(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", row) for row in rows]
        ids = [r[0] for r in self.rows(f"SELECT nextval(pg_get_serial_sequence('{table}', 'id')) "
                                       "FROM generate_series(1, ?)", (len(rows),))]
        self.many(table, ("id", *columns), [(i, *row) for i, row in zip(ids, rows)])
        return ids

    def _column_types(self, table: str) -> dict[str, str]:
        """A PostgreSQL table's column types (bigint, text, ...), asked once per open store."""
        if table not in self._types:
            self._types[table] = dict(self.rows(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
                "AND table_schema = current_schema()", (table,)))
        return self._types[table]

    def commit(self) -> None:
        with self._said():
            self.conn.commit()

    def _rollback(self) -> None:
        try:
            self.conn.rollback()
        except Exception:
            pass

    @property
    def version(self) -> int:
        return self.rows("SELECT MAX(version) FROM schema_version")[0][0] or 0

    def migrate(self, upto: int) -> None:
        """Every migration step past the store's version, each in its own transaction with its version row;
        a store newer than this unohil is refused rather than written in a shape it does not know."""
        self.run("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_unix "
                 + ("REAL" if self.dialect == "sqlite" else "DOUBLE PRECISION") + " NOT NULL)")
        self.commit()
        have = self.version
        if have > len(MIGRATIONS):
            raise StoreError(f"store {shown(self.where)}: schema version {have}; this unohil knows up to "
                             f"{len(MIGRATIONS)}: update unohil")
        for version in range(have + 1, upto + 1):
            for sql in steps(self.dialect, version):
                self.run(sql)
            self.run("INSERT INTO schema_version (version, applied_unix) VALUES (?, ?)", (version, time.time()))
            self.commit()


def _connect(where: str):
    if where.startswith(SCHEMES):
        return _postgres(where), "postgresql"
    path = Path(where).expanduser()
    if path.is_dir():
        raise StoreError(f"store {where}: a directory; give a file (a SQLite database) or a postgresql:// URL")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = WAL")       # several runners on one machine: readers never block
    return conn, "sqlite"


def _postgres(url: str):
    try:
        import pg8000.dbapi
    except ImportError:
        raise StoreError(f"store {shown(url)}: PostgreSQL needs the driver: pip install 'uno-hil[postgres]'") from None
    parts = urlsplit(url)
    kwargs = {"user": unquote(parts.username or os.environ.get("PGUSER") or "postgres"),
              "database": unquote(parts.path.lstrip("/")) or None, "port": parts.port or 5432,
              "timeout": 10}
    if parts.password is not None:
        kwargs["password"] = unquote(parts.password)
    elif os.environ.get("PGPASSWORD"):
        kwargs["password"] = os.environ["PGPASSWORD"]
    host = unquote(parts.hostname or "") or "localhost"
    if host.startswith("/"):
        kwargs["unix_sock"] = f"{host}/.s.PGSQL.{kwargs['port']}"
    else:
        kwargs["host"] = host
    return pg8000.dbapi.connect(**kwargs)


def _why(exc: Exception) -> str:
    """A driver's error in one line (pg8000 gives a dict of the server's fields)."""
    arg = exc.args[0] if exc.args else exc
    if isinstance(arg, dict):
        return str(arg.get("M") or arg)
    return str(arg).splitlines()[0] if str(arg) else type(exc).__name__
