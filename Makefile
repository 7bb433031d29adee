# the two commands of the README: `make run` and `make test`, each installing what it needs
PYTHON ?= python3

.PHONY: run test install install-dev chromium lint bench bench-quick class

run: install
	$(PYTHON) app.py

test: install-dev chromium
	$(PYTHON) -m pytest

install:
	$(PYTHON) -m pip install -q -r requirements.txt

install-dev:
	$(PYTHON) -m pip install -q -r requirements-dev.txt

# browser tests drive Debian's chromium; installing it needs root (CI and Spaces builders are)
chromium:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || \
	  { if [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	    else echo "chromium is missing: install it with 'sudo apt-get install chromium' (browser tests skip locally without it)"; fi; }

lint:
	$(PYTHON) -m ruff check .

# every performance target in one table (10-15 minutes); bench-quick is a rough two-minute pass
bench: install-dev chromium
	$(PYTHON) bench/run.py

bench-quick: install-dev chromium
	$(PYTHON) bench/run.py --quick

# a class on one machine: one app process per core behind HAProxy (installed when missing and run as root);
# WORKERS=4 PORT=8000 make class to change them
WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
PORT ?= 7860
class: install
	$(PYTHON) deploy/serve.py --workers $(WORKERS) --port $(PORT)
