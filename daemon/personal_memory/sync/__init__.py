"""Reconciling notes folders with the store (shared by ``memory sync`` and the daemon),
and the daemon's state as the database records it."""
