"""The copyright-compliance benchmark (a study package: it may import the shared core, never the reverse)."""
