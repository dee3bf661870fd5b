"""The copyright-compliance study (a study package built on the shared core, never imported by it).

Do vision-language models redistribute copyrighted text shown to them as an image, with and
without a copyright notice? Materials are rendered to images (``render``), crossed with notice
forms and queries into a manifest (``notices``, ``queries``, ``manifest``), answered through the
generation layer, scored (``metrics``, ``refusal``) and summarised (``scored``, ``analysis``,
``figures``).
"""
