"""The page (``memory ui``): an edge that shows the memory in a browser, read-only, on
the loopback address, behind a per-run secret."""
