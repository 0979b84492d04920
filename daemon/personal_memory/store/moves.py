"""SQL of recorded moves: a note that left one path for another in one instant."""

from __future__ import annotations

from typing import NamedTuple

from ..records import Move
from ..times import format_time


class MoveStep(NamedTuple):
    """One step back along a note's moves: where it was before, and when it left."""
    old_note: str
    known_at: int


class Moves:
    """Mixin of :class:`~personal_memory.store.Database`: the ``moves`` table (schema 6)."""

    def record_move(self, namespace: str, old_note: str, new_note: str, known_at: int) -> None:
        """Call inside the transaction that writes the move's revisions."""
        self.conn.execute("INSERT INTO moves (namespace, old_note, new_note, known_at) "
                          "VALUES (?,?,?,?)", (namespace, old_note, new_note, known_at))

    def _moves(self, where: str, params: tuple) -> list[Move]:
        if not self.at_least(6):
            return []
        return [Move(namespace=ns, old_note=old, new_note=new, known_at=format_time(known))
                for ns, old, new, known in self.conn.execute(
                    f"SELECT namespace, old_note, new_note, known_at FROM moves WHERE {where} "
                    "ORDER BY known_at, id", params)]

    def move_into(self, namespace: str, note: str, after: int, before: int,
                  ) -> MoveStep | None:
        """The latest move that brought a note to ``note`` in (after, before): its old
        note and time, or None."""
        if not self.at_least(6):
            return None
        row = next(iter(self.conn.execute(
            "SELECT old_note, known_at FROM moves WHERE namespace = ? AND new_note = ? "
            "AND known_at > ? AND known_at < ? ORDER BY known_at DESC, id DESC LIMIT 1",
            (namespace, note, after, before))), None)
        return MoveStep(*row) if row else None

    def moves_between(self, namespace: str, since: int, until: int) -> list[Move]:
        """Moves known in (since, until], oldest first."""
        return self._moves("namespace = ? AND known_at > ? AND known_at <= ?",
                           (namespace, since, until))

    def moves_of(self, namespace: str, notes: list[str]) -> list[Move]:
        """Every move from or to one of ``notes``, oldest first."""
        if not notes:
            return []
        import json
        return self._moves("namespace = ? AND (old_note IN (SELECT value FROM json_each(?)) "
                           "OR new_note IN (SELECT value FROM json_each(?)))",
                           (namespace, json.dumps(notes), json.dumps(notes)))
