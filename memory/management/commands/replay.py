"""Play a conversation through the HTTP API exactly as an agent would (R-API, issue: the spine).

Messages are appended in order; before each assistant turn the agent asks for the memory
context with the last user message as the query, and the injected block is printed. Memory
writes listed in the file (the simple format) go through /api/v1/memory/propose, bound to
the message they came from.

Formats:
- LoCoMo (a JSON list of samples with "conversation" and "sample_id"): speaker A's turns
  are role "user", speaker B's "assistant"; one end user per speaker pair (user_id = the
  sample id), one session per LoCoMo session, occurred_at from the session's date.
- Simple: {"workspace_id", "user_id", "session_id", "turns": [{"role", "content",
  "memory": [proposal, …]}]}; a proposal may name its target by {"type", "key", "value_json"}.
- MADial-Bench dialogues (JSON Lines, one {"dialogue": ["<Bart>:\"…\"", "<Assistant>:\"…\"", …],
  "id"} a line, e.g. madial_zh/dialogue-user1.jsonl): one dialogue (--conversation: its id or
  index; default the first) in a session of its own; the end user is named after the speaker.

Without --url the requests go to this process's WSGI application over httpx (the full
Django request path: middleware, authentication, parsing); with --url, to a running server.
"""

import json
import logging
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.models import Team
from accounts.services import agent_key_create, agent_key_revoke
from memory.evaluation import datasets


def locomo_turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation as a flat list of turns in the simple format's shape."""
    return [{"session_id": turn.session_id, "role": turn.role, "content": turn.content,
             "occurred_at": turn.occurred_at.isoformat(), "metadata": {"speaker": turn.speaker, "dia_id": turn.dia_id}}
            for turn in datasets.locomo_turns(sample)]


class Command(BaseCommand):
    help = "Replay a conversation (LoCoMo, MADial-Bench or the simple JSON format) through the agent HTTP API."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="a JSON file, or a path under the shared data folder "
                                                    "(MEMORY_SHARED_DATA, default ../shared/data), e.g. locomo/locomo5.json")
        parser.add_argument("--conversation", help="LoCoMo sample id (e.g. conv-26) or index; default: the first")
        parser.add_argument("--url", help="base URL of a running server; default: in-process")
        parser.add_argument("--key", help="agent key; default: a temporary key of --team, revoked afterwards")
        parser.add_argument("--team", default="demo")
        parser.add_argument("--workspace", default="locomo", help="workspace_id for LoCoMo conversations")
        parser.add_argument("--quiet", action="store_true", help="print only the totals")
        parser.add_argument("--max-turns", type=int, default=0)

    def handle(self, *args, **options):
        path: Path = options["file"]
        if not path.exists() and (Path(settings.SHARED_DATA_DIR) / path).exists():
            path = Path(settings.SHARED_DATA_DIR) / path  # e.g. locomo/locomo5.json
        if not path.exists():
            raise CommandError(f"no such file: {path} (nor under the shared data folder {settings.SHARED_DATA_DIR})")
        data = _read(path)
        _format(data)  # before a key is made
        temporary = None
        key = options["key"]
        if not key:
            team = Team.objects.filter(slug=options["team"]).first()
            if team is None:
                raise CommandError(f"no team {options['team']!r}; create it or pass --key")
            temporary, key = agent_key_create(team=team, name="replay")
        if not options["url"]:
            # In-process, every request would also print its request log line (memory.ops.middleware).
            logging.getLogger("memory.request").setLevel(logging.WARNING)
        try:
            with self._client(options["url"], key) as client:
                self.client = client
                self.quiet = options["quiet"]
                self.latencies: list[float] = []
                self.injected: list[int] = []
                kind = _format(data)
                if kind == "madial":
                    turns, identity = self._madial(data, options)
                    self._play(turns, identity, max_turns=options["max_turns"])
                elif kind == "locomo":
                    turns, identity = self._locomo(data, options)
                    self._play(turns, identity, max_turns=options["max_turns"])
                else:
                    identity = {name: data.get(name, "") for name in ("workspace_id", "user_id", "session_id")}
                    self._play(data["turns"], identity, max_turns=options["max_turns"])
        finally:
            if temporary is not None:
                agent_key_revoke(key=temporary)
        calls = len(self.latencies)
        if calls:
            self.stdout.write(
                f"replayed: {self.turns} turns, {calls} context calls; injected characters mean "
                f"{statistics.mean(self.injected):.0f}, max {max(self.injected)}; context latency p50 "
                f"{statistics.median(self.latencies):.1f} ms, max {max(self.latencies):.1f} ms"
            )

    def _client(self, url: str | None, key: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"}
        if url:
            return httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=60)
        from django.core.wsgi import get_wsgi_application

        return httpx.Client(transport=httpx.WSGITransport(app=get_wsgi_application()),
                            base_url="http://testserver", headers=headers, timeout=60)

    def _madial(self, dialogues: list[dict[str, Any]], options) -> tuple[list[dict[str, Any]], dict[str, str]]:
        wanted = options["conversation"]
        chosen = dialogues[0]
        if wanted is not None:
            matches = [item for item in dialogues if str(item.get("id")) == wanted]
            if not matches and wanted.isdigit() and int(wanted) < len(dialogues):
                matches = [dialogues[int(wanted)]]
            if not matches:
                raise CommandError(f"no dialogue {wanted!r}; ids {[item.get('id') for item in dialogues[:20]]} …")
            chosen = matches[0]
        turns, speaker = [], "user"
        for turn in filter(None, map(datasets.madial_turn, chosen["dialogue"])):  # <BOD>, <EOD> say nothing
            if turn[0].lower() == "assistant":
                turns.append({"role": "assistant", "content": turn[1]})
            else:
                speaker = turn[0]
                turns.append({"role": "user", "content": turn[1]})
        identity = {"workspace_id": options["workspace"], "user_id": speaker.lower(),
                    "session_id": f"madial-{chosen.get('id', 0)}"}
        return turns, identity

    def _locomo(self, samples: list[dict[str, Any]], options) -> tuple[list[dict[str, Any]], dict[str, str]]:
        wanted = options["conversation"]
        if wanted is None:
            sample = samples[0]
        elif wanted.isdigit():
            sample = samples[int(wanted)]
        else:
            matches = [item for item in samples if item.get("sample_id") == wanted]
            if not matches:
                raise CommandError(f"no conversation {wanted!r}; have {[s.get('sample_id') for s in samples]}")
            sample = matches[0]
        return locomo_turns(sample), {"workspace_id": options["workspace"], "user_id": sample["sample_id"]}

    def _call(self, method: str, path: str, body: dict[str, Any], *, tolerate: tuple[int, ...] = ()) -> dict[str, Any]:
        response = self.client.request(method, path, json=body)
        if response.status_code >= 400 and response.status_code not in tolerate:
            raise CommandError(f"{method} {path} → {response.status_code}: {response.text[:500]}")
        return response.json()

    def _play(self, turns: list[dict[str, Any]], identity: dict[str, str], *, max_turns: int) -> None:
        last_user = ""
        self.turns = 0
        for turn in turns[: max_turns or None]:
            ids = {**identity, "session_id": turn.get("session_id", identity.get("session_id", ""))}
            if turn["role"] == "assistant":
                self._context(ids, turn.get("query", last_user))
            message = {**ids, "role": turn["role"], "content": turn["content"]}
            for optional in ("occurred_at", "metadata"):
                if optional in turn:
                    message[optional] = turn[optional]
            message_id = self._call("POST", "/api/v1/messages", message)["ids"][0]
            self.turns += 1
            if not self.quiet:
                self.stdout.write(f"{turn['role']:>9}: {turn['content']}")
            if turn["role"] == "user":
                last_user = turn["content"]
            for proposal in turn.get("memory", []):
                self._propose(ids, proposal, message_id)

    def _context(self, ids: dict[str, str], query: str) -> None:
        started = time.perf_counter()
        context = self._call("POST", "/api/v1/context", {**ids, "query": query})
        self.latencies.append((time.perf_counter() - started) * 1000)
        self.injected.append(len(context["block"]))
        if not self.quiet:
            diagnostics = context["diagnostics"]
            self.stdout.write(self.style.HTTP_INFO(
                f"  ── context for {query!r}: {diagnostics['total_chars']} characters, "
                f"{len(context['used_memory_ids'])} memories, retrieval {context['retrieval_id']}"
            ))
            for line in context["block"].splitlines():
                self.stdout.write(f"  │ {line}")

    def _propose(self, ids: dict[str, str], proposal: dict[str, Any], message_id: int) -> None:
        body = {**ids, **{k: v for k, v in proposal.items() if k != "target"}}
        body["node"] = {**proposal.get("node", {}), "source_message_ids": [message_id]}
        if "target" in proposal:
            # A target already superseded (a second replay of the same file) is reported, not fatal.
            target = self._call("POST", "/api/v1/memory/get", {**ids, **proposal["target"]}, tolerate=(404,))
            if "error" in target:
                self.stdout.write(f"  ── memory {proposal['operation']}: skipped, {target['error']['message']}")
                return
            body["target_id"] = target["id"]
        result = self._call("POST", "/api/v1/memory/propose", body, tolerate=(409,))
        if "error" in result:
            self.stdout.write(f"  ── memory {proposal['operation']}: not applied, {result['error']['message']}")
            return
        if not self.quiet:
            outcome = "accepted" if result["accepted"] else f"refused ({result['reason']})"
            self.stdout.write(self.style.SUCCESS(
                f"  ── memory {proposal['operation']}: {outcome}, node {result['node_id']}: "
                f"{(result.get('node') or {}).get('title', '')}"
            ))


def _read(path: Path) -> Any:
    """The file's JSON, or its JSON Lines as a list. Raises CommandError for anything else."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"cannot read {path}: {error}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise CommandError(f"{path} is neither JSON nor JSON Lines ({error}); see `replay --help` for the formats") from None


def _format(data: Any) -> str:
    """"madial", "locomo" or "simple" (see the module doc). Raises CommandError for another shape."""
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        if isinstance(data[0].get("dialogue"), list):
            return "madial"
        if isinstance(data[0].get("conversation"), dict):
            return "locomo"
    if isinstance(data, dict) and isinstance(data.get("turns"), list):
        return "simple"
    raise CommandError("not a conversation this command reads: LoCoMo samples, MADial-Bench dialogues (JSON Lines) "
                       'or {"turns": [...]} (see `replay --help`)')
