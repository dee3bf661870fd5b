"""The long-form study's result paths, as patterns: rules/longform.smk's outputs and inputs
name them, and copyprobe.longform.study fills them in. Its documents are the shared corpus."""

#: Per document of a (model, source): what the run measured (the DOCUMENTS table).
DOCUMENTS = "results/longform/documents/{model}/{source}.parquet"
#: The near-verbatim blocks of those documents, as book positions (the BLOCKS table).
BLOCKS = "results/longform/blocks/{model}/{source}.parquet"
#: Per model: nv-recall over its documents, with intervals.
TABLE_CSV = "results/tables/longform_table.csv"
TABLE_MD = "results/tables/longform_table.md"
#: Where a model also has an exact p_z map of the same documents: the two views compared.
AGREEMENT_CSV = "results/tables/longform_vs_pz.csv"
AGREEMENT_MD = "results/tables/longform_vs_pz.md"
#: ... and per document measured by both studies (the rows behind it).
AGREEMENT_DOCUMENTS = "results/tables/longform_vs_pz_documents.csv"
#: The figure of those rows: per model, nv-recall against mean log p_z per token.
FIGURE_VS_PZ = "results/longform/figures/longform_vs_pz.png"
#: The report's pages of the two tables.
TABLE_PAGE = "results/report/longform/longform_table.html"
AGREEMENT_PAGE = "results/report/longform/longform_vs_pz.html"
