"""The extraction study: how much of a text a model can reproduce, measured exactly.

Reference: docs/extraction.md.
"""
