"""SQL primitives of ranking: a fresh FTS5 index over chosen rows (the reference path)
and what the in-memory search index reads."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, NamedTuple, Sequence

import apsw

from ..search.text import PHRASE_OR
from . import visibility
from .schema import tokenize_option


TERMS_LIKE_KEPT = 1024  # words whose typo candidates a connection keeps


class MetaRow(NamedTuple):
    """What the in-memory search index keeps of each revision."""
    id: int
    namespace: str
    identity: str  # namespace NUL memory_id
    known_at: int
    valid_from: int
    valid_to: int | None
    hidden: bool  # a tombstone or a purged stub (store.visibility.hidden)
    doc_length: int
    note: str | None
    is_record: bool  # a note's record (never ranked)
    record_metadata: str | None  # a note record's metadata JSON (its tags)


# Reads a text of terms already tokenized (by TOKENIZER: folded, stemmed, split) back into
# the same terms: nothing is folded, stemmed or split again.
TERMS_TOKENIZER = "unicode61 remove_diacritics 0 categories 'L* N* Co M*'"


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 query that matches rows holding any of ``terms`` (each a quoted string; a
    term held as any of several phrases, as each: search.text.alternatives)."""
    return " OR ".join('"' + a.replace('"', '""') + '"' for t in terms
                       for a in t.split(PHRASE_OR))


class Retrieval:
    """Mixin of :class:`~personal_memory.store.Database`: ranking primitives."""

    @contextlib.contextmanager
    def _scratch_index(self, name: str, revision_ids: Sequence[int],
                       terms: bool = False) -> Iterator[None]:
        """A fresh temporary FTS5 table ``name`` holding exactly these revisions' indexed
        text, dropped afterwards. With ``terms``, it holds their terms exactly as the index
        stores them (stemmed), one word each, read by a tokenizer that keeps them as they
        are: a term is matched as itself, where the index's own tokenizer would stem a
        stemmed term again (Porter reads "coffe", the term of "coffee", as "coff"). Same
        counts, so the same N, lengths and frequencies."""
        conn = self.conn
        conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
        conn.execute(f"CREATE VIRTUAL TABLE temp.{name} USING fts5(title, content, "
                     f"{tokenize_option(TERMS_TOKENIZER if terms else self.tokenizer)})")

        def as_terms(text: str) -> str:
            return " ".join(self.document_tokens(text)) if terms else text
        try:
            conn.executemany(
                f"INSERT INTO temp.{name} (rowid, title, content) VALUES (?, ?, ?)",
                ((rid, as_terms(title), as_terms(content))
                 for rid, (title, content) in self.index_texts(revision_ids).items()))
            yield
        finally:
            conn.execute(f"DROP TABLE IF EXISTS temp.{name}")

    def bm25_over(self, revision_ids: Sequence[int], terms: Sequence[str],
                  weights: tuple[float, float] = (1.0, 1.0)) -> dict[int, float]:
        """BM25 of exactly these revisions: their indexed terms are copied into a fresh FTS5
        index, so no other row can touch N, average length or document frequencies;
        ``weights`` of the title and content columns. Scores are returned positive (higher
        is better); rows matching no term are absent."""
        if not terms:
            return {}
        with self._scratch_index("rank_fts", revision_ids, terms=True):
            rows = self.conn.execute("SELECT rowid, bm25(rank_fts, ?, ?) FROM temp.rank_fts "
                                     "WHERE rank_fts MATCH ?",
                                     (*weights, match_expression(terms)))
            return {rowid: -score for rowid, score in rows}

    def documents_holding(self, revision_ids: Sequence[int],
                          terms: Sequence[str]) -> dict[str, int]:
        """How many of these revisions hold each of ``terms``."""
        if not terms or not revision_ids:
            return {t: 0 for t in terms}
        with self._scratch_index("held_fts", revision_ids, terms=True):
            return {t: self.conn.execute(
                "SELECT count(*) FROM temp.held_fts WHERE held_fts MATCH ?",
                (match_expression([t]),)).fetchone()[0] for t in terms}

    def terms_held(self, revision_ids: Sequence[int], terms: Sequence[str]) -> set[str]:
        """Which of ``terms`` occur in at least one of these revisions."""
        if not terms or not revision_ids:
            return set()
        with self._scratch_index("held_fts", revision_ids, terms=True):
            return {t for t in terms if self.conn.execute(
                "SELECT 1 FROM temp.held_fts WHERE held_fts MATCH ? LIMIT 1",
                (match_expression([t]),)).fetchone()}

    def matching(self, revision_ids: Sequence[int], phrase: str) -> set[int]:
        """Which of these revisions hold ``phrase`` (its words in order, as FTS5 reads a
        quoted phrase over the same normalised text)."""
        if not revision_ids:
            return set()
        expression = '"' + self.normalize(phrase, query=True).replace('"', '""') + '"'
        with self._scratch_index("match_fts", revision_ids):
            try:
                return {rowid for (rowid,) in self.conn.execute(
                    "SELECT rowid FROM temp.match_fts WHERE match_fts MATCH ?", (expression,))}
            except apsw.SQLError:  # a phrase with no word FTS5 can read: nothing holds it
                return set()

    # -- for the in-memory search index ---------------------------------------------------

    def max_revision_id(self) -> int:
        return self.scalar("SELECT coalesce(max(id), 0) FROM revisions")

    def revision_meta_since(self, last_id: int) -> Iterator[tuple]:
        """A :class:`MetaRow` of every revision appended after ``last_id``, in id order."""
        note = (f"note, {self.note_record}, CASE WHEN {self.note_record} THEN metadata END"
                if self.at_least(4) else "NULL, 0, NULL")
        if self.at_least(7):  # lengths as the index counts them, rebuilt with it
            length, join = ("coalesce(l.length, 0)",
                            "LEFT JOIN doc_lengths l ON l.revision_id = revisions.id")
        else:
            length, join = "doc_length", ""
        cursor = self.conn.execute(
            "SELECT revisions.id, namespace, namespace || char(0) || memory_id, known_at, "
            "valid_from, "
            f"valid_to, {visibility.hidden(self.purged)}, {length}, {note} "
            f"FROM revisions {join} WHERE revisions.id > ? ORDER BY revisions.id",
            (last_id,))
        return (MetaRow(*row) for row in cursor)

    def most_frequent_terms(self, limit: int) -> list[str]:
        """The indexed terms held by the most revisions."""
        self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.revisions_terms "
                          "USING fts5vocab(main, revisions_fts, row)")
        return [t for (t,) in self.conn.execute(
            "SELECT term FROM temp.revisions_terms ORDER BY doc DESC LIMIT ?", (limit,))]

    def _terms_table(self) -> None:
        self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.revisions_terms "
                          "USING fts5vocab(main, revisions_fts, row)")

    def terms_like(self, term: str, edits: int) -> list[str]:
        """Terms the index has ever held (any revision, any namespace) that may be within
        ``edits`` one-letter edits of ``term``: as long give or take ``edits``, and with
        its first two letters or its last two (a typo seldom changes both ends).
        Candidates, to be checked against the rows a search may see. Kept until the file
        changes: reading every term is the slow part of a search that asks (the made-up
        word and the unknown-words rules ask for the same word)."""
        return self._kept_terms((term, edits), lambda: [t for (t,) in self.conn.execute(
            "SELECT term FROM temp.revisions_terms WHERE length(term) BETWEEN ? AND ? "
            "AND (substr(term, 1, 2) = ? OR substr(term, -2) = ?)",
            (len(term) - edits, len(term) + edits, term[:2], term[-2:]))])

    def _kept_terms(self, key: tuple, read: Callable[[], list[str]]) -> list[str]:
        """``read()``'s terms, kept under ``key`` until the file changes (at most
        TERMS_LIKE_KEPT keys): candidates from every term the index has ever held."""
        version = self.changes_seen()
        kept = getattr(self, "_terms_like", None)
        if kept is None or kept[0] != version or len(kept[1]) >= TERMS_LIKE_KEPT:
            kept = self._terms_like = (version, {})
        found = kept[1].get(key)
        if found is None:
            self._terms_table()
            found = kept[1][key] = read()
        return list(found)

    def terms_ending(self, endings: tuple[str, ...], before: int, limit: int) -> list[str]:
        """Up to ``limit`` terms the index has ever held that end in one of ``endings``
        after at least ``before`` other letters (German compounds: "linsensupp" for
        "supp"), shortest first, then in code point order. Candidates, kept as
        :meth:`terms_like` keeps its own; one pass over the terms."""
        if not endings:
            return []
        where = " OR ".join(["(length(term) >= ? AND substr(term, -?) = ?)"] * len(endings))
        params = [x for e in endings for x in (len(e) + before, len(e), e)]
        return self._kept_terms(("ending", endings, before, limit), lambda: [
            t for (t,) in self.conn.execute(f"SELECT term FROM temp.revisions_terms WHERE "
                                            f"{where} ORDER BY length(term), term LIMIT ?",
                                            (*params, limit))])

    def pairs_holding(self, char: str) -> list[str]:
        """The pairs of characters the index has ever held that hold ``char`` (a
        character of a script written without spaces, which the index holds in pairs),
        in code point order."""
        self._terms_table()
        return [t for (t,) in self.conn.execute(
            "SELECT term FROM temp.revisions_terms WHERE length(term) = 2 AND "
            "instr(term, ?) > 0 ORDER BY term", (char,))]

    def terms_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` terms the index has ever held that start with ``prefix``."""
        self._terms_table()
        return [t for (t,) in self.conn.execute(
            "SELECT term FROM temp.revisions_terms WHERE term >= ? AND term < ? LIMIT ?",
            (prefix, prefix + "\U0010ffff", limit))]

    def revision_texts(self, first_id: int, last_id: int) -> list[tuple[int, str, str]]:
        """(id, title, content) of the non-deleted revisions in an id range, as indexed."""
        return [(rid, *self.keyword_texts(title, content, note, meta))
                for rid, title, content, note, meta in self.conn.execute(
                    f"SELECT id, {self.keyword_columns} FROM revisions WHERE id > ? AND id <= ? "
                    f"AND deleted = 0 AND NOT ({self.purged}) AND NOT {self.note_record}",
                    (first_id, last_id))]

    def phrase_rows(self, terms: Sequence[str]) -> list[int]:
        """The revision ids the persistent FTS5 index holds ``terms`` at, one after another
        in one column, ascending; ``terms`` as the index holds them and its tokenizer reads
        them (the caller checks: a stemmed term may be stemmed again)."""
        expression = '"' + " ".join(terms).replace('"', '""') + '"'
        return [rid for (rid,) in self.conn.execute(
            "SELECT rowid FROM revisions_fts WHERE revisions_fts MATCH ? ORDER BY rowid",
            (expression,))]

    def term_postings(self, term: str) -> list[tuple[int, int, int]]:
        """(revision id, occurrences in the title, occurrences in the content) for every
        revision holding ``term``, read from the persistent FTS5 index."""
        if not self._vocab_ready:
            self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.revisions_vocab "
                              "USING fts5vocab(main, revisions_fts, instance)")
            self._vocab_ready = True
        return self.conn.execute(
            "SELECT doc, sum(col = 'title'), sum(col = 'content') FROM temp.revisions_vocab "
            "WHERE term = ? GROUP BY doc ORDER BY doc", (term,)).fetchall()
