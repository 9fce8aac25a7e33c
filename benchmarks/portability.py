"""Time export and import (docs/export.md): the demo team (`seed_demo`) and a seeded team of
--nodes nodes, on a fresh database of its own (SQLite file var/portability.sqlite3, or the
PostgreSQL database named by DATABASE_URL, which is emptied first).

    .venv/bin/python benchmarks/portability.py [--nodes 10000] [--messages 10000]

Prints, per team: rows, file size, export seconds, import seconds (into a new team, command
path) and whether the import answers a sample of context calls like the source.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(HERE)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        path = ROOT / "var" / "portability.sqlite3"
        path.parent.mkdir(exist_ok=True)
        path.unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    if connection.vendor == "postgresql":
        call_command("flush", interactive=False, verbosity=0)
    call_command("migrate", verbosity=0)
    call_command("seed_demo", stdout=io.StringIO())
    print(f"database: {connection.vendor}")
    measure("demo")

    import seed
    from corpus import load_real_text

    pop = seed.create_population(load_real_text(), sessions=args.sessions)
    seed.seed_messages(pop, sessions=args.sessions, messages=args.messages, log=lambda text: None)
    seed.seed_nodes(pop, total=args.nodes, log=lambda text: None)
    measure("bench")
    return 0


def measure(slug: str) -> None:
    from django.core.management import call_command
    from django_scopes import scopes_disabled

    from memory.models import Message, Node

    with scopes_disabled():
        nodes, messages = Node.objects.filter(team__slug=slug).count(), Message.objects.filter(team__slug=slug).count()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{slug}.jsonl"
        started = time.perf_counter()
        call_command("export_memories", team=slug, output=path, stderr=io.StringIO())
        exported = time.perf_counter() - started
        started = time.perf_counter()
        call_command("import_memories", str(path), team=f"{slug}-copy", create=True, stdout=io.StringIO())
        imported = time.perf_counter() - started
        size = path.stat().st_size
    same = compare(slug, f"{slug}-copy")
    print(f"{slug}: {nodes} nodes, {messages} messages; file {size / 1e6:.2f} MB; export {exported:.2f} s; "
          f"import {imported:.2f} s; sample context calls identical: {same}")


def compare(source: str, copy: str) -> str:
    from django_scopes import scopes_disabled

    from accounts.models import Team
    from accounts.principal import system_principal
    from memory.models import Session
    from memory.selectors.context import ContextRequest, context_build
    from memory.selectors.nodes import Owner

    with scopes_disabled():
        owners = [Owner(workspace_id=s.workspace_id, user_id=s.user_id, session_id=s.external_id)
                  for s in Session.objects.filter(team__slug=source).order_by("pk")[:20]]
        answers = []
        for slug in (source, copy):
            principal = system_principal(Team.objects.get(slug=slug), "benchmark")
            answers.append([context_build(principal=principal, request=ContextRequest(owner=owner, query=query),
                                          record=False).block
                            for owner in owners for query in ("香菜", "deadline", "what did we decide")])
    return f"{sum(a == b for a, b in zip(*answers, strict=True))}/{len(answers[0])}"


if __name__ == "__main__":
    sys.exit(main())
