"""Limits and fixed values, declared once: the core enforces them, the edges advertise
them."""

MAX_ID_CHARS = 4096  # a note's ID holds its path; PATH_MAX is 4096 on Linux
MAX_TITLE_CHARS = 200  # titles, aliases and heading text are cut here
# Headings of one note that make sections; later ones are text of the section before (a
# note of 100,000 headings held the daemon's import for a minute, and every search after)
MAX_HEADINGS = 2000
# What a note's front matter may expand to, aliases (*name) counted each time they repeat
# what they name: beyond these it is a front matter problem and the block is read as text.
FRONT_MATTER_MAX_VALUES = 100_000  # keys, values and list items
FRONT_MATTER_MAX_CHARS = 2 * 1024 * 1024  # the characters of all its values
FRONT_MATTER_MAX_DEPTH = 100  # lists and mappings inside each other
FRONT_MATTER_MAX_DIGITS = 1000  # characters of one integer (Python refuses more than 4300)
# The words of a note's other properties that are indexed: in all, and of one property (a
# long value does not hide the properties after it).
MAX_PROPERTY_CHARS = 8000
MAX_PROPERTY_VALUE_CHARS = 1000
MAX_CONTENT_CHARS = 2_000_000
MAX_NAMESPACE_CHARS = 128
MAX_SOURCE_CHARS = MAX_ID_CHARS * 4
MAX_QUERY_CHARS = 1000
MAX_LIMIT = 1000
MAX_TAGS = 100  # tags in one search's filter
# The first search result also shows the snippets of this many more of its note's matching
# sections (the best section is often not the one that answers: measured in
# benchmarks/help_questions.py and mcp_answers.py).
FIRST_RESULT_MORE = 2
SNIPPET_EMBEDS = 3  # embeds read through for one search result (a list of embeds is long)

# What the MCP tools accept from a model: smaller than the API's limits on purpose.
MAX_TOOL_RESULTS = 50
MAX_TOOL_CONTENT_CHARS = 100_000
MAX_TOOL_SOURCE_CHARS = 2000

# `memory serve --http`: its port, and what one client may ask of it.
HTTP_PORT = 8767
MAX_PORT = 65535  # a TCP port is 0 (any free one) to this
HTTP_MAX_BODY_BYTES = 1024 * 1024  # a JSON-RPC message at /mcp
HTTP_MAX_FORM_BYTES = 64 * 1024  # registration, token and consent requests
HTTP_REQUESTS_PER_MINUTE = 600  # per token, with bursts of HTTP_BURST
HTTP_BURST = 120
HTTP_ADDRESS_REQUESTS_PER_MINUTE = 120  # per address without a valid token (OAuth, failures)
HTTP_ADDRESS_BURST = 60
HTTP_MAX_SESSIONS = 64
HTTP_SESSIONS_PER_GRANT = 16  # so one token cannot take every session
# Requests one token has under way at once, open streams among them (a client on the
# 2026-07-28 protocol may hold a subscriptions/listen stream per request): so that one
# token cannot take every connection the server keeps (HTTP_MAX_CONNECTIONS).
HTTP_OPEN_PER_GRANT = 32
HTTP_SESSION_IDLE_SECONDS = 1800
HTTP_RECHECK_SECONDS = 2.0  # an open stream's token is checked again this often
# A connection that sends a request's head (line and headers) no sooner than this after it
# opened or its last answer, or its body no sooner than this after the head, is closed
# (a slowloris client would hold sockets until none is left); both servers, MCP and page.
HTTP_HEAD_SECONDS = 10.0
HTTP_BODY_SECONDS = 30.0
# Connections either server keeps open at once; one more is closed as it comes. Below the
# open files the process may hold (its soft limit, raised to the hard one when it can
# be, less HTTP_SPARE_FILES for the database, the model and the logs), so that clients
# that keep reconnecting never leave it without a descriptor to accept with.
HTTP_MAX_CONNECTIONS = 1024
HTTP_SPARE_FILES = 128

# The page lists at most this many of a note's backlinks (and says how many more).
PAGE_BACKLINKS = 200

# The daemon records a heartbeat at least this often; three missed beats mean it is dead
# (or, while it holds its lock, stuck: it cannot write).
HEARTBEAT_SECONDS = 30
# `memory doctor`: below this room beside the database nothing new can be recorded (a
# sync's batch and SQLite's journal need about this much); below the second, a warning.
DISK_FAIL_BYTES = 16 * 2**20
DISK_WARN_BYTES = 256 * 2**20

# "No end": an open validity interval, and the cutoff of "everything known". Above every
# time the store can represent (9999-12-31), below the int64 limit numpy and SQLite share.
FOREVER_US = 1 << 62

# An asserted known_at may be at most this far after the machine's clock (two machines'
# clocks, a clock stepped back by NTP); later is refused. Revisions already stored later
# than this (a clock that ran ahead) are reported by `memory doctor`; the clock stamps
# new writes after them all the same.
CLOCK_TOLERANCE_US = 5 * 60 * 1_000_000
# A machine's clock past this (2100-01-01) is taken for a wrong one and nothing is
# written: every later write would be stamped after it, for good.
CLOCK_PLAUSIBLE_UNTIL_US = 4_102_444_800 * 1_000_000
# A clock before this (2020-01-01, years before this program) is one that was never set (a
# board without a battery-backed clock starts in 1970): a revision stamped then would be
# "known" at a time before it was written, and every point-in-time search would see it.
CLOCK_PLAUSIBLE_FROM_US = 1_577_836_800 * 1_000_000
# A clock this far past the newest revision (ten years) is taken for a wrong one too (a
# clock set to 2099): a write it stamps would put every later one after it, for good.
# One write with an explicit known_at confirms a clock that is right.
YEAR_US = 365 * 86_400 * 1_000_000
CLOCK_LEAP_US = 10 * YEAR_US
# A replica further behind the database's last write than this is lagging: `memory
# doctor` fails (Litestream ships the WAL every second; minutes mean it is stuck).
REPLICA_MAX_LAG_SECONDS = 300.0

# Settings with a fixed set of values.
EMBEDDER_CHOICES = ("auto", "e5", "none")
VECTOR_BACKENDS = ("auto", "sqlite-vec", "python")
# What one search result stands for when results are grouped: a note (its best section),
# or a section (a long section's parts merged).
SEARCH_GROUPS = ("note", "section")

# Exit codes of the `memory` command.
EXIT_OK = 0
EXIT_PROBLEM = 1  # a check failed (doctor, a purge's proof), or the daemon stopped on an error
EXIT_USAGE = 2  # a bad argument, file or setting: one line on stderr, nothing changed
EXIT_RESTART = 3  # the MCP server's worker: the database changed, start a fresh one
EXIT_LOCKED = 75  # EX_TEMPFAIL: another daemon already watches this database
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_BROKEN_PIPE = 141  # the reader of our output went away (128 + SIGPIPE)
# How the no-answer of a period asked about alone begins (search/contract.py): an
# assistant is told to ask about another period, not in other words (mcp_server/tools.py)
NOTHING_ABOUT = "no visible memory is about "
