"""Stage 9: the experiment pipeline the chapters run: protocols, model training and testing, and their records."""
