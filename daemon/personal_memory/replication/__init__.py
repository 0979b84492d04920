"""Continuous replication of the database with Litestream: its config, the companion
process, health, restore, and making a replica forget what a purge erased."""
