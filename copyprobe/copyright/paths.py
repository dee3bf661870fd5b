"""The copyright study's result paths, as patterns: rules/copyright.smk's outputs and inputs
name them, and copyprobe.copyright.study and copyprobe.copyright.inputs fill them in. Its
prompts are its own (PROMPTS); its generations are the shared ones (copyprobe.paths) of the
source ``copyright.<benchmark>``, variant ``main``."""

BENCHMARK = "results/copyright/{benchmark}/"
MANIFEST = "results/copyright/{benchmark}/manifest.parquet"
MANIFEST_REPORT = "results/copyright/{benchmark}/manifest.report.json"
PROMPTS = "results/copyright/{benchmark}/prompts/{model}/{variant}.parquet"
GENERATIONS = "results/generations/{model}/main/copyright.{benchmark}.parquet"
VERDICTS = "results/copyright/{benchmark}/verdicts/{model}.parquet"
SCORED = "results/copyright/{benchmark}/scored/{model}.parquet"
#: One scoring job's part of it (``copyright.scoring.shards`` > 1; names as the generation
#: layer's, ``00001-of-00004``), merged into SCORED.
SCORED_SHARD = "results/copyright/{benchmark}/scored/{model}/shards/{shard}.parquet"
POOLED = "results/copyright/{benchmark}/scored.parquet"
AGREEMENT = "results/copyright/{benchmark}/refusal_agreement.json"
TABLES = "results/copyright/{benchmark}/tables/"
TABLE1 = "results/copyright/{benchmark}/tables/table1.md"
FIG6 = "results/copyright/{benchmark}/figures/fig6.png"
FIG7 = "results/copyright/{benchmark}/figures/fig7.png"
FIG8 = "results/copyright/{benchmark}/figures/fig8.png"
#: A benchmark's Markdown tables, by name (TABLE_NAMES), and the report's page of each.
TABLE = "results/copyright/{benchmark}/tables/{table}.md"
TABLE_NAMES = ("table1", "by_notice_form", "by_category", "table5", "over_refusal")
PAGE = "results/report/copyright/{benchmark}/{table}.html"
#: Attribution (copyright.attribution): a model's responses against the benchmark's index
#: copyright-<benchmark>: every span, one row per response, the table by task and notice form.
ATTRIBUTION_SPANS = "results/copyright/{benchmark}/attribution/{model}/spans.parquet"
ATTRIBUTION_SUMMARY = "results/copyright/{benchmark}/attribution/{model}/summary.parquet"
ATTRIBUTION_MD = "results/copyright/{benchmark}/tables/attribution_{model}.md"
