"""Stage 5: scoring first-stage candidates with a model and re-ordering them (TK family, BERT-cat, TILDE)."""
