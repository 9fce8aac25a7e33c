"""The web worker's start-up (config/wsgi.py): what it loaded is frozen out of the collector's
reach, and what requests create later is still collected."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROBE = """
import gc, json, weakref
gc.disable()  # only the start-up collects, not the thresholds
class Cycle:
    pass
before = Cycle(); before.me = before; made_before = weakref.ref(before); del before
frozen_before = gc.get_freeze_count()
from config.wsgi import application
frozen = gc.get_freeze_count()
after = Cycle(); after.me = after; made_after = weakref.ref(after); del after
gc.enable()
print(json.dumps({"before": frozen_before, "frozen": frozen, "callable": callable(application),
                  "garbage_before_frozen": made_before() is not None,
                  "garbage_after_collected": (gc.collect(), made_after() is None)[1]}))
"""


def test_the_worker_freezes_what_start_up_loaded_and_still_collects_new_garbage():
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings",
                                 "DATABASE_URL": "sqlite:///:memory:", "SECRET_KEY": "test-only-" + "x" * 40})
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["frozen"] - found["before"] > 10_000  # Django, the project's modules and the URL patterns
    assert found["garbage_before_frozen"] is False  # collected first, not frozen for the process's life
    assert found["garbage_after_collected"] is True  # what requests make later is still collected
    assert found["callable"] is True
