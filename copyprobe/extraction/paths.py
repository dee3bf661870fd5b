"""The extraction study's result paths, as patterns: rules/extraction.smk's outputs and inputs
name them, and copyprobe.extraction.study and copyprobe.extraction.inputs fill them in. Its
documents are MSR's curated tables (copyprobe.msr.paths.CURATED) and the shared corpus."""

#: Every window of a model's curated documents of one source, scored (the WINDOWS table).
WINDOWS = "results/extraction/windows/{model}/{source}.parquet"
#: One scoring job's part of it (``extraction.shards``; names as the generation layer's).
WINDOWS_SHARD = "results/extraction/windows/{model}/{source}/shards/{shard}.parquet"
#: Per document of a (model, dataset): extractable fractions, longest runs, max p_z, split.
DOCUMENTS = "results/extraction/documents/{model}/{dataset}.parquet"
#: D_pre vs D_post on the per-document measures, beside the blind baseline (JSON).
STATS = "results/extraction/stats/{model}/{dataset}.json"
#: A (model, dataset)'s figures, one per kind (FIGURE_KINDS).
FIGURE = "results/extraction/figures/{model}/{dataset}_{kind}.png"
FIGURE_KINDS = ("log_pz", "np_curves", "map")
FIGURE_LOG_PZ = "results/extraction/figures/{model}/{dataset}_log_pz.png"
FIGURE_NP_CURVES = "results/extraction/figures/{model}/{dataset}_np_curves.png"
FIGURE_MAP = "results/extraction/figures/{model}/{dataset}_map.png"
TABLE_CSV = "results/tables/extraction_table.csv"
TABLE_MD = "results/tables/extraction_table.md"
TABLE_PAGE = "results/report/extraction/extraction_table.html"
