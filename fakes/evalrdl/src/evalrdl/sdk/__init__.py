"""Lower-level SDK modules."""
