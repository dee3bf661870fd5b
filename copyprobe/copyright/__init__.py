"""The copyright-compliance study: notices, rendered materials, queries, scoring and results."""
