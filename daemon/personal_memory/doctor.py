"""Health checks behind ``memory doctor``: each is a (name, status, detail) row."""

from __future__ import annotations

import os
import platform
import sys

from . import embedding


def _check(name: str, status: str, detail: str) -> dict:
    return {"name": name, "status": status, "detail": detail}


def run_checks(db_path: str, vector_backend: str = "auto") -> list[dict]:
    import apsw

    from .errors import PersonalMemoryError
    from .store import SCHEMA_VERSION, Database, sqlite_vec_path

    checks = []
    ok_python = sys.version_info >= (3, 11)
    checks.append(_check("python", "ok" if ok_python else "fail",
                         f"{platform.python_version()} ({sys.executable})"))
    checks.append(_check("sqlite", "ok", f"{apsw.sqlite_lib_version()} via apsw "
                         f"{apsw.apsw_version()}"))
    probe = apsw.Connection(":memory:")
    try:
        probe.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        checks.append(_check("fts5", "ok", "available"))
    except apsw.Error as exc:
        checks.append(_check("fts5", "fail", f"unavailable: {exc}"))
    backend = Database._load_vector_backend  # the same loader the store uses
    try:
        active = backend(probe, vector_backend)
        detail = (f"sqlite-vec {next(probe.execute('SELECT vec_version()'))[0]} (native)"
                  if active == "sqlite-vec" else
                  "python (numpy fallback; sqlite-vec "
                  + ("not requested)" if vector_backend == "python" else
                     "not installed)" if sqlite_vec_path() is None else "failed to load)"))
        status = "ok" if active == "sqlite-vec" or vector_backend == "python" else "warn"
        checks.append(_check("vector backend", status, detail) | {"active": active})
    except PersonalMemoryError as exc:
        checks.append(_check("vector backend", "fail", str(exc)))
    finally:
        probe.close()
    checks.append(_check("embedding", "ok", embedding.EMBEDDING_VERSION))

    if not os.path.exists(db_path):
        checks.append(_check("database", "warn", f"{db_path} does not exist yet; "
                             "'memory init' or 'memory sync' creates it"))
        return checks
    try:
        db = Database.open(db_path, read_only=True, vector_backend="python")
    except PersonalMemoryError as exc:
        checks.append(_check("database", "fail", str(exc)))
        return checks
    try:
        integrity = db.integrity()
        revs = db.scalar("SELECT count(*) FROM revisions")
        checks.append(_check("database", "ok" if integrity == "ok" else "fail",
                             f"{db_path} ({revs} revisions, integrity {integrity})"))
        version = db.scalar("PRAGMA user_version")
        checks.append(_check("schema", "ok", f"v{version} (current is v{SCHEMA_VERSION})"))
        stored = db.meta("embedding_version")
        checks.append(_check("db embedding", "ok" if stored == embedding.EMBEDDING_VERSION
                             else "fail", str(stored)))
    finally:
        db.close()
    return checks
