"""The schema: tables, triggers and the markers that identify the file as ours."""

SCHEMA_VERSION = 9
APPLICATION_ID = 0x504D454D  # "PMEM"
# The full-text tokenizer: Porter stemming over unicode61 ("prefers" finds "prefer"). Its
# spelling is recorded in meta; a file indexed with another is re-indexed on the first
# write open (the derived index only: revisions are never touched). Combining marks (M*)
# are part of a word, as letters are: unicode61 would cut Hindi नोट्स into न ट स at its
# vowel signs, and Thai and Bengali likewise.
TOKENIZER = "porter unicode61 remove_diacritics 2 categories 'L* N* Co M*'"
LEGACY_TOKENIZER = "unicode61 remove_diacritics 2"  # files written before meta recorded it


def tokenize_option(tokenizer: str) -> str:
    """FTS5's ``tokenize`` option for a tokenizer spelling (which may quote its own
    arguments: ``categories 'L* N*'``)."""
    return 'tokenize="' + tokenizer.replace('"', '""') + '"'


def fts_table(tokenizer: str) -> str:
    return ("CREATE VIRTUAL TABLE revisions_fts USING fts5(title, content, content='', "
            f"{tokenize_option(tokenizer)})")


# Schema 2: what a sync could not import, until it can (memory status lists it).
PROBLEMS = """CREATE TABLE problems (
    namespace TEXT NOT NULL,
    collection TEXT NOT NULL,
    path TEXT NOT NULL,
    reason TEXT NOT NULL,
    since INTEGER NOT NULL,
    stale INTEGER NOT NULL CHECK (stale IN (0, 1)),
    PRIMARY KEY (namespace, collection, path)
) STRICT;
"""

# Schema 3: purge, the one audited rewrite. UPDATE stays refused unless a purge marks its
# own transaction in meta, and even then only a revision's text may change.
APPEND_ONLY = """CREATE TRIGGER revisions_no_update BEFORE UPDATE ON revisions
WHEN (SELECT value FROM meta WHERE key = 'purge_in_progress') IS NULL
BEGIN SELECT RAISE(ABORT, 'revisions are append-only: UPDATE is not allowed'); END;
CREATE TRIGGER revisions_purge_keeps_identity BEFORE UPDATE OF id, namespace, memory_id,
    known_at, valid_from, valid_to, deleted, hides_revision ON revisions
BEGIN SELECT RAISE(ABORT, 'a purge may only blank the text of a revision'); END;
CREATE TABLE purges (
    id INTEGER PRIMARY KEY,
    purged_at INTEGER NOT NULL,
    namespace TEXT NOT NULL,
    selector TEXT NOT NULL,
    reason TEXT,
    revision_ids TEXT NOT NULL,
    revisions INTEGER NOT NULL
) STRICT;
"""

# Schema 4: the note model. A revision may belong to a note (``note``), carry metadata
# (heading path, tags, links, line count; for a note's record its sections in order), and
# the text it is indexed by when that differs from its title and content (links read as
# words). Each file records the chunker version it was imported with. Columns only added.
# The validity indexes find what a change of time alone reveals or hides (memory changes).
NOTE_MODEL = """ALTER TABLE revisions ADD COLUMN note TEXT;
ALTER TABLE revisions ADD COLUMN metadata TEXT;
ALTER TABLE revisions ADD COLUMN index_title TEXT;
ALTER TABLE revisions ADD COLUMN index_content TEXT;
ALTER TABLE files ADD COLUMN chunker INTEGER NOT NULL DEFAULT 1;
"""
NOTE_INDEX = """CREATE INDEX revisions_note ON revisions (namespace, note, memory_id)
    WHERE note IS NOT NULL;
CREATE INDEX revisions_valid_from ON revisions (namespace, valid_from);
CREATE INDEX revisions_valid_to ON revisions (namespace, valid_to) WHERE valid_to IS NOT NULL;
DROP TRIGGER revisions_purge_keeps_identity;
CREATE TRIGGER revisions_purge_keeps_identity BEFORE UPDATE OF id, namespace, memory_id,
    known_at, valid_from, valid_to, deleted, hides_revision, note ON revisions
BEGIN SELECT RAISE(ABORT, 'a purge may only blank the text of a revision'); END;
"""

# Schema 5: vectors of a semantic model, one per (revision, embedder). Derived data like the
# full-text index: re-embedding deletes and adds here and never touches a revision. ``seq``
# only grows (AUTOINCREMENT), so a reader loads what was added since it last looked.
# (The ``embedding`` column of revisions held the hashed vectors of schemas 1-4; unused.)
VECTORS = """CREATE TABLE vectors (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    revision_id INTEGER NOT NULL REFERENCES revisions(id),
    embedder TEXT NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (embedder, revision_id)
) STRICT;
"""

# Schema 6: moves and reuse. A detected move (a renamed file or folder) is recorded, so that
# reading, history and changes follow a note to its earlier path; append-only like revisions
# (a purge may blank a path). A vector records the hash of the exact passage it was made
# from, so that a moved, reverted or duplicated passage reuses it instead of running the
# model again. A purge may now also replace a revision's memory ID and note, when they hold
# the erased text (a secret in a heading or a file name); its times and kind never change.
MOVES = """CREATE TABLE moves (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    old_note TEXT NOT NULL,
    new_note TEXT NOT NULL,
    known_at INTEGER NOT NULL
) STRICT;
CREATE INDEX moves_new ON moves (namespace, new_note, known_at);
CREATE INDEX moves_old ON moves (namespace, old_note, known_at);
CREATE INDEX moves_known ON moves (namespace, known_at);
CREATE TRIGGER moves_no_update BEFORE UPDATE ON moves
WHEN (SELECT value FROM meta WHERE key = 'purge_in_progress') IS NULL
BEGIN SELECT RAISE(ABORT, 'moves are append-only: UPDATE is not allowed'); END;
CREATE TRIGGER moves_no_delete BEFORE DELETE ON moves
BEGIN SELECT RAISE(ABORT, 'moves are append-only: DELETE is not allowed'); END;
"""
PASSAGE_REUSE = """ALTER TABLE vectors ADD COLUMN passage_hash TEXT;
CREATE INDEX vectors_passage ON vectors (embedder, passage_hash) WHERE passage_hash IS NOT NULL;
DROP TRIGGER revisions_purge_keeps_identity;
CREATE TRIGGER revisions_purge_keeps_identity BEFORE UPDATE OF id, namespace,
    known_at, valid_from, valid_to, deleted, hides_revision ON revisions
BEGIN SELECT RAISE(ABORT, 'a purge may only blank the text of a revision'); END;
"""

# Schema 7: document lengths as the full-text index counts them, derived like the index
# and rebuilt with it (splitting Chinese and Japanese into bigrams changes the counts;
# ``revisions.doc_length`` keeps what was counted when each revision was written).
DOC_LENGTHS = """CREATE TABLE doc_lengths (
    revision_id INTEGER PRIMARY KEY,
    length INTEGER NOT NULL
) STRICT;
"""

# Schema 8: the audit of clock repairs. A repair appends revisions, at stored stamps, so
# that every cutoff shows what a note's writes so far said, where an earlier version
# stamped a write before a revision a clock running ahead had stamped later; never
# rewritten.
CLOCK_REPAIRS = """CREATE TABLE clock_repairs (
    id INTEGER PRIMARY KEY,
    repaired_at INTEGER NOT NULL,
    repaired_by TEXT NOT NULL,
    stamp INTEGER NOT NULL,
    newest_before INTEGER,
    memories INTEGER NOT NULL,
    revision_ids TEXT NOT NULL
) STRICT;
CREATE TRIGGER clock_repairs_no_update BEFORE UPDATE ON clock_repairs
BEGIN SELECT RAISE(ABORT, 'clock repairs are append-only: UPDATE is not allowed'); END;
CREATE TRIGGER clock_repairs_no_delete BEFORE DELETE ON clock_repairs
BEGIN SELECT RAISE(ABORT, 'clock repairs are append-only: DELETE is not allowed'); END;
"""

# Schema 9: a vector per piece of a section (its paragraphs, list runs, groups of table
# rows: embedding/pieces.py), each with the lines it covers; a section's cosine is its
# best piece's. The table is rebuilt for the new key (embedder, revision, piece); the
# vectors of older files are kept as piece 0 under their own model key, which a new
# model key (pieces are another input) leaves unused until `memory reembed` drops them.
PIECES = """CREATE TABLE vectors_by_piece (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    revision_id INTEGER NOT NULL REFERENCES revisions(id),
    embedder TEXT NOT NULL,
    piece INTEGER NOT NULL DEFAULT 0,
    first_line INTEGER,
    last_line INTEGER,
    vector BLOB NOT NULL,
    passage_hash TEXT,
    UNIQUE (embedder, revision_id, piece)
) STRICT;
INSERT INTO vectors_by_piece (seq, revision_id, embedder, vector, passage_hash)
    SELECT seq, revision_id, embedder, vector, passage_hash FROM vectors ORDER BY seq;
DROP TABLE vectors;
ALTER TABLE vectors_by_piece RENAME TO vectors;
CREATE INDEX vectors_passage ON vectors (embedder, passage_hash) WHERE passage_hash IS NOT NULL;
"""

DDL = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE revisions (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    known_at INTEGER NOT NULL,
    valid_from INTEGER NOT NULL,
    valid_to INTEGER,
    deleted INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
    hides_revision INTEGER REFERENCES revisions(id),
    title TEXT,
    content TEXT NOT NULL,
    source TEXT,
    provenance TEXT,
    content_hash TEXT NOT NULL,
    doc_length INTEGER NOT NULL DEFAULT 0,
    embedding BLOB,
    purged_at INTEGER,
    note TEXT,
    metadata TEXT,
    index_title TEXT,
    index_content TEXT,
    CHECK (valid_to IS NULL OR valid_to > valid_from),
    CHECK ((deleted = 1) = (hides_revision IS NOT NULL))
) STRICT;
CREATE INDEX revisions_identity ON revisions (namespace, memory_id, known_at, id);
CREATE INDEX revisions_known_at ON revisions (known_at);
CREATE INDEX revisions_known ON revisions (namespace, known_at, valid_from, valid_to, memory_id, deleted);
{APPEND_ONLY}CREATE TRIGGER revisions_no_delete BEFORE DELETE ON revisions
BEGIN SELECT RAISE(ABORT, 'revisions are append-only: DELETE is not allowed'); END;
{fts_table(TOKENIZER)};
CREATE TABLE files (
    collection TEXT NOT NULL,
    namespace TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    file_hash TEXT NOT NULL,
    chunks INTEGER NOT NULL,
    synced_at INTEGER NOT NULL,
    chunker INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (namespace, collection, path)
) STRICT;
CREATE TABLE sync_runs (
    id INTEGER PRIMARY KEY,
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    pid INTEGER NOT NULL,
    kind TEXT NOT NULL,
    roots TEXT NOT NULL,
    files_scanned INTEGER NOT NULL DEFAULT 0,
    chunks_added INTEGER NOT NULL DEFAULT 0,
    chunks_changed INTEGER NOT NULL DEFAULT 0,
    chunks_tombstoned INTEGER NOT NULL DEFAULT 0,
    errors TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL DEFAULT 'running'
) STRICT;
{PROBLEMS}{NOTE_INDEX}{VECTORS}{MOVES}{PASSAGE_REUSE}{DOC_LENGTHS}{CLOCK_REPAIRS}{PIECES}CREATE TABLE daemon (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    pid INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    roots TEXT NOT NULL,
    state TEXT NOT NULL
) STRICT;
"""

# Each step takes a database from the version before it to the version after it. They only
# add tables: revisions are never rewritten by an upgrade.
MIGRATIONS = {
    2: PROBLEMS,
    3: "ALTER TABLE revisions ADD COLUMN purged_at INTEGER;\n"
       "DROP TRIGGER revisions_no_update;\n" + APPEND_ONLY,
    4: NOTE_MODEL + NOTE_INDEX,
    5: VECTORS,
    6: MOVES + PASSAGE_REUSE,
    7: DOC_LENGTHS + "INSERT INTO doc_lengths SELECT id, doc_length FROM revisions "
       "WHERE doc_length > 0;\n",
    8: CLOCK_REPAIRS,
    9: PIECES + "INSERT INTO meta VALUES ('index_generation', '1') ON CONFLICT (key) "
       "DO UPDATE SET value = CAST(value AS INTEGER) + 1;\n",
}
