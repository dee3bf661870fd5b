"""The guard's result paths, as patterns (rules/guard.smk, copyprobe.guard.study)."""

PROMPTS = "results/prompts/{model}/main/copyright.{benchmark}.parquet"
DECISIONS = "results/copyright/{benchmark}/guard_decisions/{model}.parquet"
TABLES = "results/copyright/guard/"
TABLE2 = "results/copyright/guard/table2.md"
PAGES = "results/report/copyright/guard/"
TABLE2_PAGE = "results/report/copyright/guard/table2.html"
