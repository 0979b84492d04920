"""The only package that speaks SQL. It wraps apsw once and owns the schema.

One module per responsibility: ``connection`` (opening, transactions, errors), ``schema``,
``visibility`` (the rule, as SQL, once), ``revisions`` (the append-only log), ``moves``
(notes that changed path), ``retrieval`` (ranking primitives), ``vectors`` (a semantic
model's vectors), ``folder_state`` (stat cache, sync runs, problems, heartbeat),
``maintenance`` (counts, checks, backup) and ``purging`` (the audited rewrite).
:class:`Database` joins them over one connection.

Concurrency contract: one writer per database; every write is one ``BEGIN IMMEDIATE``
transaction; readers never block the writer (WAL). A ``Database`` belongs to one thread.
"""

from .connection import Connection, sqlite_vec_path
from .folder_state import FolderState
from .maintenance import Maintenance, capabilities
from .moves import Moves
from .purging import Purging, folder_files, scan_files
from .retrieval import Retrieval, match_expression
from .revisions import RevisionLog
from .schema import SCHEMA_VERSION, TOKENIZER
from .vectors import Vectors


class Database(RevisionLog, Moves, Retrieval, Vectors, FolderState, Maintenance, Purging,
               Connection):
    """An open database file. Create with :meth:`open`."""


__all__ = ["Database", "SCHEMA_VERSION", "TOKENIZER", "capabilities",
           "folder_files", "match_expression", "scan_files", "sqlite_vec_path"]
