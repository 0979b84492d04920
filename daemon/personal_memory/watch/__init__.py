"""The sync daemon (``memory watch``): an edge that turns file events into syncs."""
