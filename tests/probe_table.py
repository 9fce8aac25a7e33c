"""The table of tests/test_isolation_probes.py: for every URL pattern and method, one request
naming team A's objects (`{node}` and the like are filled in from the probe world) and the
status each principal must get. Order matters where a probe consumes an object: each principal
runs the table from the top in a world of its own.

Principals: anonymous · viewer, editor, admin (logins of team A) · outsider (an admin login of
team B) · outsider_key (an admin key of team B) · revoked (a revoked admin key of team A) ·
other_ws (an agent key of team A limited to workspace w-other).
"""

from dataclasses import dataclass, field
from typing import Any

CTX = {"workspace_id": "w-alpha", "user_id": "u-alpha", "session_id": "s-alpha"}
Q = "workspace_id=w-alpha&user_id=u-alpha"
QCTX = f"{Q}&session_id=s-alpha"
LOGIN = 302  # the dashboard sends anyone without a login (keys included) to the login page


@dataclass(frozen=True)
class Probe:
    pattern: str  # the URL pattern's name (namespace:name), or its route when it has no name
    method: str
    url: str
    body: Any = None
    expect: dict[str, int | tuple[int, ...]] = field(default_factory=dict)
    form: bool = False  # a dashboard form post (urlencoded) rather than JSON


def api(pattern, method, url, body=None, *, viewer, editor, admin, outsider, other_ws, outsider_key=None) -> Probe:
    """An API probe: anonymous callers and revoked keys always get 401."""
    expect = {"anonymous": 401, "revoked": 401, "viewer": viewer, "editor": editor, "admin": admin,
              "outsider": outsider, "outsider_key": outsider if outsider_key is None else outsider_key,
              "other_ws": other_ws}
    return Probe(pattern, method, url, body, expect)


def public(pattern, method, url, status) -> Probe:
    return Probe(pattern, method, url, None, {name: status for name in (
        "anonymous", "viewer", "editor", "admin", "outsider", "outsider_key", "revoked", "other_ws")})


def page(pattern, method, url, body=None, *, viewer, editor, admin, outsider) -> Probe:
    """A dashboard probe: without a login (anonymous, and every key) the answer is the login page."""
    expect = {"anonymous": LOGIN, "revoked": LOGIN, "other_ws": LOGIN, "outsider_key": LOGIN,
              "viewer": viewer, "editor": editor, "admin": admin, "outsider": outsider}
    return Probe(pattern, method, url, body, expect, form=method == "post")


READ = {"viewer": 200, "editor": 200, "admin": 200}
WRITE = {"viewer": 403, "editor": 200, "admin": 200}
CREATE = {"viewer": 403, "editor": 201, "admin": 201}
CREATE_READ = {"viewer": 201, "editor": 201, "admin": 201}  # a read right suffices (feedback on a context call)
ADMIN = {"viewer": 403, "editor": 403, "admin": 200}
NODE = {"node": {"scope": "session", "type": "fact", "title": "probe fact"}}

PROBES = [
    # The agent API. Reads of team A's named things by team B find its own (empty) things or
    # nothing; ids of team A's objects are 404 for team B and for a key of another workspace.
    api("api-messages", "get", f"/api/v1/messages?{QCTX}", **READ, outsider=200, other_ws=403),
    api("api-messages", "post", "/api/v1/messages", {**CTX, "role": "user", "content": "probe"}, **CREATE,
        outsider=201, other_ws=403),
    api("api-session-working-memory", "get", f"/api/v1/sessions/s-alpha/working-memory?{Q}", **READ,
        outsider=200, other_ws=403),
    api("api-session-working-memory", "put", f"/api/v1/sessions/s-alpha/working-memory?{Q}",
        {"current_goal": "probe"}, **WRITE, outsider=200, other_ws=403),
    api("api-session-working-memory", "patch", f"/api/v1/sessions/s-alpha/working-memory?{Q}",
        {"current_goal": "probe 2"}, **WRITE, outsider=200, other_ws=403),
    # DELETE here forgets the session whose id ends in "/working-memory" (memory/api/urls.py): none.
    api("api-session-working-memory", "delete", f"/api/v1/sessions/s-alpha/working-memory?{Q}&mode=soft",
        viewer=403, editor=404, admin=404, outsider=404, other_ws=403),
    api("api-summaries", "get", f"/api/v1/summaries?{QCTX}", **READ, outsider=200, other_ws=403),
    api("api-summaries", "post", "/api/v1/summaries", {**CTX, "summary": "probe summary"}, **CREATE,
        outsider=201, other_ws=403),
    api("api-summary-latest", "get", f"/api/v1/summaries/latest?{QCTX}", **READ, outsider=200, other_ws=403),
    api("api-context", "post", "/api/v1/context", {**CTX, "query": "note"}, **READ, outsider=200, other_ws=403),
    api("api-retrieval", "get", "/api/v1/retrievals/{retrieval}", **READ, outsider=404, other_ws=404),
    api("api-retrieval-feedback", "post", "/api/v1/retrievals/{retrieval}/feedback", {"used_node_ids": []},
        **CREATE_READ, outsider=404, other_ws=404),
    api("api-memory-search", "post", "/api/v1/memory/search", {**CTX, "query_text": "note"}, **READ,
        outsider=200, other_ws=403),
    # A key limited to workspaces must name one of them before any id is looked up: 403, whatever the id.
    api("api-memory-get", "post", "/api/v1/memory/get", {"id": "{node}"}, **READ, outsider=404, other_ws=403),
    api("api-memory-propose", "post", "/api/v1/memory/propose",
        {**CTX, "operation": "supersede", "target_id": "{node_propose}", "node": {"title": "probe"}},
        **CREATE, outsider=404, other_ws=403),
    api("api-memory-forget", "post", "/api/v1/memory/forget", {**CTX, "id": "{node_forget}", "confirm": True},
        **WRITE, outsider=404, other_ws=403),
    api("api-memory-extractions", "post", "/api/v1/memory/extractions",
        {**CTX, "operations": [{"operation": "create", **NODE}]}, **CREATE, outsider=201, other_ws=403),
    api("api-tools", "get", "/api/v1/tools", **READ, outsider=200, other_ws=200),
    api("api-kpis", "get", "/api/v1/kpis", **READ, outsider=200, other_ws=403),
    api("api-capture-stats", "get", "/api/v1/capture/stats", **READ, outsider=200, other_ws=403),
    api("api-nodes", "get", "/api/v1/nodes", **READ, outsider=200, other_ws=403),
    api("api-node", "get", "/api/v1/nodes/{node}", **READ, outsider=404, other_ws=403),
    # A key limited to workspaces must name one before any id is looked up: 403, whatever the id.
    api("api-node", "delete", "/api/v1/nodes/{node_del}?mode=soft", **WRITE, outsider=404, other_ws=403),
    api("api-node-restore", "post", "/api/v1/nodes/{node_del}/restore", {}, **WRITE, outsider=404, other_ws=403),
    api("api-node-history", "get", "/api/v1/nodes/{node}/history", **READ, outsider=404, other_ws=403),
    # An end user's profile is the user's, not a workspace's: a key limited to workspaces has it
    # naming one of its own (the probes name none).
    api("api-profile", "get", "/api/v1/profiles/u-alpha", **READ, outsider=404, other_ws=403),
    api("api-profile", "get", "/api/v1/profiles/u-alpha?workspace_id=w-other", **READ, outsider=404, other_ws=200),
    api("api-profile-versions", "get", "/api/v1/profiles/u-alpha/versions", **READ, outsider=200, other_ws=403),
    api("api-profile-rollback", "post", "/api/v1/profiles/u-alpha/rollback", {"version": 1}, **CREATE,
        outsider=404, other_ws=403),
    api("api-profile-rollback", "post", "/api/v1/profiles/u-alpha/rollback", {"version": 1, "workspace_id": "w-other"},
        **CREATE, outsider=404, other_ws=201),
    api("api-policies", "get", "/api/v1/policies", **READ, outsider=200, other_ws=403),
    api("api-policies", "put", "/api/v1/policies", {"top_n": 9}, **ADMIN, outsider=200, other_ws=403),
    api("api-policies", "patch", "/api/v1/policies", {"top_n": 8}, **ADMIN, outsider=200, other_ws=403),
    api("api-policy-simulate", "post", "/api/v1/policies/simulate", {"changes": {"top_n": 3}}, **ADMIN,
        outsider=200, other_ws=403),
    api("api-policy-workspace", "get", "/api/v1/policies/workspaces/w-alpha", **READ, outsider=200, other_ws=403),
    api("api-policy-workspace", "put", "/api/v1/policies/workspaces/w-alpha", {"top_n": 9}, **ADMIN,
        outsider=200, other_ws=403),
    api("api-policy-workspace", "patch", "/api/v1/policies/workspaces/w-alpha", {"top_n": 8}, **ADMIN,
        outsider=200, other_ws=403),
    api("api-instructions", "get", "/api/v1/instructions?workspace_id=w-alpha", **READ, outsider=200,
        other_ws=403),
    api("api-instructions", "put", "/api/v1/instructions?workspace_id=w-alpha", {"text": "probe"},
        **ADMIN, outsider=200, other_ws=403),
    # A key limited to other workspaces reads the team-wide sets, not w-alpha's; only admins write.
    api("api-lexicon", "get", "/api/v1/lexicon", **READ, outsider=200, other_ws=200),
    api("api-lexicon", "post", "/api/v1/lexicon", {"terms": ["probe one", "probe two"], "workspace_id": "w-alpha"},
        viewer=403, editor=403, admin=201, outsider=201, other_ws=403),
    api("api-lexicon-set", "get", "/api/v1/lexicon/{lexicon_ws}", **READ, outsider=404, other_ws=404),
    api("api-lexicon-set", "put", "/api/v1/lexicon/{lexicon_ws}", {"terms": ["probe three", "probe four"],
                                                                   "workspace_id": "w-alpha"},
        **ADMIN, outsider=404, other_ws=403),
    api("api-lexicon-set", "patch", "/api/v1/lexicon/{lexicon_ws}", {"terms": ["probe five", "probe six"]},
        **ADMIN, outsider=404, other_ws=403),
    api("api-lexicon-set", "delete", "/api/v1/lexicon/{lexicon_ws}", viewer=403, editor=403, admin=204,
        outsider=404, other_ws=403),
    api("api-export", "get", "/api/v1/export?kind=workspace&workspace_id=w-alpha", **ADMIN, outsider=200,
        other_ws=403),
    api("api-import", "post", "/api/v1/import", "not an export file", **{**ADMIN, "admin": 400}, outsider=400,
        other_ws=403),
    api("api-session", "delete", f"/api/v1/sessions/s-doomed?{Q}&mode=soft", **WRITE, outsider=404,
        other_ws=403),
    public("api-schema", "get", "/api/v1/schema", 200),
    public("api-unknown", "get", "/api/v1/no-such-endpoint", 404),
    public("^api(/v1)?$", "get", "/api/v1", 404),
    public("healthz", "get", "/healthz", 200),
    public("healthz-full", "get", "/healthz/full", 200),  # the test settings run tasks in-process: no broker to miss
    public("metrics", "get", "/metrics", 200),  # from loopback without X-Forwarded-For; elsewhere the token decides
    # The dashboard: team A's pages for its members; another team's admin sees its own team's
    # pages and gets 404 for team A's ids; viewers read, editors also change memories, admins
    # also change the team.
    page("dashboard:memories", "get", "/", **READ, outsider=200),
    page("dashboard:node", "get", "/nodes/{node}", **READ, outsider=404),
    page("dashboard:node", "post", "/nodes/{node_dash}", {"action": "expire", "expire-reason": "probe"},
         viewer=403, editor=302, admin=302, outsider=404),
    page("dashboard:sessions", "get", "/sessions", **READ, outsider=200),
    page("dashboard:session", "get", "/sessions/{session_pk}", **READ, outsider=404),
    page("dashboard:session", "post", "/sessions/{session_dash_pk}",
         {"action": "forget", "forget-mode": "soft", "forget-reason": "probe"},
         viewer=403, editor=302, admin=302, outsider=404),
    page("dashboard:export", "get", "/export?kind=workspace&workspace_id=w-alpha", **ADMIN, outsider=200),
    page("dashboard:preview", "get", f"/preview?{QCTX}&query=note", **READ, outsider=200),
    page("dashboard:budgets", "get", "/budgets?workspace_id=w-alpha", **READ, outsider=200),
    page("dashboard:budgets", "post", "/budgets", {"action": "save", "workspace_id": "w-alpha", "top_n": "7"},
         **{**ADMIN, "admin": 302}, outsider=302),
    page("dashboard:kpis", "get", "/kpis", **READ, outsider=200),
    page("dashboard:audit", "get", "/audit", viewer=403, editor=200, admin=200, outsider=200),
    page("dashboard:members", "get", "/members", viewer=403, editor=200, admin=200, outsider=200),
    page("dashboard:members", "post", "/members", {"action": "add", "add-username": "probe-newcomer",
                                                   "add-role": "viewer", "add-password": "a Long pass-phrase 42"},
         viewer=403, editor=403, admin=302, outsider=302),
    page("dashboard:keys", "get", "/keys", viewer=403, editor=200, admin=200, outsider=200),
    page("dashboard:keys", "post", "/keys", {"action": "create", "create-name": "probe", "create-kind": "agent"},
         viewer=403, editor=403, admin=201, outsider=201),
    page("dashboard:schema", "get", "/schema", viewer=403, editor=200, admin=200, outsider=200),
    page("dashboard:schema", "post", "/schema", {"kind": "synonym", "action": "save", "synonym-synonym": "probing",
                                                 "synonym-key": "probe"},
         viewer=403, editor=403, admin=302, outsider=302),
    page("dashboard:lexicon", "get", "/lexicon", **READ, outsider=200),
    page("dashboard:lexicon", "post", "/lexicon", {"action": "save", "lexicon-terms": "probe one, probe two"},
         viewer=403, editor=403, admin=302, outsider=302),
    page("dashboard:team_switch", "post", "/team", {"team": "acme"}, viewer=302, editor=302, admin=302,
         outsider=403),
    # Logging in and out: last, since logging out ends the session the probes above ran in.
    Probe("login", "get", "/login", None, {"anonymous": 200, "revoked": 200, "other_ws": 200, "outsider_key": 200,
                                           "viewer": 302, "editor": 302, "admin": 302, "outsider": 302}),
    Probe("login", "post", "/login", {"username": "vera", "password": "wrong"}, {
        "anonymous": 200, "revoked": 200, "other_ws": 200, "outsider_key": 200,
        "viewer": 302, "editor": 302, "admin": 302, "outsider": 302}, form=True),
    Probe("logout", "post", "/logout", {}, {name: (200, 302) for name in (
        "anonymous", "viewer", "editor", "admin", "outsider", "outsider_key", "revoked", "other_ws")}, form=True),
]
