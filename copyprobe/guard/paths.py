"""The guard's result paths, as patterns (rules/guard.smk, copyprobe.guard.study)."""

PROMPTS = "results/copyright/{benchmark}/prompts/{model}/main.parquet"
DECISIONS = "results/copyright/{benchmark}/guard_decisions/{model}.parquet"
#: The decisions on one generation shard's requests, written by the generate job that made
#: them (its output named ``guard``), merged into DECISIONS.
DECISIONS_SHARD = "results/generations/{model}/{variant}/{source}/guard/{shard}.parquet"
TABLES = "results/copyright/guard/"
TABLE2 = "results/copyright/guard/table2.md"
#: The guard's Markdown tables, by name (TABLE_NAMES), and the report's page of each.
TABLE = "results/copyright/guard/{table}.md"
TABLE_NAMES = ("table2", "table6", "ablation", "latency")
PAGE = "results/report/copyright/guard/{table}.html"
#: The output guard's checks of an output-guarded model's answers (rule copyright_output_guard;
#: its generations are the shared GENERATIONS path of the model).
OUTPUT_CHECKS = "results/copyright/{benchmark}/guard_output/{model}.parquet"
#: Guards compared (copyprobe.guard.compare): a table (.md, .csv) and a figure.
COMPARED = "results/copyright/guard/guards_compared."
COMPARED_MD = COMPARED + "md"
