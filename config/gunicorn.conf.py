"""gunicorn settings for the web machines (docs/deploy.md): `gunicorn -c config/gunicorn.conf.py`.

Every value comes from the environment, with defaults for a small 2-core machine. The web
processes are stateless: the database is the one source of truth, so any number of them, on
any number of machines, can serve behind one load balancer.
"""

import multiprocessing
import os
from pathlib import Path

wsgi_app = "config.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# Synchronous workers: a request holds one process and one database connection while it runs.
workers = int(os.environ.get("WEB_CONCURRENCY", str(multiprocessing.cpu_count() * 2 + 1)))
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
# Recycle workers now and then, staggered, so slow growth in one process never adds up.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "2000"))
max_requests_jitter = int(os.environ.get("GUNICORN_MAX_REQUESTS_JITTER", "200"))
# One log line per request comes from the application (memory.ops.middleware, with the
# request id, team and principal); gunicorn's access log would only repeat it.
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
# Behind a reverse proxy: trust its X-Forwarded-* headers only from these addresses.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
proc_name = "memory-web"


def on_starting(server):
    """Empty the Prometheus multiprocess directory: files of processes from an earlier run
    would otherwise be summed into this run's counters."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):  # only prometheus_client's files, whatever the directory is
            stale.unlink()


def child_exit(server, worker):
    """A recycled or crashed worker's live gauges must not be reported any more."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
