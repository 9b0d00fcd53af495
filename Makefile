# Two commands do all set-up on a fresh machine: `make serve` and `make test` (see README.md).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint typecheck contracts unit golden browser-deps compose-check docs screenshots

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,postgres]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/kss serve

browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	  || echo "warning: could not install chromium; browser tests will be skipped"; }

lint: $(STAMP)
	$(BIN)/ruff check kss_sim syncer kss tests bench migrations examples tools setup.py
	$(BIN)/ruff format --check kss_sim syncer kss tests bench migrations examples tools

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

# The store, results and durability tests run on SQLite and on a throwaway PostgreSQL (.ci/postgres.sh
# installs Debian's postgresql when missing); KSS_TEST_POSTGRES_URL set by the caller is used as is.
# Bytecode written once (1.3 s) rather than compiled at each of the suite's process starts (~0.5 s a server) where
# PYTHONDONTWRITEBYTECODE keeps Python from caching it.
unit: $(STAMP)
	@$(BIN)/python -m compileall -q kss_sim syncer kss >/dev/null
	@if [ -n "$$KSS_TEST_POSTGRES_URL" ]; then $(BIN)/pytest -q; exit $$?; fi; \
	pg_dir=$$(mktemp -d /tmp/kss-pg.XXXXXX); \
	pg_url=$$(.ci/postgres.sh start "$$pg_dir") || { echo "make: PostgreSQL could not be started" >&2; exit 1; }; \
	KSS_TEST_POSTGRES_URL="$$pg_url" $(BIN)/pytest -q; status=$$?; \
	.ci/postgres.sh stop "$$pg_dir"; exit $$status

# `docker compose config` validates docker-compose.yml without a Docker engine; Debian's docker-compose
# (v1, same file format) stands in where the compose plugin is missing.
compose-check:
	@if docker compose version >/dev/null 2>&1; then docker compose config -q; \
	else command -v docker-compose >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null) || true; \
	  if command -v docker-compose >/dev/null 2>&1; then docker-compose config -q; \
	  else echo "warning: neither docker compose nor docker-compose available; tests/operations/test_compose.py checks the file"; fi; \
	fi
	@echo "docker-compose.yml: valid"

# The golden corpus (kube-scheduler's own results) is not in the repository: it sits beside the clone in ../shared.
# Its expected files are kube-scheduler v1.35.4's, so it runs at 1.35 whatever the default version is.
golden: $(STAMP)
	@test -f ../shared/golden/compare.py || { echo "make golden: needs the golden corpus in ../shared/golden (beside the clone; README.md, Offline runs)" >&2; exit 2; }
	KSS_SIMULATE="$(BIN)/kss simulate --kube-version 1.35" $(BIN)/python ../shared/golden/compare.py --show 0

# The docs site (mkdocs.yml): README, docs/ and the plugin API from kss.framework's docstrings; a broken link or
# reference fails the build (strict). Opens at build/site/index.html.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The docs site's screenshots (tools/docs_site.py's SCREENSHOTS, committed in docs/screenshots/ so that `make docs`
# needs neither Chromium nor a test run) taken again by the browser tests, with the digest of what draws them
# (tests/test_docs_site.py fails once the web UI changed since).
screenshots: $(STAMP) browser-deps
	$(BIN)/pytest -q -m browser tests/web
	$(BIN)/python -m tools.docs_site --screenshots

test: $(STAMP) browser-deps lint typecheck contracts compose-check docs unit
