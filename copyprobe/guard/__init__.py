"""CopyGuard: a copyright guardrail that wraps any model call."""
