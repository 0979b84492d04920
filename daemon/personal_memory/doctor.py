"""Health checks behind ``memory doctor``: each is a (name, status, detail) row."""

from __future__ import annotations

import os
import platform
import sys

from . import embedders
from .errors import PersonalMemoryError
from .memory import MemoryStore


def _check(name: str, status: str, detail: str) -> dict:
    return {"name": name, "status": status, "detail": detail}


def run_checks(db_path: str, vector_backend: str = "auto", embedder: str = "auto",
               ) -> list[dict]:
    checks = []
    ok_python = sys.version_info >= (3, 11)
    checks.append(_check("python", "ok" if ok_python else "fail",
                         f"{platform.python_version()} ({sys.executable})"))
    caps = MemoryStore.capabilities(vector_backend)
    checks.append(_check("sqlite", "ok", f"{caps['sqlite']} via apsw {caps['apsw']}"))
    checks.append(_check("fts5", "ok", "available") if caps["fts5"] is None
                  else _check("fts5", "fail", f"unavailable: {caps['fts5']}"))
    active = caps["vector_backend"]
    if active is None:
        checks.append(_check("vector backend", "fail", caps["vector_error"]))
    else:
        detail = (f"sqlite-vec {caps['sqlite_vec_version']} (float32, in SQLite)"
                  if active == "sqlite-vec" else "numpy (float64, exact)")
        checks.append(_check("vector backend", "ok", detail) | {"active": active})
    try:
        model, note = embedders.load(embedder)
    except PersonalMemoryError as exc:
        checks.append(_check("semantic model", "fail", str(exc)))
        model, note = None, ""
    else:
        # Keyword-only because the user chose it is fine; because no wheel exists, a warning.
        checks.append(_check("semantic model", "ok" if model or embedder == "none" else "warn",
                             note))

    if not os.path.exists(db_path):
        checks.append(_check("database", "warn", f"{db_path} does not exist yet; "
                             "'memory init' or 'memory sync' creates it"))
        return checks
    try:
        with MemoryStore.open(db_path, read_only=True, vector_backend="python",
                              embedder=model if model is not None else "none") as store:
            health = store.health()
    except PersonalMemoryError as exc:
        checks.append(_check("database", "fail", str(exc)))
        return checks
    integrity = health["integrity"]
    checks.append(_check("database", "ok" if integrity == "ok" else "fail",
                         f"{db_path} ({health['revisions']} revisions, integrity {integrity})"))
    checks.append(_check("schema", "ok", f"v{health['schema_version']} "
                         f"(current is v{health['supported_schema_version']})"))
    if model is not None:
        pending = health["pending_vectors"]
        checks.append(_check("vectors", "ok" if not pending else "warn",
                             f"{health['vectors'].get(model.key, 0)} stored, {pending} pending"
                             + (" (the daemon embeds them; or run 'memory reembed')"
                                if pending else "")))
    return checks
