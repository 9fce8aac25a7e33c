#!/usr/bin/env python
"""What the team synonym lexicon costs a context call (seed 004 BusinessLexicon; docs/retrieval.md).

    DATABASE_URL=… python benchmarks/lexicon_cost.py [--nodes 500] [--messages 2000] [--calls 300]
                                                     [--lexicon cilin|FILE]

Seeds a fresh team (deleted afterwards) through the services, then times context calls
(memory.selectors.context.context_build, no HTTP) over the same queries in three phases: no
lexicon, the lexicon loaded (default cilin: ~9,000 sets; needs the 'lexicon' extra), no
lexicon again (the drift of the machine between phases); and paired, call by call, against
the selectors without the expansion code (as before the lexicon), for a team without a
lexicon and with it. It also times lexicon_expand alone
(its one aggregate query and the matching). Prints p50 / mean in milliseconds and the load
average. It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django_scopes import scope, scopes_disabled  # noqa: E402

from accounts.models import Team  # noqa: E402
from accounts.principal import principal_for_key  # noqa: E402
from accounts.services import agent_key_create, team_create  # noqa: E402
from memory.lexicon_models import LexiconSet  # noqa: E402
from memory.search.text import query_token_weights, query_tokens  # noqa: E402
from memory.search.thesauri import thesaurus_sets  # noqa: E402
from memory.selectors import messages as messages_selector  # noqa: E402
from memory.selectors import query as query_selector  # noqa: E402
from memory.selectors.budget import budget_resolve  # noqa: E402
from memory.selectors.context import context_build  # noqa: E402
from memory.selectors.context_gather import ContextRequest  # noqa: E402
from memory.selectors.lexicon import lexicon_expand  # noqa: E402
from memory.selectors.nodes import Owner  # noqa: E402
from memory.services.lexicon import lexicon_load  # noqa: E402
from memory.services.messages import MessageInput, messages_append  # noqa: E402
from memory.services.node_input import NodeInput  # noqa: E402
from memory.services.nodes import node_create  # noqa: E402
from memory.services.sessions import SessionRef  # noqa: E402

WORDS_ZH = ("过敏 敏感 花粉 登山 爬山 周末 电影 音乐 旅行 工作 同事 考试 学习 医院 感冒 咖啡 早饭 晚饭 朋友 家人 高兴 "
            "难过 担心 计划 会议").split()
WORDS_EN = "allergy pollen hiking weekend movie music travel work colleague exam study hospital cold coffee dinner " \
           "friend family happy sad worried plan meeting garden dog cat".split()


def sentence(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "我" + "".join(rng.sample(WORDS_ZH, 4)) + "。"
    return "I " + " ".join(rng.sample(WORDS_EN, 5)) + "."


def timed(calls, run) -> list[float]:
    times = []
    for call in calls:
        started = time.perf_counter()
        run(call)
        times.append((time.perf_counter() - started) * 1000)
    return times


def summary(name: str, times: list[float]) -> str:
    return f"{name:<34} p50 {statistics.median(times):7.2f} ms   mean {statistics.fmean(times):7.2f} ms   n {len(times)}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--lexicon", default="cilin")
    args = parser.parse_args()
    rng = random.Random(7)
    team = team_create(slug=f"lexbench-{time.time_ns()}", name="lexicon cost")
    principal = principal_for_key(agent_key_create(team=team, name="bench", kind="admin")[0])
    try:
        with scope(team=team):
            for _ in range(args.nodes):
                node_create(principal=principal, data=NodeInput(scope="user", type="fact", user_id="u1",
                                                                workspace_id="w1", title=sentence(rng)[:200]))
            for start in range(0, args.messages, 100):
                ref = SessionRef(session_id=f"s{start // 100}", workspace_id="w1", user_id="u1")
                messages_append(principal=principal, messages=[
                    MessageInput(session=ref, role="user", content=sentence(rng)) for _ in range(100)])
            queries = [sentence(rng) for _ in range(args.calls)]
            budget = budget_resolve(team=team, workspace_id="w1")

            def context(query: str) -> None:
                context_build(principal=principal, request=ContextRequest(
                    owner=Owner(workspace_id="w1", user_id="u1", session_id="new"), query=query),
                    budget=budget, record=False)

            def expand(query: str) -> None:
                lexicon_expand(team_id=team.pk, workspace_id="w1", tokens=query_tokens(query),
                               token_weights=query_token_weights(query))

            timed(queries[:30], context)  # warm-up
            before = timed(queries, context)
            expand_none = timed(queries, expand)
            paired_empty = []
            for query in queries:
                with without_expansion():
                    off = timed([query], context)[0]
                paired_empty.append((off, timed([query], context)[0]))
            report = lexicon_load(principal=principal, sets=thesaurus_sets(args.lexicon), source=args.lexicon)
            expand(queries[0])  # the first call after a change reads and compiles the sets
            with_lexicon = timed(queries, context)
            expand_with = timed(queries, expand)
            # Paired, call by call: the same query without the expansion code at all (as before
            # the lexicon existed) and with the lexicon, alternating, so the machine's drift
            # under other load hits both alike.
            paired = []
            for query in queries:
                with without_expansion():
                    off = timed([query], context)[0]
                on = timed([query], context)[0]
                paired.append((off, on))
            LexiconSet.objects.filter(team=team).delete()
            after = timed(queries, context)
        print(f"{connection_vendor()}; {args.nodes} nodes, {args.messages} messages; lexicon {args.lexicon}: "
              f"{report.created} sets")
        print(summary("context, no lexicon", before))
        print(summary(f"context, lexicon {args.lexicon}", with_lexicon))
        print(summary("context, no lexicon again", after))
        print(f"{'paired, no lexicon (on - off)':<34} p50 "
              f"{statistics.median(b - a for a, b in paired_empty):7.2f} ms  (the version reads alone)")
        off, on = [item[0] for item in paired], [item[1] for item in paired]
        print(summary("paired: without expansion code", off))
        print(summary(f"paired: with lexicon {args.lexicon}", on))
        print(f"{'paired difference (on - off)':<34} p50 {statistics.median(b - a for a, b in paired):7.2f} ms")
        print(summary("lexicon_expand alone, none", expand_none))
        print(summary(f"lexicon_expand alone, {args.lexicon}", expand_with))
        print("load average (1, 5, 15 min):", " ".join(f"{value:.2f}" for value in os.getloadavg()))
    finally:
        with scopes_disabled():
            Team.objects.filter(pk=team.pk).delete()


@contextmanager
def without_expansion():
    """The selectors as they were before the lexicon: no expansion, no version read."""
    def passthrough(*, team_id, workspace_id, tokens, token_weights):
        return list(tokens), token_weights

    saved = query_selector.lexicon_expand, messages_selector.lexicon_expand
    query_selector.lexicon_expand = messages_selector.lexicon_expand = passthrough
    try:
        yield
    finally:
        query_selector.lexicon_expand, messages_selector.lexicon_expand = saved


def connection_vendor() -> str:
    from django.db import connection

    return connection.vendor


if __name__ == "__main__":
    main()
