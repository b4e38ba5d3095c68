"""Retrieval: embeddings, Lucene BM25, FAISS dense search and rank fusion behind one interface."""
