# the two commands of the README: `make run` and `make test`, each installing what it needs
PYTHON ?= python3

.PHONY: run test install install-dev system-packages lint bench bench-quick class

run: install
	$(PYTHON) app.py

test: install-dev system-packages
	$(PYTHON) -m pytest -n 2 --dist loadgroup --durations=15

install:
	$(PYTHON) -m pip install -q -r requirements.txt

install-dev:
	$(PYTHON) -m pip install -q -r requirements-dev.txt

# system programs from Debian's packages, installed in one apt-get run when missing: chromium for the browser
# tests, haproxy and redis-server for `make class` and its tests, npm for the tests' virtual screen reader
# (tests/screenreader.py fetches it); installing needs root (CI and Spaces builders are)
SYSTEM_PACKAGES = chromium haproxy redis-server npm
MISSING = $(strip $(foreach p,$(SYSTEM_PACKAGES),$(if $(shell command -v $(p) 2>/dev/null || ls /usr/bin/$(p) /usr/sbin/$(p) 2>/dev/null),,$(p))))
system-packages:
	@[ -z "$(MISSING)" ] || \
	  { if [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(MISSING); \
	    else echo "missing: $(MISSING); install with 'sudo apt-get install $(MISSING)'"; fi; }

lint:
	$(PYTHON) -m ruff check .

# every performance target in one table (about 15 minutes); bench-quick is a rough pass (about 8 minutes)
bench: install-dev system-packages
	$(PYTHON) -m bench.run

bench-quick: install-dev system-packages
	$(PYTHON) -m bench.run --quick

# a class on one machine: one app process per core behind HAProxy, with Redis (both installed when missing and
# run as root), under supervisord; WORKERS=4 PORT=8000 make class to change them
WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
PORT ?= 7860
class: install
	@$(MAKE) --no-print-directory system-packages SYSTEM_PACKAGES="haproxy redis-server"
	$(PYTHON) deploy/serve.py --workers $(WORKERS) --port $(PORT)
