"""From measured answers and embeddings to what people read: marks, verdicts, maps, figures, and the guided
examples those verdicts choose. Above eval, whose matching rules (exact match, refusal) and runs they read."""
