# copyprobe: two commands.
#   make demo   set up .venv and run the offline MSR demo (default config: each measure once)
#   make demo-full  the demo with the Wikipedia leads, SmolLM2 in chat format and 4 extraction
#                windows a document (config/examples/demo_full.yaml merged into the default)
#   make test   set up .venv and run the test suite
#   make demo-copyright   the offline copyright-compliance demo (config/copyright_demo.yaml)
#   make demo-copyright-full  the same with 2 queries a task (config/examples/copyright_demo_full.yaml)
#   make demo-longform   the offline long-form extraction demo beside the p_z map
#                (config/examples/longform.yaml: Gemma-3-270M on the licence texts)
#   make report  the HTML report of the run (results/report.html; runs what is missing first;
#                REPORT_ARGS="--configfile config/copyright_demo.yaml --replace-workflow-config"
#                reports the copyright demo)
#   (make test-services installs the Debian packages of the MediaWiki the crawler tests start;
#    without them those tests skip; CI runs it first, see .ci/run, and there fails on such a
#    skip: tests/skip_allowlist.txt lists the reasons a test may skip for)
# Set-up is idempotent: the venv is rebuilt only when pyproject.toml changes.

PYTHON ?= python3
VENV   := .venv
BIN    := $(CURDIR)/$(VENV)/bin
STAMP  := $(VENV)/.installed
CORES  ?= 2
# llama-cpp-python is compiled once per machine into a wheelhouse outside the checkout. On
# x86_64 it is built for AVX2 instead of -march=native: a native build on hosts that report
# AMX / AVX-512 FP16 dies with "Illegal instruction" where the hypervisor does not enable them.
LLAMA_VERSION := 0.3.36
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
LLAMA_FLAVOUR := avx2
else
LLAMA_CMAKE_ARGS ?=
LLAMA_FLAVOUR := native
endif
WHEELHOUSE ?= $(HOME)/.cache/copyprobe/wheels/$(LLAMA_FLAVOUR)
export PATH := $(BIN):$(PATH)

.PHONY: demo demo-full demo-listing demo-copyright demo-copyright-full demo-copyright-listing demo-longform demo-longform-listing report test test-services setup bench clean-results

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip wheel setuptools
	# PyTorch: the CPU build where no CUDA is present (the hf backend needs it).
	if command -v nvidia-smi >/dev/null 2>&1; then $(BIN)/pip install torch; \
	else $(BIN)/pip install torch==2.13.0; fi
	# llama-cpp-python compiles from source once per machine (~6-10 min on 2 cores).
	ls $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 || \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip wheel --no-cache-dir --no-deps \
	    llama-cpp-python==$(LLAMA_VERSION) -w $(WHEELHOUSE)
	$(BIN)/pip install $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_VERSION)-*.whl
	# every extra (pyproject.toml's `all`: workflow, local, api, hf, ocr, copyright, crawl,
	# guard, slurm, spans) and the test tools; `pip install copyprobe` alone is the light core
	$(BIN)/pip install -e '.[all,test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/snakemake --cores $(CORES)
	@$(MAKE) --no-print-directory demo-listing

demo-full: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --configfile config/examples/demo_full.yaml
	@$(MAKE) --no-print-directory demo-listing

demo-listing:
	@echo
	@echo "MSR table (printed above when made): results/tables/msr_table.csv and .md"
	@echo "Figures: results/figures/<model>/main/<dataset>_fk.png, _per_document.png, _helm.png;"
	@echo "         results/figures/<dataset>_fk_models.png"
	@echo "Stats:   results/stats/<model>/main/<dataset>.json (blind baseline, bootstrap intervals)"
	@echo "Extraction table (p_z per window, Gemma-3-270M on the licences; printed above when"
	@echo "         made): results/tables/extraction_table.md,"
	@echo "         results/extraction/figures/gemma3-270m/licences_{log_pz,np_curves,map}.png"
	@echo "Membership against a known truth (printed above when made): results/membership/control/result.md"
	@echo "More:    make demo-full (Wikipedia, SmolLM2 in chat format, 4 windows a document)"

demo-copyright: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --configfile config/copyright_demo.yaml \
	  --replace-workflow-config
	@$(MAKE) --no-print-directory demo-copyright-listing

demo-copyright-full: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --configfile config/copyright_demo.yaml \
	  config/examples/copyright_demo_full.yaml --replace-workflow-config
	@$(MAKE) --no-print-directory demo-copyright-listing

demo-copyright-listing:
	@echo
	@for t in table1 over_refusal; do echo "results/copyright/docs/tables/$$t.md:"; echo; \
	  cat results/copyright/docs/tables/$$t.md; echo; done
	@echo "Agreement of the rule detector with the judge: results/copyright/docs/refusal_agreement.json"
	@echo "Tables:  results/copyright/docs/tables/ (table1, by_notice_form, by_category, table5, over_refusal; CSV + Markdown)"
	@echo "Figures: results/copyright/docs/figures/fig6.png, fig7.png, fig8.png"
	@echo "Scores:  results/copyright/docs/scored.parquet (one row per response)"
	@echo "More:    make demo-copyright-full (2 queries a task)"

demo-longform: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --configfile config/examples/longform.yaml \
	  --replace-workflow-config
	@$(MAKE) --no-print-directory demo-longform-listing

demo-longform-listing:
	@echo
	@echo "Long-form tables (printed above when made): results/tables/longform_table.md,"
	@echo "         results/tables/longform_vs_pz.md (per document: longform_vs_pz_documents.csv)"
	@echo "Figure:  results/longform/figures/longform_vs_pz.png (nv-recall against mean log p_z"
	@echo "         per token, one point per licence)"
	@echo "Per document: results/longform/documents/gemma3-270m/licences.parquet, blocks beside it;"
	@echo "         p_z windows: results/extraction/windows/gemma3-270m/licences.parquet"

# The report covers the jobs of the given config: the run first (nothing to do when done),
# then Snakemake's self-contained HTML report of it.
REPORT ?= results/report.html
REPORT_ARGS ?=
report: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) $(REPORT_ARGS)
	$(BIN)/snakemake --report $(REPORT) $(REPORT_ARGS)
	@echo
	@echo "Report: $(REPORT) (one self-contained file: open it in a browser)"

test: $(STAMP)
	$(BIN)/python -m pytest tests

test-services:
	scripts/install-test-services

bench: $(STAMP)
	$(BIN)/python benchmarks/matching.py
	$(BIN)/python benchmarks/generation.py
	$(BIN)/python benchmarks/curation.py
	$(BIN)/python benchmarks/copyright_render.py
	$(BIN)/python benchmarks/copyright_manifest.py
	$(BIN)/python benchmarks/copyright_scoring.py
	$(BIN)/python benchmarks/guard_risk.py
	$(BIN)/python benchmarks/guard_proxy.py
	$(BIN)/python benchmarks/span_index.py --sizes 100

clean-results:
	rm -rf results logs .snakemake
