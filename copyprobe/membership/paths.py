"""The membership study's result paths, as patterns: rules/membership.smk's outputs and inputs
name them, and copyprobe.membership.study fills them in. A run's folder is what
``membership-train --out`` writes, so ``model.yaml`` is a model config like the command's."""

RUN = "results/membership/{run}"
#: The run's documents (doc_id, text), cut as the run's ``words`` says.
DOCUMENTS = RUN + "/documents.parquet"
#: membership-train's outputs (copyprobe.membership.train): plan, weights, record, config.
PLAN = RUN + "/insertion.parquet"
MODEL_DIR = RUN + "/model"
RECORD = RUN + "/train.json"
MODEL_YAML = RUN + "/model.yaml"
#: Every document's membership scores on the trained model (membership-score's table).
SCORES = RUN + "/scores.parquet"
#: Every document's extraction and MSR measures (doc_id, measure, value), as the run's
#: ``measures`` say.
STUDY_MEASURES = RUN + "/study_measures.parquet"
#: Each measure against the truth, per duplication level (Parquet, Markdown, JSON).
RESULT_TABLE = RUN + "/result.parquet"
RESULT_MD = RUN + "/result.md"
RESULT_JSON = RUN + "/result.json"
#: The report's HTML page of a run's result table (rule report_page).
RESULT_PAGE = "results/report/membership/{run}.html"
