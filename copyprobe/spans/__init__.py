"""Span index: every long verbatim span of a text found in a user's corpora.

Reference: docs/span-index.md.
"""
