"""Pure functions from measured answers and embeddings to what people read: marks, verdicts, maps, figures."""
