"""Stage 8: what trained models do: query clusters, first-relevant ranks, TK's kernels, TILDE and BERT-cat inside."""
