"""Notes as notes: Markdown parsed into sections with stable IDs, front matter, links and
tags, and what a notes folder is. Pure functions and data, no SQLite."""
