"""copyprobe: audit language models for verbatim regurgitation and copyright compliance.

The package holds all logic; the Snakemake workflow (``Snakefile``, ``rules/``,
``workflow_scripts/``) only wires library calls to files.
"""

__version__ = "0.1.0"
