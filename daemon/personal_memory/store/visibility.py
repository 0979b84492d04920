"""The visibility rule, in SQL, once.

For a namespace, a cutoff and a valid time: the revisions known by the cutoff whose
interval contains the valid time are *eligible*; per memory the newest eligible one (by
``known_at``, then ``id``) *wins*; a winner that is a tombstone or a purged stub *hides*
the memory. Every read builds its SQL from these pieces; the fast path mirrors them once
in numpy (``search.in_memory``), and the property tests hold both to a brute-force oracle.
"""

from __future__ import annotations


def eligible(cutoff: str = "?", at: str = "?", table: str = "") -> str:
    """SQL: the revision (of ``table``, if aliased) is known by ``cutoff`` and valid at
    ``at`` (each a bound parameter or a column expression)."""
    t = f"{table}." if table else ""
    return (f"{t}known_at <= {cutoff} AND {t}valid_from <= {at} AND "
            f"({t}valid_to IS NULL OR {at} < {t}valid_to)")


NEWEST_FIRST = "known_at DESC, id DESC"


def hidden(purged: str) -> str:
    """SQL: the revision hides its memory when it wins (a tombstone or a purged stub; the
    same rule as ``RevisionRecord.hidden``). ``purged`` is the store's "was purged"
    expression for this file's schema."""
    return f"(deleted = 1 OR {purged})"


def winner_id(memory: str, cutoff: str, at: str, namespace: str = ":ns") -> str:
    """SQL: a subquery giving the id of the winning revision (hidden or not) of the memory
    named by the expression ``memory``."""
    return (f"(SELECT r.id FROM revisions r WHERE r.namespace = {namespace} AND "
            f"r.memory_id = {memory} AND {eligible(cutoff, at, 'r')} "
            f"ORDER BY r.known_at DESC, r.id DESC LIMIT 1)")


def winners(columns: str, where: str, cutoff: str = "?", at: str = "?") -> str:
    """SQL selecting ``columns`` of the winning revision of every memory that matches
    ``where`` (hidden winners included; the caller filters them)."""
    return f"""SELECT {columns} FROM revisions WHERE id IN (
                 SELECT id FROM (
                   SELECT id, ROW_NUMBER() OVER (
                     PARTITION BY memory_id ORDER BY {NEWEST_FIRST}) AS rn
                   FROM revisions WHERE {where} AND {eligible(cutoff, at)})
                 WHERE rn = 1)"""
