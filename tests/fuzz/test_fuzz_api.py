"""Schemathesis over every operation of /api/v1/schema with the keys of two teams (issue 9 part 1).

CI runs a short deterministic run; `make fuzz` runs the same test with MEMORY_FUZZ_EXAMPLES
raised to reach 10,000+ requests, prints the figures and writes var/fuzz-report.json.
"""

import json
import os
from pathlib import Path

from schemathesis.generation import GenerationMode

from tests.fuzz.harness import fuzz, load_schema
from tests.fuzz.world import build_world, fingerprint

EXAMPLES = int(os.environ.get("MEMORY_FUZZ_EXAMPLES", "2"))  # per operation and pass
MIN_REQUESTS = int(os.environ.get("MEMORY_FUZZ_MIN_REQUESTS", "300"))
SEED = int(os.environ.get("MEMORY_FUZZ_SEED", "20261130"))
ONLY = os.environ.get("MEMORY_FUZZ_ONLY", "")  # a path fragment, to fuzz one operation while fixing it
REPORT = os.environ.get("MEMORY_FUZZ_REPORT", "")
VERBOSE = int(os.environ.get("MEMORY_FUZZ_VERBOSE", "0"))  # how many refused-valid kinds to list


def test_fuzzing_every_operation_finds_no_5xx_no_schema_violation_and_no_leak(db):
    world = build_world()
    _app, schema = load_schema()
    modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    settings = {"schema": schema, "examples": EXAMPLES, "fuzz_seed": SEED, "targets": world["targets"], "only": ONLY}
    report = fuzz(passes=[(caller, mode) for caller in world["team_b"] for mode in modes], **settings)
    untouched = fingerprint(world["team_a"]) == world["fingerprint"]  # team B changed nothing of team A's
    report = fuzz(passes=[(world["team_a_caller"], mode) for mode in modes], report=report, **settings)
    print("\n" + report.summary(verbose=VERBOSE))
    if REPORT:
        Path(REPORT).parent.mkdir(parents=True, exist_ok=True)
        Path(REPORT).write_text(json.dumps(report.as_dict(), indent=2, ensure_ascii=False, default=str))
    assert report.findings == 0, report.summary()
    assert report.requests >= (0 if ONLY else MIN_REQUESTS), report.summary()
    assert ONLY or len(report.operations) == len(list(schema.get_all_operations()))
    assert report.aimed > 0  # team B really aimed at team A's ids
    assert untouched
