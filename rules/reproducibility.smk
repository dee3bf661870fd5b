# What the results were made with: Python, platform, package versions, the sha256 of every
# library and workflow file, the resolved config's hash and each model's weights sha256. Its
# inputs and params are those facts, so it is remade whenever one of them changes.


rule environment:
    input:
        library=package_stamp,
        workflow=workflow_stamp,
        models=shared.environment_model_manifests(),
    output:
        paths.ENVIRONMENT,
    log:
        "logs/environment/all.log",
    localrule: True
    conda:
        "../envs/library.yaml"
    params:
        facts=environment_facts(),
        config_sha256=config_digest(config),
    script:
        "../workflow_scripts/environment.py"
