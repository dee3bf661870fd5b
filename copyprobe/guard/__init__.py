"""CopyGuard, the copyright guardrail (a package built on the shared core and the copyright study;
the shared core never imports it).

Four components: the notice identifier (``notice``, with the OCR engines' registry in
``ocr``), the status verifier (``status``, with ``catalogue`` and the search providers'
registry in ``search``), the query risk analyzer (``risk``, a registry of the ``rules`` and
``llm`` analyzers), and the reminder; ``pipeline`` runs them, ``backend`` wraps any
generation backend, ``serve`` puts the guard in front of an OpenAI-compatible server, and
``evaluation`` compares guarded and unguarded models.
"""
