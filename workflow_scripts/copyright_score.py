"""Rule copyright_score: one model's responses scored with their task's metric against the
right reference, with the refusal verdicts; with shards (copyright.scoring.shards), only the
rows of the job's shard."""

from copyprobe.artifacts import GENERATIONS, provenance, read_table, write_table
from copyprobe.copyright.manifest import COPYRIGHT_MANIFEST
from copyprobe.copyright.refusal import REFUSAL_VERDICTS
from copyprobe.copyright.response_scoring import SCORED_RUN, metric_settings, score_responses
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
settings = metric_settings(snakemake.params.metrics)
shard = getattr(snakemake.wildcards, "shard", None)
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


df = score_responses(read_table(snakemake.input.manifest, COPYRIGHT_MANIFEST),
                     read_table(snakemake.input.generations, GENERATIONS),
                     model=snakemake.wildcards.model,
                     verdicts=read_table(snakemake.input.verdicts, REFUSAL_VERDICTS),
                     bertscore=bertscore, embedder=embedder,
                     source=snakemake.input.generations, shard=shard)
extra = {} if shard is None else {"shard": shard}
write_table(df, snakemake.output[0], SCORED_RUN,
            provenance("copyright_score", settings, metrics_used=used, **extra))
log.info("%s%d responses, %d failed, %d judged", "" if shard is None else f"shard {shard}: ",
         len(df), (df["status"] != "ok").sum(), df["refused"].notna().sum())
