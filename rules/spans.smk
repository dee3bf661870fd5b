# Span indexes (core): each configured index (spans.indexes, and the copyright
# benchmarks' copyright-<benchmark>) is prepared once (the engine's step 1 for every shard),
# its shards' suffix arrays are built as parallel jobs (threads and mem_mb from the index's
# cpus and mem_gb: on SLURM as elsewhere), and span_index validates the whole and writes the
# manifest results/spans/<name>/index.json, the input of every rule that queries it.
# A shard's suffix array is kept by content under the cache directory: a corpus written again
# with the same documents reruns these jobs (Snakemake looks at times) but builds nothing.

import copyprobe.spans.paths as span_paths

from copyprobe.spans.inputs import SpanInputs

span_inputs = SpanInputs(config)


wildcard_constraints:
    index=span_inputs.index_names(),


# One rule per index: its shard files are static (spans.indexes.<name>.shards).
for _index in span_inputs.names():

    rule:
        name:
            span_inputs.prepare_rule(_index)
        input:
            corpora=span_inputs.corpora(_index),
            tokenizer=span_inputs.tokenizer_inputs(_index),
            library=library("span_index_prepare"),
        output:
            span_inputs.prepared(_index),
        log:
            f"logs/span_index_prepare/{_index}.log",
        conda:
            "../envs/library.yaml"
        resources:
            mem_mb=4000,
        params:
            index=_index,
            out_dir=span_paths.INDEX_DIR.format(index=_index),
            unit=span_inputs.spec(_index)["unit"],
            shards=span_inputs.spec(_index)["shards"],
            tokenizer=span_inputs.tokenizer(_index),
        script:
            "../workflow_scripts/span_index_prepare.py"


rule span_index_shard:
    input:
        span_inputs.shard_inputs,
        library=library("span_index_shard"),
    output:
        [f"{span_paths.SHARD_DIR}/{f}" for f in span_paths.SA_FILES],
    log:
        "logs/span_index_shard/{index}/{shard}.log",
    conda:
        "../envs/library.yaml"
    threads: span_inputs.shard_threads
    resources:
        mem_mb=span_inputs.shard_mem_mb,
        runtime=span_inputs.shard_runtime,
    params:
        build=span_inputs.shard_params,
        shard_dir=span_inputs.shard_dir,
    script:
        "../workflow_scripts/span_index_shard.py"


rule span_index:
    input:
        shards=span_inputs.index_shards,
        library=library("span_index"),
    output:
        span_paths.INDEX_MANIFEST,
    log:
        "logs/span_index/{index}.log",
    localrule: True
    conda:
        "../envs/library.yaml"
    params:
        out_dir=span_inputs.index_dir,
        unit=span_inputs.index_unit,
        tokenizer=span_inputs.index_tokenizer,
    script:
        "../workflow_scripts/span_index.py"
