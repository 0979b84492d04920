"""The semantic model behind one seam, and the work of giving revisions their vectors."""
