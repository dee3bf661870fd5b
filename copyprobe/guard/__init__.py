"""CopyGuard, the copyright guardrail (a package built on the shared core and the copyright study;
the shared core never imports it).

Four interchangeable components, each a registry: the notice identifier (``notice``, OCR in
``ocr``), the status verifier (``status``, with ``catalogue`` and ``search``), the query risk
analyzer (``risk``), and the reminder; ``pipeline`` runs them, ``backend`` wraps any
generation backend, ``serve`` puts the guard in front of an OpenAI-compatible server, and
``evaluation`` compares guarded and unguarded models.
"""
