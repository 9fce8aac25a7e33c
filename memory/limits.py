"""Every size limit of the service, in one place (R-OPS, R-API; scenarios S18, S19).

Lengths are in characters (Unicode code points). Text anywhere in a request may not contain
U+0000 (NUL) or a lone surrogate, numbers must be finite, and JSON may nest at most
JSON_DEPTH_MAX levels: such a request is rejected with 400 and nothing is stored, on every
write path (messages, summaries, nodes, queries).
"""

MAX_BODY_BYTES_DEFAULT = 4 * 1024 * 1024  # settings.DATA_UPLOAD_MAX_MEMORY_SIZE; larger → 413

IDENTITY_MAX = 128  # workspace_id, user_id, session_id: 1–128 printable characters, no surrounding spaces
ID_MAX = 2**63 - 1  # any id an agent sends (message, node, summary, retrieval); larger → 400 or 404
JSON_DEPTH_MAX = 32  # nesting of any JSON body or value
DATETIME_YEARS = (1900, 9999)  # accepted range of every time an agent sends, in UTC
MESSAGE_CONTENT_MAX = 100_000
MESSAGE_BATCH_MAX = 500
METADATA_JSON_MAX = 16_000  # serialized characters of a message's metadata

SUMMARY_TEXT_MAX = 20_000
SUMMARY_LIST_ITEMS_MAX = 50
SUMMARY_LIST_ITEM_MAX = 1_000

NODE_TITLE_MAX = 200
NODE_CONTENT_MAX = 4_000
NODE_DOMAIN_MAX = 64
NODE_KEY_MAX = 128
NODE_VALUE_JSON_MAX = 8_000  # serialized characters
NODE_LIST_ITEMS_MAX = 32  # tags, entities, category path levels
NODE_LIST_ITEM_MAX = 64
NODE_SOURCES_MAX = 100
# A constraint at least this important goes into a tight block first (an allergy); a constraint
# proposed without an importance gets it (memory.services.proposals).
CRITICAL_IMPORTANCE = 0.9
REASON_MAX = 1_000
EXTRACTION_OPERATIONS_MAX = 100  # proposals in one POST /memory/extractions batch

QUERY_TEXT_MAX = 4_000
QUERY_LIMIT_DEFAULT = 10
QUERY_LIMIT_MAX = 100
RECENT_MESSAGES_MAX = 100
PAGE_SIZE_DEFAULT = 50
PAGE_SIZE_MAX = 200

CATEGORY_PREFIX_MAX = 600  # characters of a category path as text ("a/b/c"): a query's prefix, a schema category or rule prefix
CONTEXT_TOP_N_MAX = 50
CONTEXT_MAX_CHARS_MAX = 100_000
CONTEXT_RECENT_MESSAGES_MAX = 20
# Accepted values of every numeric budget policy setting (memory.policy_models), inclusive.
POLICY_RANGES: dict[str, tuple[float, float]] = {
    "top_n": (0, CONTEXT_TOP_N_MAX),
    "max_chars": (0, CONTEXT_MAX_CHARS_MAX),
    "recent_messages": (0, CONTEXT_RECENT_MESSAGES_MAX),
    "min_confidence": (0.0, 1.0),
    **{f"l{layer}_chars": (0, CONTEXT_MAX_CHARS_MAX) for layer in range(6)},  # characters of one layer
}

IDEMPOTENCY_KEY_MAX = 255  # Idempotency-Key header: 1–255 printable ASCII characters, no spaces
IDEMPOTENCY_TTL_HOURS = 24  # a stored first answer is replayed for this long, then the key starts afresh

CAPTURE_ATTEMPTS_MAX = 6  # a job that failed this often is marked failed (kept for the KPI page)
CAPTURE_BACKOFF_SECONDS = 30  # retry n waits 30 s × 2^(n-1), at most CAPTURE_BACKOFF_MAX_SECONDS
CAPTURE_BACKOFF_MAX_SECONDS = 3600
CAPTURE_IDLE_SECONDS = 600  # a session quiet this long has its remaining messages captured by the sweep
CAPTURE_WINDOW_MAX = 200  # messages one capture job reads at most
CAPTURE_PROPOSALS_MAX = 50  # proposals one capture job applies at most (the rest are counted over_limit)
CAPTURE_MESSAGE_CHARS = 4000  # characters of one message an extractor reads (the start of a longer one)
CAPTURE_REQUEUE_SECONDS = 300  # a job the sweep handed to the broker is not handed again before this

# The user profile document (seed 004 L2 长期用户记忆: UserMemoryDistiller CONTENT_BUDGET,
# autoConsolidateAt, compactRatio, 10-minute cooldown; R-EXTRACT consolidation).
PROFILE_CONTENT_MAX = 8000  # characters of a version's content
PROFILE_COMPACT_RATIO = 0.8  # past this share of PROFILE_CONTENT_MAX the content is compacted to it
PROFILE_CONSOLIDATE_AT = 8  # user-scope nodes created or changed since the last run before a new version
PROFILE_COOLDOWN_SECONDS = 600  # no automatic version within this long of the previous one
PROFILE_SUMMARY_MAX = 1200  # characters of a version's summary (seed SUMMARY_BUDGET)
PROFILE_LINE_MAX = 500  # characters of one node's line in the content

# A session's working memory (seed 004 L4 临时工作记忆: current goal, resolved references,
# clarification slots, scratchpad; memory.working_models.WorkingMemory).
WORKING_GOAL_MAX = 1_000  # characters of current_goal
WORKING_SCRATCHPAD_MAX = 4_000  # characters of scratchpad
WORKING_KEYS_MAX = 50  # keys of references, and of slots, each
WORKING_KEY_MAX = 64  # characters of one key of references or slots
WORKING_VALUE_JSON_MAX = 2_000  # serialized characters of one value of references or slots
WORKING_VALUE_DEPTH_MAX = 4  # nesting of one value: 0 for a string or number, 1 for ["a"], 2 for [{"a": 1}] …

# Feedback on a context call (POST /retrievals/{id}/feedback) and the KPIs over the hit ledger.
FEEDBACK_NOTE_MAX = 1_000  # characters of the agent's note
FEEDBACK_NODE_IDS_MAX = 200  # used_node_ids per report (a context call injects far fewer)
KPI_RANGE_DAYS_MAX = 92  # since..until, both included
KPI_DEFAULT_DAYS = 7  # without since: the last 7 days up to until (default today, UTC)
KPI_LATENCY_ROWS_PER_DAY = 20_000  # context calls of one day read for latency percentiles (the day's first)

SIMULATION_CALLS_DEFAULT = 100  # recorded context calls a policy simulation rebuilds by default
SIMULATION_CALLS_MAX = 500

INSTRUCTIONS_MAX = 2_000  # characters of a team's or a workspace's pinned instructions (L0)

# The team synonym lexicon (seed 004 BusinessLexicon; memory.lexicon_models.LexiconSet).
LEXICON_TERMS_MAX = 32  # terms of one synonym set (2 at least)
LEXICON_TERM_MAX = 64  # characters of one term, once normalised
LEXICON_SETS_MAX = 20_000  # synonym sets of a team, its workspaces' included

KEY_NAME_MAX = 200  # characters of an agent key's name
SCHEMA_DESCRIPTION_MAX = 200  # characters of a schema rule's or category's description
FORGET_NODES_MAX = 1_000  # nodes one forget call may remove (a wider selector: 400, narrow it)
VERSION_MAX = 2**31 - 1  # a profile version or working-memory version an agent sends
IMPORT_LINE_MAX_BYTES = 2 * 1024 * 1024  # one line of an import file (the whole file: settings.MEMORY_IMPORT_MAX_BYTES)

# POST /api/v1/import (and manage.py import_team) holds each imported record to the limit its
# own write path applies, so a file cannot bring in what the API would refuse. "record.field":
# characters of the text, or of the JSON for a JSON field (json.dumps, ensure_ascii=False).
IMPORT_TEXT_MAX: dict[str, int] = {
    "message.content": MESSAGE_CONTENT_MAX,
    "message.metadata": METADATA_JSON_MAX,
    "summary.summary": SUMMARY_TEXT_MAX,
    "summary.current_goal": SUMMARY_LIST_ITEM_MAX,
    "node.title": NODE_TITLE_MAX,
    "node.content": NODE_CONTENT_MAX,
    "node.value_json": NODE_VALUE_JSON_MAX,
    "working_memory.current_goal": WORKING_GOAL_MAX,
    "working_memory.scratchpad": WORKING_SCRATCHPAD_MAX,
    "instructions.text": INSTRUCTIONS_MAX,
    "profile_version.summary": PROFILE_SUMMARY_MAX,
    "profile_version.content": PROFILE_CONTENT_MAX,
}
# "record.field": (items, characters of one item) of a list of strings.
IMPORT_LIST_MAX: dict[str, tuple[int, int]] = {
    "node.tags": (NODE_LIST_ITEMS_MAX, NODE_LIST_ITEM_MAX),
    "node.entities": (NODE_LIST_ITEMS_MAX, NODE_LIST_ITEM_MAX),
    "node.category_path": (NODE_LIST_ITEMS_MAX, NODE_LIST_ITEM_MAX),
    "lexicon_set.terms": (LEXICON_TERMS_MAX, LEXICON_TERM_MAX),
}
