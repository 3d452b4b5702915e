# Two commands an operator needs first: `make demo` and `make test`.
# Debian's interpreter, not a per-user one (pyenv under /root): Apache runs the
# CGIs as www-data, which must be able to execute the venv's python.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
VENV   ?= .venv

.PHONY: venv demo test test-fast bench

# boincpy installed editable in setuptools' default mode: setup.cfg's
# package_dir makes it a .pth naming the source tree (no import hook to load
# at each start); the CGIs, started as python -S, have that path written in
# by make_project (server_mode.cgi_paths, which also finds an import hook's).
# The stamp follows setup.cfg: a venv made before a dependency was added
# (pytest-xdist for `make test`) gets it at the next make.
$(VENV)/.installed: setup.cfg
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

# Install what is missing (MariaDB, Apache, BOINC client, headers), then create
# a demo project with its database, keys, app and jobs.
demo:
	sh tools/setup_system.sh
	$(MAKE) venv
	$(VENV)/bin/python -m boincpy.tools.demo

# The suite in parallel workers, a test file per worker at a time (its
# module-scoped projects and servers made once), the longest files first
# (tests/conftest.py, LONGEST_FIRST): most of its time is spent
# waiting on stock clients, daemons and Apache, not on the CPU (serially the
# load average stayed under 1 on two cores).  TEST_WORKERS=0 runs it serially.
TEST_WORKERS ?= 3
PYTEST_PARALLEL = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

test: venv
	$(VENV)/bin/python -m pytest -q $(PYTEST_PARALLEL) tests

# Day-to-day: everything but the tests marked slow (stock client, Apache end
# to end, browser, fault run); `make test` runs them all, as CI does.
test-fast: venv
	$(VENV)/bin/python -m pytest -q $(PYTEST_PARALLEL) -m 'not slow' tests

bench: venv
	$(VENV)/bin/python bench/bench_create_work.py
	$(VENV)/bin/python bench/bench_choose.py
	$(VENV)/bin/python bench/bench_backend.py
	$(VENV)/bin/python bench/bench_validate_assimilate.py
	$(VENV)/bin/python bench/bench_sched.py
	$(VENV)/bin/python bench/bench_upload.py
	$(VENV)/bin/python bench/bench_web_rpc.py
	$(VENV)/bin/python bench/bench_ops_pages.py
	$(VENV)/bin/python bench/bench_tasks.py
