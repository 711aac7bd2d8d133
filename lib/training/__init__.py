"""Stage 7: training the models: pairwise hinge loss, masked-LM pre-training, TILDE objectives."""
