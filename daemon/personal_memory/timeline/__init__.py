"""The revision log's rules over time: how a write is appended, a whole note as it was
known at a cutoff, and what changed between two cutoffs."""
