"""Rule copyright_judge: refusal verdicts for one model's responses (the rule detector always;
the LLM judge when configured, its calls cached like any model call; with the cascade, the judge
only on the rows the rules are unsure of)."""

from copyprobe.artifacts import GENERATIONS, provenance, read_table, write_table
from copyprobe.copyright.refusal import REFUSAL_VERDICTS, agreement, judge_responses
from copyprobe.copyright.response_scoring import rule_only_verdicts
from copyprobe.script_logging import setup_logging

log = setup_logging(snakemake.log[0])
p = dict(snakemake.params.judge)
gens = read_table(snakemake.input[0], GENERATIONS)
if p["judge"] is None:
    out = rule_only_verdicts(gens)
    summary = {}
    log.info("no judge configured: rule detector only")
else:
    judge = dict(p["judge"])
    judge.setdefault("n_threads", snakemake.threads)
    responses = gens.assign(response=gens["text"].where(gens["status"] == "ok", None))
    out = judge_responses(responses, judge, p["cache_dir"], max_tokens=p["max_words"],
                          cascade=p["cascade"])
    summary = out.attrs.get("summary", {})
    log.info("judge: %s; agreement with the rule detector: %s", summary,
             agreement(out["refusal_rule"].fillna(False), out["refusal_judge"]))
settings = {"judge": p["judge"], "max_words": p["max_words"], "cascade": p["cascade"]}
write_table(out, snakemake.output[0], REFUSAL_VERDICTS,
            provenance("copyright_judge", settings, summary=summary))
