"""Stage 3: the first-stage retrievers (pyserini/Lucene BM25, QLD, BM25+RM3) over the book corpus."""
