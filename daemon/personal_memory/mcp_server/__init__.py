"""The MCP stdio server (``memory serve``): an edge over :class:`MemoryStore`."""
