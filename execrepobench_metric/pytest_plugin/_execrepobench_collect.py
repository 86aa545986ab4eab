"""pytest plugin loaded with `-p _execrepobench_collect`: writes the collected node ids as JSON.

Only collection is recorded here; outcomes are read from pytest's junit XML report.
"""
import json
import os


def pytest_collection_finish(session):
    path = os.environ.get("EXECREPOBENCH_COLLECT_OUT")
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump([item.nodeid for item in session.items], fh)
