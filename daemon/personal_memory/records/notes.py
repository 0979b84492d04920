"""A whole note as read at a cutoff, and a recorded move."""

from __future__ import annotations

from dataclasses import dataclass, field

from .base import Record
from .embeds import Embed
from .revisions import RevisionRecord


@dataclass(frozen=True)
class SectionView(Record):
    """One section of a note as read: where it sits in the note and which revision it is."""
    memory_id: str
    heading_path: list[str]
    line_start: int  # 1-based, inclusive, in the note as reassembled
    line_end: int
    revision_id: int
    known_at: str
    content: str


@dataclass(frozen=True)
class Link(Record):
    """One link at a cutoff: where it is written (section, file line), the target as
    written, and where it resolves then: ``kind`` note, section, block, attachment,
    external or dangling; ``note`` and ``section`` (a memory ID) when resolved, and
    its ``headings`` as written."""
    source_note: str
    source_section: str
    line: int | None
    target: str
    embed: bool
    kind: str
    note: str | None
    section: str | None
    headings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Links(Record):
    """A note's links at a cutoff: what it links to, and which notes linked to it then;
    none for a note deleted by then (``deleted``; ``moved_to`` when it left by a move)."""
    note: str
    as_of: str | None
    outgoing: list[Link]
    backlinks: list[Link]
    path_then: str | None = None  # the note's path at the cutoff, when it moved since
    deleted: bool = False
    moved_to: "Move | None" = None


@dataclass(frozen=True)
class NoteTimeline(Record):
    """Everything a note went through: every revision of its sections and record under
    each path it had (oldest first), its moves, and the moves that took a note away from
    this path (``moved_away``, oldest first: seen from an old path, where it went)."""
    note: str
    revisions: list[RevisionRecord]
    moves: list[Move]
    moved_away: list[Move] = field(default_factory=list)


@dataclass(frozen=True)
class Activity(Record):
    """Revisions known per hour, day or week, over the whole history: when something
    changed."""
    namespace: str
    bucket: str  # "hour", "day" or "week"
    starts: list[str]
    revisions: list[int]


@dataclass(frozen=True)
class RecentNote(Record):
    """A note that changed recently: when, its title now, and whether it is deleted."""
    note: str
    title: str | None
    changed_at: str
    deleted: bool


@dataclass(frozen=True)
class FolderEntry(Record):
    """A note in a listing: its ID, its title then, and when it last changed by then (its
    record or one of its sections)."""
    note: str
    title: str | None
    known_at: str


@dataclass(frozen=True)
class TagListing(Record):
    """The notes with a tag (or a tag nested under it) as known at ``as_of``, sorted by
    path (at most a limit; ``more`` counts the rest)."""
    namespace: str
    tags: list[str]
    as_of: str | None
    notes: list[FolderEntry]
    more: int = 0
    valid_at: str | None = None  # the time the tags were read at (the cutoff, or now)


@dataclass(frozen=True)
class FolderListing(Record):
    """A folder's notes (sorted by path, at most a limit; ``more`` counts the rest) and
    its subfolders with how many notes each holds, as known at ``as_of``."""
    namespace: str
    folder: str
    as_of: str | None
    notes: list[FolderEntry]
    folders: dict[str, int]
    more: int = 0


@dataclass(frozen=True)
class Move(Record):
    """A note that left one path for another in one instant (a rename or a folder move)."""
    namespace: str
    old_note: str
    new_note: str
    known_at: str


@dataclass(frozen=True)
class NoteView(Record):
    """A whole note as known at ``as_of`` (None: everything known). A note deleted by
    then has ``deleted`` set, ``known_at`` the time of its deletion, and nothing else.
    ``path_then`` is the note's ID at that time when it has moved since and its path held
    nothing then (the note is read under the path it had then); ``moves`` lists the
    note's moves known by ``as_of`` (oldest first), and with ``path_then`` the later ones
    that brought it to the path asked for. A note that left this path by moving has
    ``deleted`` set and ``moved_to``, the move (where it went, and when)."""
    note: str
    namespace: str
    as_of: str | None
    deleted: bool
    known_at: str  # when the note (its record) last changed, or was deleted
    title: str | None
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    dates: dict[str, str] = field(default_factory=dict)
    front_matter: str = ""
    # the other properties of its front matter (not title, aliases or tags), each as text
    properties: dict[str, str] = field(default_factory=dict)
    sections: list[SectionView] = field(default_factory=list)
    text: str = ""
    model: str = "sections"  # "numbered chunks": stored by the previous note model
    path_then: str | None = None
    moves: list[Move] = field(default_factory=list)
    embeds: list[Embed] = field(default_factory=list)
    moved_to: Move | None = None

    @property
    def changed_at(self) -> str:
        """When anything of the note last changed by the cutoff: its record (title, tags,
        order) or one of its sections."""
        from ..times import parse_time
        return max([self.known_at, *(s.known_at for s in self.sections)], key=parse_time)
