"""Stage 2: text to model inputs: word tokenizer and vocabulary, word vectors, WordPiece and BERT encoders."""
