"""The generated client's check (tests/it/openapi.rs): with the client that openapi-python-client
generated from /api/v1/openapi.json (package tranche_api_client on PYTHONPATH), list the runs,
submit one, and list again. Prints one JSON line: listed_before (a count), submitted (the new
run's id), listed_after (the ids). Usage: client_check.py BASE_URL, token in TRANCHE_TOKEN."""

import json
import os
import sys

from tranche_api_client import AuthenticatedClient
from tranche_api_client.api.default import get_runs, post_runs
from tranche_api_client.models import NewRun, RunPage, RunSubmitted

client = AuthenticatedClient(base_url=sys.argv[1], token=os.environ["TRANCHE_TOKEN"])

before = get_runs.sync(client=client)
if not isinstance(before, RunPage):
    sys.exit(f"listing runs did not answer RunPage: {before!r}")

answer = post_runs.sync_detailed(
    client=client,
    body=NewRun(
        project="fm-pretrain-7b",
        cluster="h100-east",
        gpu_model="H100",
        gpus=2,
        min_runtime_s=60,
        time_limit_s=600,
        command="echo generated-client",
    ),
)
if answer.status_code != 201 or not isinstance(answer.parsed, RunSubmitted):
    sys.exit(f"submitting answered {answer.status_code}: {answer.content!r}")
run = answer.parsed
if run.state.value not in ("queued", "waiting_approval"):
    sys.exit(f"unexpected state {run.state!r}")

after = get_runs.sync(client=client)
if not isinstance(after, RunPage):
    sys.exit(f"listing runs did not answer RunPage: {after!r}")
print(json.dumps({
    "listed_before": len(before.runs),
    "submitted": run.id,
    "listed_after": [r.id for r in after.runs],
}))
