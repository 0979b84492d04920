"""Small named exceptions. Each message is one line naming the field, file or value at fault."""


class PersonalMemoryError(Exception):
    """Base class for every error this package raises on purpose."""


class InvalidTime(PersonalMemoryError):
    """A time could not be parsed or is out of range."""


class InvalidArgument(PersonalMemoryError):
    """An argument is empty, too long or of the wrong kind."""


class NotFound(PersonalMemoryError):
    """A memory or database does not exist."""


class AlreadyHidden(PersonalMemoryError):
    """A forget targets a memory with no revision known and valid at that time (one hidden
    then by a tombstone or a purge is a no-op instead)."""


class SchemaError(PersonalMemoryError):
    """The database file is foreign, damaged or written by a newer version."""


class ReadOnlyError(PersonalMemoryError):
    """A write was attempted through a read-only store."""


class BackendError(PersonalMemoryError):
    """The requested vector backend is unknown or unavailable."""


class LockedError(PersonalMemoryError):
    """Another daemon already holds the database lock."""


class SyncError(PersonalMemoryError):
    """A folder sync refused to proceed (missing root, mass delete...). ``report``: what
    the sync did all the same (the other folders of the run), when it ran."""

    report = None


class ClockImplausible(PersonalMemoryError):
    """The machine's clock is far in the future; nothing was written."""


class BackdatedWrite(PersonalMemoryError):
    """A write asserted a time before what the store already holds of it."""


class NoteUnparsable(PersonalMemoryError):
    """The note parser failed on one note's text: that note is skipped and named, the
    sync goes on."""


class ConfigError(PersonalMemoryError):
    """The configuration file has a bad field."""


class RootUnavailable(SyncError):
    """A notes folder is missing, unreadable or suddenly empty; nothing was tombstoned."""


class MassDelete(SyncError):
    """A sync would tombstone more than half of a collection's files."""


class DatabaseError(PersonalMemoryError):
    """SQLite refused an operation; the subclasses say why."""


class StoreClosed(PersonalMemoryError):
    """The store was used after close(): a mistake of the caller's, not the database's."""


class DatabaseBusy(DatabaseError):
    """Another process held the write lock past the busy timeout; nothing was written."""


class DiskFull(DatabaseError):
    """The disk (or quota) is full; the transaction was rolled back."""


class DatabaseReadOnly(DatabaseError):
    """The database file or its folder cannot be written."""


class DatabaseCorrupt(DatabaseError):
    """The database file is damaged or not a database."""


class CollectionTaken(SyncError):
    """A collection name already belongs to another folder."""


class ServiceError(PersonalMemoryError):
    """Installing or removing the service did not complete."""


class PurgeRefused(PersonalMemoryError):
    """A purge would not last (a note still holds the text) or could not be proven."""


class ReplicationError(PersonalMemoryError):
    """Litestream is missing, or a replication step did not complete."""
