# Two commands do all set-up on a fresh machine: `make serve` and `make test` (see README.md).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint typecheck contracts unit golden browser-deps

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/kss serve

browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
	  || echo "warning: could not install chromium; browser tests will be skipped"; }

lint: $(STAMP)
	$(BIN)/ruff check app syncer tests bench migrations
	$(BIN)/ruff format --check app syncer tests bench migrations

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest -q

golden: $(STAMP)
	KSS_SIMULATE="$(BIN)/kss simulate" $(BIN)/python ../shared/golden/compare.py --show 0

test: $(STAMP) browser-deps lint typecheck contracts unit
