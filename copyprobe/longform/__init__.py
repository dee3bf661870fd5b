"""The long-form extraction study: prompted persistently, how much of a whole document does a
chat model write out near-verbatim (Ahmed, Cooper, Koyejo, Liang 2026)?

* :mod:`copyprobe.longform.nvrecall` -- near-verbatim blocks as book positions, nv-recall.
* :mod:`copyprobe.longform.perturb` -- Best-of-N perturbations of a request.
* :mod:`copyprobe.longform.engine` -- the probe (phase 1), continuation turns (phase 2), the
  measures; every request a cached call of the generation runner.
* :mod:`copyprobe.longform.cli` -- ``copyprobe extract-book``.
"""
