"""Rule copyright_score: one model's responses scored with their task's metric against the
right reference, with the refusal verdicts; with shards (copyright.scoring.shards), only the
rows of the job's shard."""

from copyprobe.artifacts import GENERATIONS, provenance, read_table, write_table
from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
from copyprobe.copyright.refusal import REFUSAL_VERDICTS
from copyprobe.copyright.score import SCORED_RUN, metric_settings, score_responses
from copyprobe.workflow import setup_logging

log = setup_logging(snakemake.log[0])  # noqa: F821
settings = metric_settings(snakemake.params.metrics)  # noqa: F821
shard = getattr(snakemake.wildcards, "shard", None)  # noqa: F821
used = {}


def bertscore():
    from copyprobe.copyright.metrics.bertscore import bert_scorer

    scorer = bert_scorer(**settings["bertscore"])
    used["bertscore"] = scorer.settings()
    return scorer


def embedder():
    from copyprobe.copyright.metrics.embedding import Embedder

    emb = Embedder(**settings["embedding"])
    used["embedding"] = emb.settings()
    return emb


df = score_responses(read_table(snakemake.input.manifest, COPYRIGHT_MANIFEST),  # noqa: F821
                     read_table(snakemake.input.generations, GENERATIONS),  # noqa: F821
                     model=snakemake.wildcards.model,  # noqa: F821
                     verdicts=read_table(snakemake.input.verdicts, REFUSAL_VERDICTS),  # noqa: F821
                     bertscore=bertscore, embedder=embedder,
                     source=snakemake.input.generations, shard=shard)  # noqa: F821
extra = {} if shard is None else {"shard": shard}
write_table(df, snakemake.output[0], SCORED_RUN,  # noqa: F821
            provenance("copyright_score", settings, metrics_used=used, **extra))
log.info("%s%d responses, %d failed, %d judged", "" if shard is None else f"shard {shard}: ",
         len(df), (df["status"] != "ok").sum(), df["refused"].notna().sum())
