"""The web worker's start-up (config/wsgi.py): what it loaded is frozen out of the collector's
reach, and what requests create later is still collected."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROBE = """
import gc, json
frozen_before = gc.get_freeze_count()
from config.wsgi import application
frozen = gc.get_freeze_count()
class Cycle:
    pass
garbage = Cycle(); garbage.me = garbage; del garbage
print(json.dumps({"before": frozen_before, "frozen": frozen, "collected": gc.collect(),
                  "callable": callable(application)}))
"""


def test_the_worker_freezes_what_start_up_loaded_and_still_collects_new_garbage():
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings",
                                 "DATABASE_URL": "sqlite:///:memory:", "SECRET_KEY": "test-only-" + "x" * 40})
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["frozen"] - found["before"] > 10_000  # Django, the project's modules and the URL patterns
    assert found["collected"] >= 1  # the cycle made after start-up
    assert found["callable"] is True
