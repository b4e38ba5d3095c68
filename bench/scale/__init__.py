"""How retrieval grows with the corpus: speed of the indexes and the stored scale measurements' tables."""
