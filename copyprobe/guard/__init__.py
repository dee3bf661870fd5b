"""CopyGuard: a copyright guardrail that checks a request before a model answers it."""
