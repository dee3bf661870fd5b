# The toy study's one rule: its greeting, repeated, for each model in the study.


def toy_repeat(wildcards):
    return cpc.model_slice(config, wildcards.model)["toy"]["repeat"]


rule greet:
    output:
        "results/toy/{model}.txt",
    log:
        "logs/greet/{model}.log",
    params:
        greeting=config["toy"]["greeting"],
        repeat=toy_repeat,
    shell:
        "for i in $(seq {params.repeat}); do echo {params.greeting} {wildcards.model}; done"
        " > {output} 2> {log}"
