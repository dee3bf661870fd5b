"""The copyright-compliance benchmark: a study package built on the shared core."""
