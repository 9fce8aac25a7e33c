"""Stored-XSS probes (issue 6 quality bar): markup planted in every field a user or an agent
can fill, made through the real services, and a check that a page renders it inert.

Shared by the test-client test (tests/dashboard/test_xss.py) and the browser test
(tests/browser/test_xss_browser.py).
"""

from dataclasses import dataclass
from html.parser import HTMLParser

from accounts.models import Team
from memory.models import Node, Session
from memory.services.messages import MessageInput, messages_append
from memory.services.nodes import NodeInput, node_create, node_expire, node_supersede, supersede_input
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
ATTR = "' onmouseover='alert(1)"
PAYLOADS = (SCRIPT, IMG, ATTR)
ALL = SCRIPT + IMG + ATTR
# The same payloads as the page source shows them once escaped.
ESCAPED = (
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;",
    "&#x27; onmouseover=&#x27;alert(1)",
)


@dataclass
class Planted:
    session: Session
    node: Node  # session scope, every field a payload, current version
    old: Node  # the version it superseded (chain, audit reason)
    workspace_node: Node
    user_node: Node


def plant(principal) -> Planted:
    """Store payloads in every user field: team name; workspace, user and session ids;
    message content; summary text, goal and lists; node title, content, tags, entities, key,
    value JSON (keys and values), domain, category path; audit reasons."""
    Team.objects.filter(pk=principal.team.pk).update(name=ALL)
    ref = SessionRef(session_id=IMG, workspace_id=SCRIPT, user_id=ATTR)
    messages = messages_append(principal=principal, messages=[
        MessageInput(session=ref, role=role, content=ALL) for role in ("user", "assistant")])
    summary_append(principal=principal, data=SummaryInput(
        session=ref, summary=ALL, current_goal=ALL, lists={name: list(PAYLOADS) for name in ("constraints", "decisions")}))
    fields = {
        "title": ALL, "content": ALL, "tags": list(PAYLOADS), "entities": list(PAYLOADS), "key": SCRIPT,
        "value_json": {SCRIPT: IMG, "attr": ATTR, "list": list(PAYLOADS)}, "domain": IMG[:64],
        "category_path": [IMG, ATTR],
    }
    old = node_create(principal=principal, data=NodeInput(
        scope="session", type="fact", session_id=IMG, workspace_id=SCRIPT, user_id=ATTR,
        source_message_ids=[message.pk for message in messages], **fields), reason=ALL)
    node = node_supersede(principal=principal, old_node_id=old.pk, reason=ALL,
                          data=supersede_input(old, {"value_json": {SCRIPT: ATTR}, **{name: fields[name] for name in (
                              "title", "content", "tags", "entities")}}, {}))  # (else the old value's words are renamed)
    workspace_node = node_create(principal=principal, data=NodeInput(
        scope="workspace", type="decision", workspace_id=SCRIPT, **{**fields, "key": ""}))
    user_node = node_create(principal=principal, data=NodeInput(
        scope="user", type="preference", user_id=ATTR, **{**fields, "key": "", "title": IMG}))
    node_expire(principal=principal, node_id=user_node.pk, reason=ALL)
    return Planted(Session.objects.get(pk=messages[0].session_id), node, old, workspace_node, user_node)


class _Elements(HTMLParser):
    """Counts what injected markup would have created: inline scripts, images, on* handlers."""

    def __init__(self):
        super().__init__()
        self.inline_scripts = 0
        self.images = 0
        self.handlers: list[str] = []

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "script" and not values.get("src"):
            self.inline_scripts += 1
        if tag == "img":
            self.images += 1
        self.handlers += [name for name, _ in attrs if name.startswith("on")]


def injected(html: str) -> dict[str, object]:
    """What of the payloads became markup in `html`: {} when everything is inert."""
    parser = _Elements()
    parser.feed(html)
    found: dict[str, object] = {}
    if parser.inline_scripts:
        found["inline scripts"] = parser.inline_scripts
    if parser.images:
        found["img elements"] = parser.images
    if parser.handlers:
        found["event handler attributes"] = parser.handlers
    for raw in ("<script>alert", "<img src=x", "' onmouseover='alert"):
        if raw in html:
            found[raw] = "unescaped"
    return found
