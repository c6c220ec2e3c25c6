# The two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Validation tools that must not share the project's environment (aws-sam-cli pins its own stack).
TOOLS       := .tools
TOOLS_STAMP := $(TOOLS)/.installed
# Every install comes from a committed lock with hashes and resolves nothing (scripts/locks.py says which
# lock is whose). uv installs them, itself installed by pip from requirements/uv.txt into .uv.
UV := .uv/bin/uv
export UV_PROJECT_ENVIRONMENT := $(VENV)
export UV_PYTHON_DOWNLOADS := never
STALE_LOCK := uv.lock does not match pyproject.toml: run `make lock` and commit the locks

.PHONY: install tools lock upgrade check-locks demo test test-fast lint validate build eval eval-model eval-bedrock eval-replay bench bench-logs bench-redaction bench-investigation fault-matrix catalogue member-template deployer-policy report-picture corpus docs typecheck clean

$(UV): requirements/uv.txt
	PIP_ROOT_USER_ACTION=ignore $(PYTHON) -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps --upgrade --target .uv -r requirements/uv.txt
	touch $(UV)

# Idempotent bootstrap: re-syncs only when the lock or pyproject.toml changes; a lock that no longer matches
# pyproject.toml stops here (checked offline) instead of being re-resolved.
$(STAMP): pyproject.toml uv.lock $(UV)
	@$(UV) lock --check --offline --quiet 2>/dev/null || { echo "$(STALE_LOCK)" >&2; exit 1; }
	$(UV) sync --frozen --extra dev --python $(PYTHON) --quiet
	touch $(STAMP)

$(TOOLS_STAMP): requirements/tools.txt requirements/package-lock.json $(UV)
	test -x $(TOOLS)/venv/bin/python || $(UV) venv --quiet --python $(PYTHON) $(TOOLS)/venv
	@# No bytecode at install: sam and cfn-lint run a few times, compiling only what they import.
	$(UV) pip sync --quiet --require-hashes --python $(TOOLS)/venv/bin/python requirements/tools.txt
	@if command -v npm >/dev/null; then cp requirements/package.json requirements/package-lock.json $(TOOLS)/ && \
	  npm ci --silent --no-audit --no-fund --prefix $(TOOLS); \
	  else echo "npm not found: the ASL validator test will be skipped"; fi
	touch $(TOOLS_STAMP)

install: $(STAMP)
tools: $(TOOLS_STAMP)

# After changing a dependency (pyproject.toml, requirements/*.in, lambda-exclude.txt, package.json): renew
# every lock, keeping the versions of everything else. `make upgrade` moves everything to the newest
# versions the inputs allow: its own change, reviewed and tested like any other.
lock: $(UV)
	$(PYTHON) scripts/locks.py lock
upgrade: $(UV)
	$(PYTHON) scripts/locks.py upgrade
check-locks: $(UV)
	$(PYTHON) scripts/locks.py check

# Bytecode written even where the shell sets PYTHONDONTWRITEBYTECODE (an empty value is unset to Python): the
# demo's lab and the test suite start many Python processes (labs, function URLs, the command line), and without
# it each compiles what it imports again, a sixth of its CPU.
demo test test-fast: export PYTHONDONTWRITEBYTECODE :=

demo: $(STAMP)
	$(BIN)/responder demo

# Three workers on 2 cores, a test file each at a time (module fixtures stay whole; tests/conftest.py starts
# the corpus run and the longest files first): much of the suite waits on subprocesses and on the
# lab's clocks (sam build, lab servers, settle waits), so one more worker than cores keeps both busy; a
# fourth only adds contention now that the suite is CPU-bound (fresh clone, 2 cores: 7:19 with four, 6:59
# with three, CPU 13:57 and 12:47).
test:
	@# The project's environment and the validation tools are set up side by side (on a fresh machine, a minute saved).
	@$(MAKE) --no-print-directory -j2 install tools
	$(BIN)/ruff check .
	@# The project's modules compiled first, so no test writes bytecode beside the sources the sam build test
	@# copies; the dependencies' is written as first imported.
	$(BIN)/python -m compileall -q -j 0 incident_responder handlers mcp chaos scripts tests
	@# make typecheck runs inside (tests/validation/test_types.py), beside the other tests.
	$(BIN)/python -m pytest -n 3 --dist loadfile --durations=10

# The whole corpus through the lifecycle, each scenario in a lab, then the property test with more examples (make
# test runs a representative part of the corpus, tests/functional/test_evaluation.py); .ci/run runs it after make test.
corpus: export PYTHONDONTWRITEBYTECODE :=
corpus: $(STAMP)
	CORPUS=all $(BIN)/python -m pytest -n 2 --dist loadfile tests/functional/test_evaluation.py -k "corpus_passes"
	@# The property tests again, with five to seven times the examples make test draws.
	PROPERTY_EXAMPLES=200 OVERLAP_EXAMPLES=60 $(BIN)/python -m pytest -n 2 --dist loadfile \
	  tests/functional/test_any_model.py tests/functional/test_overlap.py

# The same without the slow tests (corpus run, sam build, the command run in new processes): minutes less.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 3 --dist loadfile --durations=10 -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy over the production packages, the handlers, chaos and the MCP servers (pyproject.toml: [tool.mypy]);
# each server file is checked on its own (both are named server.py, outside any package).
typecheck: $(STAMP)
	$(BIN)/mypy -p incident_responder -p handlers -p chaos
	$(BIN)/mypy mcp/diagnostics/server.py
	$(BIN)/mypy mcp/remediation/server.py

# The docs site (mkdocs, Material theme) into site/; `make test` runs the same strict build (tests/validation/test_docs.py).
# The README's picture of the report: the newest out/*/report.html (make demo) in headless Chromium.
report-picture: $(STAMP)
	$(BIN)/python scripts/report_picture.py

docs: $(STAMP)
	$(BIN)/mkdocs build --strict

validate: $(STAMP) $(TOOLS_STAMP)
	$(BIN)/python -m pytest tests/validation -q

# sam build (Makefile build method); deploy with `sam deploy --guided` the first time.
build: $(TOOLS_STAMP)
	SAM_CLI_TELEMETRY=0 $(TOOLS)/venv/bin/sam build

# The public scenario corpus, each in a fresh lab, scored on the end state (offline model by default).
eval: $(STAMP)
	$(BIN)/responder eval scenarios

# The same corpus against a real Bedrock model: needs your AWS credentials (profile or keys) with
# bedrock:InvokeModel; the lab still runs locally. It says first what the run may cost at most (and stops
# calling the model there: MAX_COST=USD to change it), and keeps every model call in $(CASSETTES), one
# cassette per scenario, which eval-replay runs again offline: regression tests for your model.
BEDROCK_MODEL_ID ?= global.anthropic.claude-haiku-4-5-20251001-v1:0
CASSETTES ?= cassettes/$(subst :,-,$(BEDROCK_MODEL_ID))
eval-bedrock: $(STAMP)
	$(BIN)/responder eval scenarios --model bedrock_converse:$(BEDROCK_MODEL_ID) --record $(CASSETTES) $(if $(MAX_COST),--max-cost $(MAX_COST))

# The corpus again from those cassettes: no model, no credentials; fails where the run departs from them.
eval-replay: $(STAMP)
	$(BIN)/responder eval scenarios --replay $(CASSETTES)

# The corpus as a benchmark for one model (docs/benchmark.md): keeps its scores in bench/benchmark/<model>.json
# and renders the page's tables. MODEL=offline by default; a bedrock_converse: model records its calls in
# cassettes/<model>/ (REPLAY=DIR answers from such a folder instead, with no model and no credentials).
MODEL ?= offline
eval-model: $(STAMP)
	$(BIN)/python scripts/benchmark.py --model $(MODEL) $(if $(REPLAY),--replay $(REPLAY),$(if $(findstring bedrock_converse:,$(MODEL)),--record cassettes/$(subst :,-,$(MODEL)))) $(if $(MAX_COST),--max-cost $(MAX_COST))

# Writes bench/results.json and bench/results.md and refreshes the tables in docs/evaluation.md (several minutes).
bench: $(STAMP)
	$(BIN)/python scripts/bench.py

fault-matrix: $(STAMP)
	$(BIN)/python scripts/fault_matrix.py

bench-logs: $(STAMP)
	$(BIN)/python scripts/bench_logs.py

bench-redaction: $(STAMP)
	$(BIN)/python scripts/bench_redaction.py

bench-investigation: $(STAMP)
	$(BIN)/python scripts/bench_investigation.py

catalogue: $(STAMP) ; $(BIN)/python scripts/catalogue.py
# member-account.yaml (the template a member account deploys), from template.yaml's statements.
member-template: $(STAMP) ; $(BIN)/python scripts/member_template.py
# docs/deployer-policies/: what the principal running `sam deploy` needs, from the template's resource types.
deployer-policy: $(STAMP) ; $(BIN)/python scripts/deployer_policy.py

clean:
	rm -rf $(VENV) $(TOOLS) .uv build .aws-sam *.egg-info .pytest_cache .ruff_cache .mypy_cache out site

# ---------------------------------------------------------------- sam build targets
# Functions get the project's source, precompiled for the runtime (cold start); the layers get the
# dependencies as manylinux wheels for the runtime's Python, whatever Python runs the build
# (scripts/build_layers.py; what it leaves out and why: requirements/lambda-exclude.txt).
# `python scripts/artifacts.py` prints each artifact's size.
LAMBDA_PYTHON_VERSION := 3.12
PY_RUNTIME ?= $(firstword $(shell command -v python$(LAMBDA_PYTHON_VERSION) 2>/dev/null) $(wildcard $(HOME)/.pyenv/versions/$(LAMBDA_PYTHON_VERSION)*/bin/python$(LAMBDA_PYTHON_VERSION)))
# Hash-based .pyc (PEP 552): sam package dates every file in its zips 1980-01-01, so a timestamp-based .pyc
# never matches its source on Lambda and each cold start would compile every module again (into a read-only
# file system, so for every new environment). Unchecked: the artifacts are never edited after the build.
compile_for_runtime = if [ -n "$(PY_RUNTIME)" ]; then PYENV_VERSION=$(LAMBDA_PYTHON_VERSION) $(PY_RUNTIME) -m compileall -q -j 0 --invalidation-mode unchecked-hash $(1); fi

define copy_source
	mkdir -p $(ARTIFACTS_DIR)
	cp -r incident_responder handlers mcp $(ARTIFACTS_DIR)/
	rm -rf $(ARTIFACTS_DIR)/incident_responder/lab  # the lab never ships
	find $(ARTIFACTS_DIR) -name __pycache__ -type d -prune -exec rm -rf {} +
	$(call compile_for_runtime,$(ARTIFACTS_DIR))
endef

build-IngestFunction build-InvestigateFunction build-ProposeFunction build-DiagnosticsMcpFunction build-RemediationMcpFunction build-ReconcileFunction build-SweepFunction build-ReportFunction build-ReviewFunction build-ApprovalRequestFunction build-ApprovalEndpointFunction build-RemediateFunction build-VerifyFunction:
	$(copy_source)

build-DependenciesLayer:
	$(PYTHON) scripts/build_layers.py dependencies $(ARTIFACTS_DIR)/python
	$(call compile_for_runtime,$(ARTIFACTS_DIR)/python)

# Only attached when ModelBaseUrl is set; built to fit the layer above (same versions, no duplicates).
build-OpenAiCompatibleLayer:
	$(PYTHON) scripts/build_layers.py openai $(ARTIFACTS_DIR)/python
	$(call compile_for_runtime,$(ARTIFACTS_DIR)/python)
