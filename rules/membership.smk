# The membership study's ground-truth runs (docs/membership.md#in-the-workflow): per run, the
# source's documents, a base model fine-tuned on a random half of them at several duplication
# levels (the trained model is an artifact: weights with their sha256, loss curve, settings,
# and model.yaml, a model config), then every membership score against the truth.

import copyprobe.membership.paths as membership_paths

from copyprobe.membership.inputs import MembershipInputs

membership_inputs = MembershipInputs(config)


wildcard_constraints:
    run=r"[A-Za-z0-9][A-Za-z0-9_.-]*",


rule membership_documents:
    input:
        corpus=membership_inputs.corpus,
        library=library("membership_documents"),
    output:
        membership_paths.DOCUMENTS,
    log:
        "logs/membership_documents/{run}.log",
    conda:
        "../envs/library.yaml"
    params:
        run=membership_inputs.run_params,
    script:
        "../workflow_scripts/membership_documents.py"


# model.yaml is written last: a job killed part-way leaves none, and Snakemake removes the
# outputs of a failed job; its checkpoints (results/membership/{run}/.checkpoints, not an
# output) let the rerun resume, and its log says whether it did.
rule membership_train:
    input:
        documents=membership_paths.DOCUMENTS,
        base=membership_inputs.base_manifest,
        library=library("membership_train"),
    output:
        plan=membership_paths.PLAN,
        model=directory(membership_paths.MODEL_DIR),
        record=membership_paths.RECORD,
        model_yaml=membership_paths.MODEL_YAML,
    log:
        "logs/membership_train/{run}.log",
    benchmark:
        "logs/benchmarks/membership_train/{run}.tsv"
    wildcard_constraints:
        run=membership_inputs.trained(),
    conda:
        membership_inputs.env
    threads: membership_inputs.train_threads
    resources:
        mem_mb=8000,
        gpu=membership_inputs.gpus,
    params:
        run=membership_inputs.run_params,
        base=membership_inputs.base_params,
    script:
        "../workflow_scripts/membership_train.py"


# A model trained elsewhere (a run with truth: Hubble's, or one given canaries): its truth
# becomes the run's plan and its entry the run's model.yaml; nothing is trained.
rule membership_given:
    input:
        documents=membership_paths.DOCUMENTS,
        truth=membership_inputs.truth,
        library=library("membership_given"),
    output:
        plan=membership_paths.PLAN,
        record=membership_paths.RECORD,
        model_yaml=membership_paths.MODEL_YAML,
    log:
        "logs/membership_given/{run}.log",
    wildcard_constraints:
        run=membership_inputs.given(),
    localrule: True
    conda:
        "../envs/library.yaml"
    params:
        run=membership_inputs.run_params,
        base=membership_inputs.base_params,
    script:
        "../workflow_scripts/membership_given.py"


rule membership_score:
    input:
        documents=membership_paths.DOCUMENTS,
        plan=membership_paths.PLAN,
        model_yaml=membership_paths.MODEL_YAML,
        record=membership_paths.RECORD,
        library=library("membership_score"),
    output:
        scores=membership_paths.SCORES,
        study_measures=membership_paths.STUDY_MEASURES,
        table=membership_paths.RESULT_TABLE,
        md=membership_paths.RESULT_MD,
        json=membership_paths.RESULT_JSON,
    log:
        "logs/membership_score/{run}.log",
    conda:
        membership_inputs.env
    resources:
        mem_mb=4000,
        gpu=membership_inputs.gpus,
    params:
        scoring=membership_inputs.scoring_params,
    script:
        "../workflow_scripts/membership_score.py"
