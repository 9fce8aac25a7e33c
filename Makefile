# Two commands on a fresh machine: `make run` (demo server) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell md5sum pyproject.toml | cut -c1-12)

# The demo server's port: make run PORT=8765 when 8000 is taken.
PORT ?= 8000

.PHONY: install run test bench eval replay-locomo security backup-check ops-check partition-check fuzz probes load faults scale bench-cpu clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else "Python 3.12+ is needed (with pyenv, .python-version selects 3.12; or run: make PYTHON=python3.12 ...)")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py collectstatic --noinput -v0
	$(PY) manage.py seed_demo --port $(PORT)
	$(PY) manage.py runserver 127.0.0.1:$(PORT)

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	benchmarks/bench.sh

eval: $(STAMP)
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py evaluate locomo --json var/eval-locomo.json
	$(PY) manage.py evaluate madial --json var/eval-madial.json
	$(PY) manage.py evaluate madial --semantic --json var/eval-madial-semantic.json

replay-locomo: $(STAMP)
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py replay locomo/locomo5.json --conversation conv-26 --team demo

# docs/reliability/limits-security.md: check --deploy, rate limits (429, Retry-After), headers, keys in logs.
security: $(STAMP)
	$(PY) benchmarks/security.py

# Backup and restore on PostgreSQL, with identical context calls afterwards (docs/deploy.md).
backup-check: $(STAMP)
	deploy/backup-check.sh

# gunicorn, a Celery worker with beat, PostgreSQL and Redis for real: health states, metrics, logs.
ops-check: $(STAMP)
	$(PY) deploy/ops_check.py

# partition_retrievals --apply on a scratch PostgreSQL database while a writer inserts, scrubs and deletes.
partition-check: $(STAMP)
	$(PY) deploy/partition_check.py

# The figures of docs/reliability/fuzzing.md: 10,000+ fuzzed requests (var/fuzz-report.json), then the probes.
fuzz: $(STAMP)
	MEMORY_FUZZ_EXAMPLES=50 MEMORY_FUZZ_MIN_REQUESTS=10000 MEMORY_FUZZ_VERBOSE=40 MEMORY_FUZZ_REPORT=var/fuzz-report.json \
		$(PY) -m pytest -q -s -p no:randomly tests/fuzz/test_fuzz_api.py
	$(MAKE) --no-print-directory probes

probes: $(STAMP)
	$(PY) -m pytest -q -s -p no:randomly tests/test_isolation_probes.py

# docs/reliability/faults-load.md: 50 agents (locust) against gunicorn, PostgreSQL, Redis and a Celery worker.
load: $(STAMP)
	$(PY) benchmarks/load.py

# The same stack under load: PostgreSQL stopped, Redis stopped, the worker SIGKILLed mid-job.
faults: $(STAMP)
	$(PY) benchmarks/faults.py

# docs/performance.md: one team at 1M nodes and 1M messages, 1,000 teams of 1k nodes, EXPLAIN plans.
# PostgreSQL only (DATABASE_URL names the server; the database memory_scale is recreated).
# SCALE_ARGS=--reuse measures again without reloading; SCALE_ARGS=--quick is a one-minute smoke run.
scale: $(STAMP)
	$(PY) benchmarks/scale.py $(SCALE_ARGS)

# CPU per context call and per phase, on the PostgreSQL store `make bench` seeded (memory_bench).
bench-cpu: $(STAMP)
	$(PY) benchmarks/context_cpu.py $(CPU_ARGS)

clean:
	rm -rf $(VENV) var staticfiles
