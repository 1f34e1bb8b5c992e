"""A PostgreSQL server of the test suite's own: a cluster made by initdb in a temporary folder, started by
pg_ctl on a free loopback port, stopped and removed at the end. PostgreSQL refuses to run as root, so as
root (CI) the cluster is made and run by the `postgres` user Debian's package creates (runuser); the folder
is given to that user. UNOHIL_REQUIRE_POSTGRES=1 (CI) turns a server that cannot be had into a failure."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(d, "initdb").exists():
            return Path(d)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """Start with start(); url is postgresql://postgres@127.0.0.1:PORT/postgres (trust auth on loopback)."""

    def __init__(self):
        self.bindir = _bindir()
        self.folder: str | None = None
        self.port = 0
        self.as_user: list[str] = []

    def why_not(self) -> str | None:
        if self.bindir is None:
            return "no PostgreSQL server binaries (initdb, pg_ctl): apt install postgresql"
        if os.geteuid() == 0:
            if shutil.which("runuser") is None:
                return "running as root without runuser: PostgreSQL will not run as root"
            try:
                import pwd
                pwd.getpwnam("postgres")
            except KeyError:
                return "running as root and there is no postgres user to run the server as"
            self.as_user = ["runuser", "-u", "postgres", "--"]
        try:
            import pg8000  # noqa: F401
        except ImportError:
            return "no PostgreSQL driver: pip install 'uno-hil[postgres]'"
        return None

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, timeout=120, cwd="/")

    def start(self) -> str:
        self.folder = tempfile.mkdtemp(prefix="unohil-pg-")
        if self.as_user:
            shutil.chown(self.folder, "postgres", "postgres")
        data = os.path.join(self.folder, "data")
        self._run(str(self.bindir / "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--no-sync")
        self.port = _free_port()
        self._run(str(self.bindir / "pg_ctl"), "-D", data, "-l", os.path.join(self.folder, "log"), "-w", "-t", "60",
                  "-o", f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c fsync=off", "start")
        return self.url()

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import pg8000.dbapi
        conn = pg8000.dbapi.connect(user="postgres", host="127.0.0.1", port=self.port, database="postgres")
        conn.autocommit = True
        conn.cursor().execute(f'CREATE DATABASE "{name}"')
        conn.close()
        return self.url(name)

    def stop(self) -> None:
        if self.folder is None:
            return
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", os.path.join(self.folder, "data"), "-m", "immediate",
                      "-w", "stop")
        except (subprocess.SubprocessError, OSError):
            pass
        shutil.rmtree(self.folder, ignore_errors=True)
