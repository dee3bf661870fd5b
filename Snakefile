# copyprobe workflow: shared rules (corpus, generation) and one rule file per registered study.
# Setup, includes and the target rule only; helpers live in rules/common.smk.

from snakemake.utils import min_version

min_version("9.0")


# The demo study. `--configfile mine.yaml` is merged into it key by key (the demo's models and
# datasets still run); `--configfile mine.yaml --replace-workflow-config` runs mine.yaml alone.
configfile: "config/config.yaml"


# The report's front page (`snakemake --report results/report.html`): what the studies do.
report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/corpus.smk"
include: "rules/generation.smk"
include: "rules/spans.smk"


# Each registered study's rule file (copyprobe.studies: msr, copyright, guard, ...).
for _rule_file in study_rule_files():

    include: _rule_file


include: "rules/reproducibility.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
        report_targets(),


# One handler for the workflow (Snakemake keeps the last `onsuccess` defined): every study's
# table that this run (re)made (Study.printed_tables).
onsuccess:
    print_tables(STUDIES, config, jobs_run(workflow))
