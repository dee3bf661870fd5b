# copyprobe workflow: shared rules (corpus, generation) and one rule file per registered study.
# Setup, includes and the target rule only; helpers live in rules/common.smk.

from snakemake.utils import min_version

min_version("9.0")


# The demo study. `--configfile mine.yaml` is merged into it key by key (the demo's models and
# datasets still run); `--configfile mine.yaml --replace-workflow-config` runs mine.yaml alone.
configfile: "config/config.yaml"


# The report's front page (`snakemake --report results/report.html`): what the studies do.
report: "report/workflow.rst"


# What the rule files take from each other, in include order (each file names only these):
# - common.smk: config, STUDIES, `shared` (copyprobe.rule_inputs), library(), NO_MODEL,
#   one_of(), the targets; every other file uses them;
# - generation.smk: rules generate (and generate_on_head) and merge_generations, which read a
#   source's prompts from the study that makes them (Study.prompts_checkpoint: msr_build_prompts,
#   copyright_prompts); guard.smk reuses generate (copyright_guarded_generate) and orders its
#   rules before generate, generate_on_head and merge_generations;
# - spans.smk: the span indexes that the studies' attribution and output-guard rules read;
# - the studies' files import their own study's paths and inputs, and another study's only
#   through its interface (Study.interface); none uses another study file's objects.
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
