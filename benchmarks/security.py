"""`make security`: the figures of docs/reliability/limits-security.md, measured afresh.

1. `manage.py check --deploy` under production settings (DEBUG off, SECRET_KEY, ALLOWED_HOSTS),
   with TLS=true and without: the number of issues and their ids.
2. gunicorn (2 workers, DEBUG off, LOG_LEVEL=DEBUG) on a scratch SQLite database, with small
   rates (key 30/min, refused credentials 10/min, login 5/min): how many sequential requests
   pass before 429, the Retry-After and error code of the first 429 — with the counters in
   Redis (CACHE_URL, shared by the workers) and in each worker's memory (no CACHE_URL).
   The server runs with TLS=true behind a pretend proxy (X-Forwarded-Proto: https).
3. The security headers and cookie flags of the login page, plain HTTP redirected (/healthz
   not), and how often the agent key appears in the server's DEBUG log (it must be 0).

Prints a Markdown report and writes var/security.json. Needs Redis at SECURITY_REDIS_URL
(default redis://127.0.0.1:6379/9); counters go under a fresh CACHE_KEY_PREFIX per run.
"""

import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import Server  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RATES = {"MEMORY_RATE_KEY": "30/min", "MEMORY_RATE_ANON": "10/min", "MEMORY_RATE_LOGIN": "5/min"}


def production_env(scratch: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": f"sqlite:///{scratch / 'security.sqlite3'}", "MEMORY_VAR_DIR": str(scratch), **extra}


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def check_deploy(scratch: Path, tls: bool) -> dict:
    result = manage(production_env(scratch, TLS="true" if tls else "false"), "check", "--deploy")
    output = result.stdout + result.stderr
    return {"tls": tls, "issues": sorted(set(re.findall(r"\(([a-z_]+\.[WE]\d+)\)", output))),
            "summary": next((line for line in output.splitlines() if "System check identified" in line), output[-200:])}


def statuses(send, times: int) -> dict:
    codes, first = [], None
    for _ in range(times):
        response = send()
        codes.append(response.status_code)
        if response.status_code == 429 and first is None:
            first = response
    passed = next((index for index, code in enumerate(codes) if code == 429), len(codes))
    out = {"sent": times, "before_first_429": passed, "codes": {str(code): codes.count(code) for code in sorted(set(codes))}}
    if first is not None:
        out["retry_after"] = first.headers.get("Retry-After")
        if first.headers.get("content-type", "").startswith("application/json"):
            out["error_code"] = first.json()["error"]["code"]
    return out


def serve_and_measure(label: str, env: dict[str, str], raw_key: str) -> dict:
    """One gunicorn run behind a pretend TLS proxy (TLS=true, TLS_PROXY_HEADER=true: every
    request says X-Forwarded-Proto: https, except the two that measure plain HTTP)."""
    server = Server({**env, "TLS": "true", "TLS_PROXY_HEADER": "true"})
    try:
        base = server.base_url
        proxied = {"X-Forwarded-Proto": "https"}
        agent = httpx.Client(base_url=base, headers={**proxied, "Authorization": f"Bearer {raw_key}"}, timeout=30)
        stranger = httpx.Client(base_url=base, headers={**proxied, "Authorization": "Bearer mk_0000_guessed"},
                                timeout=30)
        key = statuses(lambda: agent.get("/api/v1/nodes"), 40)
        anon = statuses(lambda: stranger.get("/api/v1/nodes"), 15)
        browser = httpx.Client(base_url=base, headers=proxied, timeout=30)
        page = browser.get("/login")
        token = re.search(r"csrftoken=([^;]+)", page.headers["set-cookie"])[1]
        # A new username each time (password spraying): django-axes' per-username lockout stays out of it.
        names = iter(f"{label}-user-{n}" for n in range(100))
        https_login = "https://" + base.removeprefix("http://") + "/login"  # CSRF compares the Referer over HTTPS
        login = statuses(lambda: browser.post("/login", headers={"Cookie": f"csrftoken={token}", "Referer": https_login},
                                              data={"csrfmiddlewaretoken": token, "username": next(names),
                                                    "password": "wrong"}), 8)
        headers = {name: page.headers.get(name) for name in (
            "content-security-policy", "strict-transport-security", "x-frame-options", "x-content-type-options",
            "referrer-policy", "cross-origin-opener-policy", "set-cookie")}
        plain = httpx.get(base + "/login", timeout=30)
        plain_http = {"login": f"{plain.status_code} {plain.headers.get('location')}",
                      "healthz": httpx.get(base + "/healthz", timeout=30).status_code}
    finally:
        server.stop()
    log = server.log_path.read_text(errors="replace")
    return {"key": key, "anon": anon, "login": login, "headers": headers, "plain_http": plain_http,
            "log_lines": len(log.splitlines()), "key_in_log": log.count(raw_key),
            "secret_in_log": log.count(raw_key.split("_", 2)[2])}


def main() -> int:
    redis_url = os.environ.get("SECURITY_REDIS_URL", "redis://127.0.0.1:6379/9")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        report = {"check_deploy": [check_deploy(scratch, tls=True), check_deploy(scratch, tls=False)]}
        base = production_env(scratch, LOG_LEVEL="DEBUG", **RATES)
        for step in (("migrate", "--noinput", "-v0"), ("create_team", "sec", "--name", "Security"),
                     ("create_member", "sec", "secadmin", "--role", "admin", "--password", secrets.token_urlsafe(16))):
            done = manage(base, *step)
            if done.returncode:
                raise SystemExit(done.stderr)
        raw_key = manage(base, "create_agent_key", "sec", "--name", "security").stdout.strip().splitlines()[-1]
        for label, cache in (("redis", {"CACHE_URL": redis_url}), ("locmem", {})):
            env = {**base, **cache, "CACHE_KEY_PREFIX": f"security-{secrets.token_hex(4)}"}
            report[label] = serve_and_measure(label, env, raw_key)
    (ROOT / "var").mkdir(exist_ok=True)
    (ROOT / "var" / "security.json").write_text(json.dumps(report, indent=2))
    print_report(report)
    ok = (report["check_deploy"][0]["issues"] == [] and report["redis"]["key"]["before_first_429"] == 30
          and report["redis"]["key_in_log"] == 0 and report["locmem"]["key_in_log"] == 0)
    return 0 if ok else 1


def print_report(report: dict) -> None:
    print("| measure | figure |\n|---|---|")
    for run in report["check_deploy"]:
        print(f"| `check --deploy`, TLS={'true' if run['tls'] else 'false'} | {len(run['issues'])} issues "
              f"{', '.join(run['issues']) or ''} ({run['summary']}) |")
    for label in ("redis", "locmem"):
        run = report[label]
        for name, rate in (("key", RATES["MEMORY_RATE_KEY"]), ("anon", RATES["MEMORY_RATE_ANON"]),
                           ("login", RATES["MEMORY_RATE_LOGIN"])):
            got = run[name]
            first = (f"Retry-After {got['retry_after']} s, {got.get('error_code') or 'the login page'}"
                     if "retry_after" in got else "no 429: each worker counts alone")
            print(f"| {label}: {name} at {rate}, {got['sent']} sequential requests, 2 workers | "
                  f"{got['before_first_429']} before the first 429; codes {got['codes']}; {first} |")
        print(f"| {label}: raw key / its secret in {run['log_lines']} lines of DEBUG server log | "
              f"{run['key_in_log']} / {run['secret_in_log']} |")
    for name, value in report["redis"]["headers"].items():
        shown = re.sub(r"(csrftoken|expires)=[^;]+", r"\1=…", value or "")  # the token and date change each run
        print(f"| `{name}` on /login over HTTPS | `{shown}` |")
    plain = report["redis"]["plain_http"]
    print(f"| plain HTTP: /login, /healthz | {plain['login']}; {plain['healthz']} |")


if __name__ == "__main__":
    raise SystemExit(main())
