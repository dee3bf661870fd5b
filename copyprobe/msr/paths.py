"""The MSR study's result paths, as patterns: rules/msr.smk's outputs and inputs name them,
and copyprobe.msr.study and copyprobe.msr.inputs fill them in."""

CURATED = "results/curated/{model}/{source}.parquet"
CURATION_TABLE = "results/curation/{model}.parquet"
CURATION_REPORT = "results/curation/{model}.md"
CURATION_PAGE = "results/report/curation/{model}.html"
MATCHES = "results/matches/{model}/{variant}/{source}.parquet"
STATS = "results/stats/{model}/{variant}/{dataset}.json"
#: A run's figures, one per kind (FIGURE_KINDS): f_k, per-document longest match, HELM.
FIGURE = "results/figures/{model}/{variant}/{dataset}_{kind}.png"
FIGURE_KINDS = ("fk", "per_document", "helm")
FIGURE_FK = "results/figures/{model}/{variant}/{dataset}_fk.png"
FIGURE_PER_DOCUMENT = "results/figures/{model}/{variant}/{dataset}_per_document.png"
FIGURE_HELM = "results/figures/{model}/{variant}/{dataset}_helm.png"
MODELS_FIGURE = "results/figures/{dataset}_fk_models.png"
EXPERIMENT_FIGURE = "results/figures/experiments/{experiment}/{model}.png"
COMPARISON = "results/comparisons/{experiment}/{model}.json"
TABLE_CSV = "results/tables/msr_table.csv"
TABLE_MD = "results/tables/msr_table.md"
SWEEP_CSV = "results/tables/sweep_{experiment}.csv"
SWEEP_MD = "results/tables/sweep_{experiment}.md"
COMPARISONS_CSV = "results/tables/comparisons.csv"
COMPARISONS_MD = "results/tables/comparisons.md"
TABLE_PAGE = "results/report/msr/msr_table.html"
SWEEP_PAGE = "results/report/msr/sweep_{experiment}.html"
COMPARISONS_PAGE = "results/report/msr/comparisons.html"
#: Attribution (msr.attribution): a run's spans found in the span index, one row per span and
#: one per generation, and the table over every run.
ATTRIBUTION_SPANS = "results/attribution/{model}/{variant}/{dataset}/spans.parquet"
ATTRIBUTION_SUMMARY = "results/attribution/{model}/{variant}/{dataset}/summary.parquet"
ATTRIBUTION_CSV = "results/tables/msr_attribution.csv"
ATTRIBUTION_MD = "results/tables/msr_attribution.md"
ATTRIBUTION_PAGE = "results/report/msr/msr_attribution.html"
