# One command opens the course, one runs the tests; both do their own set-up.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8888
STAMP  := $(VENV)/.installed

.PHONY: lab test lines setup dot browser clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,notebook]"
	touch $(STAMP)

# The frontend tests need torch and onnx, the CUDA tests NVRTC, the Dask tests (a real
# LocalCluster) dask.distributed; only `make test` installs them (`make lab` stays lean).
FRONTENDS := $(VENV)/.frontends
$(FRONTENDS): $(STAMP)
	$(PY) -m pip install --quiet -e ".[frontends,gpu,distributed]"
	touch $(FRONTENDS)

setup: $(STAMP) dot

dot:
	@if command -v dot >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing graphviz (the dot binary) with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null; \
	else \
		echo "graphviz's 'dot' is missing: install it (Debian/Ubuntu: sudo apt-get install graphviz;"; \
		echo "macOS: brew install graphviz; conda: conda install -c conda-forge graphviz)."; \
		echo "Drawings fall back to DOT text until then."; \
	fi

# tests/browser drives JupyterLab in Debian's Chromium; never `playwright install` (no downloads).
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium (for tests/browser) with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "chromium is missing, so tests/browser is skipped (Debian: sudo apt-get install chromium)."; \
	fi

# Optional pieces (graphviz's dot) never stop the course: a failed install is a warning.
# The server's own log is kept to warnings; the last line printed is the URL with its token.
lab: $(STAMP)
	@$(MAKE) --no-print-directory dot || echo "warning: graphviz's dot could not be installed \
	(another apt-get running?); drawings show as DOT text until 'make dot' succeeds"
	@if $(PY) -c "import socket; socket.create_connection(('127.0.0.1', $(PORT)), 1)" \
		2>/dev/null; then echo "port $(PORT) is taken (another Jupyter?): try \
	make lab PORT=8890"; exit 1; fi
	@TOKEN=$$($(PY) -c "import secrets; print(secrets.token_hex(16))"); \
	URL="http://127.0.0.1:$(PORT)/lab/tree/student?token=$$TOKEN"; \
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks --LabApp.default_url=/lab/tree/student \
		--port=$(PORT) --ServerApp.port_retries=0 --ip=0.0.0.0 --no-browser \
		--IdentityProvider.token=$$TOKEN --ServerApp.log_level=WARN \
		$$( [ "$$(id -u)" = "0" ] && echo --allow-root ) & PID=$$!; \
	trap 'kill $$PID 2>/dev/null; wait $$PID; echo "JupyterLab stopped"; exit 0' INT TERM; \
	for i in $$(seq 1 60); do \
		$(PY) -c "import socket; socket.create_connection(('127.0.0.1', $(PORT)), 1)" \
			2>/dev/null && break; \
		kill -0 $$PID 2>/dev/null || { echo "JupyterLab did not start (see above)"; \
		exit 1; }; sleep 1; done; \
	if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ] && command -v xdg-open >/dev/null 2>&1; then \
		xdg-open "$$URL" >/dev/null 2>&1 || true; \
	elif [ "$$(uname)" = "Darwin" ]; then open "$$URL" || true; fi; \
	echo "The course is open at $$URL  (press Ctrl-C to stop)"; \
	wait $$PID

# Tests marked `timing` (speed-grading decisions) run alone, after the parallel run.
test: setup browser $(FRONTENDS)
	$(PY) -m pytest -q -n 2 -m "not timing" tests
	$(PY) -m pytest -q -m timing tests

# the line budget: core lines per folder of mlc/ (also printed at the end of every test run)
lines:
	$$( [ -x $(PY) ] && echo $(PY) || echo $(PYTHON) ) tests/test_layering.py

# Thousands of random te programs and mutated traces (tests/fuzz), each program in a worker
# process; FUZZ_EXAMPLES sets how many, and each run draws new ones.
FUZZ_EXAMPLES ?= 5000
fuzz: setup
	MLC_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) MLC_FUZZ_RANDOM=1 $(PY) -m pytest -q -s tests/fuzz

clean:
	rm -rf $(VENV) build *.egg-info
