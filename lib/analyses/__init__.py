"""Stage 8: what trained models do: query clusters, first-relevant ranks, TK's per-kernel explanations, TILDE's
passage dependence and BERT-cat's pair vectors."""
