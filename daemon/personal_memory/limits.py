"""Input limits, declared once: the core enforces them, the MCP layer advertises them."""

MAX_ID_CHARS = 4096  # a note's ID holds its path; PATH_MAX is 4096 on Linux
MAX_TITLE_CHARS = 200
MAX_CONTENT_CHARS = 2_000_000
MAX_NAMESPACE_CHARS = 128
MAX_SOURCE_CHARS = MAX_ID_CHARS * 4
MAX_QUERY_CHARS = 1000
MAX_LIMIT = 1000
MAX_TAGS = 100  # tags in one search's filter

# What the MCP tools accept from a model: smaller than the API's limits on purpose.
MAX_TOOL_RESULTS = 50
MAX_TOOL_CONTENT_CHARS = 100_000
MAX_TOOL_SOURCE_CHARS = 2000

# The daemon records a heartbeat at least this often; three missed beats mean it is dead.
HEARTBEAT_SECONDS = 30
