//! The OpenAPI 3.1 document for `/api/v1`, written by hand next to the routes it describes.

use serde_json::{Value, json};

fn op(summary: &str, body: Option<&str>, ok_status: &str) -> Value {
    let mut o = json!({
        "summary": summary,
        "security": [{"bearer": []}],
        "responses": {
            ok_status: {"description": "Success", "content": {"application/json": {"schema": {"type": "object"}}}},
            "400": {"$ref": "#/components/responses/Error"},
            "401": {"$ref": "#/components/responses/Error"},
            "403": {"$ref": "#/components/responses/Error"},
            "404": {"$ref": "#/components/responses/Error"},
            "409": {"$ref": "#/components/responses/Error"},
            "422": {"$ref": "#/components/responses/Error"}
        }
    });
    if let Some(schema) = body {
        o["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}});
    }
    o
}

fn id_param(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "integer", "format": "int64"}})
}

/// The document served at `GET /api/v1/openapi.json`.
pub fn document() -> Value {
    let id = id_param("id");
    let mut submit_run = op(
        "Submit a run; the answer carries its id, its state (queued or waiting_approval) and the cost preview. 409 larger_than_cluster or budget_exceeded with the numbers. An optional Idempotency-Key header (1 to 255 characters) makes retries safe: a repeat of a key the caller used before, with the same body, answers 200 with that run and \"repeated\": true, creating nothing; the key repeated with another body is 422 idempotency_mismatch (field Idempotency-Key), creating nothing",
        Some("NewRun"),
        "201",
    );
    submit_run["parameters"] = json!([{
        "name": "Idempotency-Key", "in": "header", "required": false,
        "schema": {"type": "string", "minLength": 1, "maxLength": 255},
        "description": "A key chosen by the client for this submission; stored with a SHA-256 of the body, so a retry with the same body gets the first run and another body is refused with idempotency_mismatch"
    }]);
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Tranche API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Budgets of GPU time down a program tree. Authenticate with `Authorization: Bearer TOKEN` (create tokens on the API tokens page or with `tranche admin create-token`). Errors are `{\"error\": {\"code\", \"message\", \"field\"}}` with codes invalid_input, invalid_text (a text field holds a control character such as NUL; `field` names it, e.g. `env.PATH`), idempotency_mismatch (an Idempotency-Key repeated with another body), malformed_request, not_found, conflict, unauthorized, forbidden, method_not_allowed, internal. Money is in integer minor units of the configured currency; shares are percentages of the parent with at most two decimals."
        },
        "servers": [{"url": "/api/v1"}],
        "paths": {
            "/me": {"get": op("The caller: name, roles, grants and projects", None, "200"), "put": op("Set the caller's e-mail address for budget alerts (empty clears it)", Some("MeBody"), "200")},
            "/tree": {"get": op("The program tree visible to the caller with shares, effective shares and entitlements per cluster and GPU model for the current budget period", None, "200")},
            "/clusters": {
                "get": op("Clusters with their nodes, GPU models and counts", None, "200"),
                "post": op("Create a cluster (admin)", Some("NameBody"), "201")
            },
            "/clusters/{id}/nodes": {"parameters": [id], "post": op("Add a node to a cluster (admin)", Some("NodeBody"), "201")},
            "/cluster-nodes/{id}/state": {"parameters": [id], "put": op("Set a node's state: up, draining (optional reason) or down (admin)", Some("StateBody"), "200")},
            "/cluster-nodes/{id}": {"parameters": [id], "get": op("A node with its open drain (empty_ready_for_repair once nothing runs there) and its drain history (admin)", None, "200")},
            "/cluster-nodes/{id}/drain": {"parameters": [id], "post": op("Drain a node for repair with a reason: no new runs; its runs are requeued as each passes its minimum runtime (admin)", Some("DrainBody"), "200")},
            "/cluster-nodes/{id}/return": {"parameters": [id], "post": op("Return a drained or down node to service (admin)", None, "200")},
            "/idle-flags": {"get": op("Open idle (squatting) flags the caller may see: runs whose GPUs all report utilization under the threshold for longer than the idle period, with idle seconds, GPU-seconds and value (minor units); ?project=ID filters", None, "200")},
            "/idle-flags/{id}/stop": {"parameters": [id], "post": op("Stop an idle run with a reason (lead of its project or admin); 409 flag_cleared once it recovered or ended", Some("ReasonBody"), "200")},
            "/gpu-models": {
                "get": op("GPU models with billing weights and prices", None, "200"),
                "post": op("Create a GPU model (admin)", Some("ModelBody"), "201")
            },
            "/gpu-models/{id}": {"parameters": [id], "patch": op("Change a GPU model's billing weight and price (admin)", Some("ModelBody"), "200")},
            "/nodes": {"post": op("Create a tree node (admin)", Some("NewNode"), "201")},
            "/nodes/{id}": {"parameters": [id], "patch": op("Rename, move or archive a tree node (admin)", Some("NodePatch"), "200")},
            "/nodes/{id}/shares": {"parameters": [id], "put": op("Set shares of some children of a node at once (admin or lead of the node or above); siblings sum to at most 100%", Some("SharesBody"), "200")},
            "/projects/{id}": {"parameters": [id], "get": op("A project: share, entitlement, period budget, money cap, self-service limit, members", None, "200")},
            "/projects/{id}/budget": {"parameters": [id], "put": op("Set a project's period budget, money cap and self-service limit (admin or lead above the project)", Some("BudgetUpdate"), "200")},
            "/projects/{id}/members": {"parameters": [id], "post": op("Add a member (admin or lead)", Some("MemberBody"), "201")},
            "/projects/{id}/members/{user}": {"parameters": [id, {"name": "user", "in": "path", "required": true, "schema": {"type": "string"}}], "delete": op("Remove a member (admin or lead)", None, "200")},
            "/users": {
                "get": op("Users and their roles (admin)", None, "200"),
                "post": op("Create a user with a role; the answer carries the generated password once (admin)", Some("UserBody"), "201")
            },
            "/users/{id}/grants": {"parameters": [id], "post": op("Grant a role (admin)", Some("GrantBody"), "201")},
            "/users/{id}/grants/{grant}": {"parameters": [id, id_param("grant")], "delete": op("Revoke a role (admin); the last admin cannot be revoked", None, "200")},
            "/tokens": {"get": op("The caller's API tokens (never the tokens themselves)", None, "200")},
            "/tokens/{id}": {"parameters": [id], "delete": op("Revoke one of the caller's tokens", None, "200")},
            "/contracts": {
                "get": op("Contracts visible to the caller; filter with ?cluster=NAME&gpu_model=NAME", None, "200"),
                "post": op("Buy a capacity contract (admin or lead of the project): admitted against contractable capacity and the project's budget in one transaction; 409 capacity_exceeded or budget_exceeded with the numbers", Some("ContractBody"), "201")
            },
            "/contracts/quote": {"post": op("Price preview for a contract, with the same checks, buying nothing", Some("ContractBody"), "200")},
            "/contracts/{id}/cancel": {"parameters": [id], "post": op("Cancel a contract before its start for the site's refund percentage", None, "200")},
            "/capacity": {"get": op("Capacity calendar of ?cluster=NAME&gpu_model=NAME: installed, contractable and, per hour of the next 8 weeks, GPUs contracted", None, "200")},
            "/spend": {"get": op("Spend report rows (the CSV's rows) for ?period=YYYY-MM&node=ID&cluster=NAME (finance, admins, leads of the node)", None, "200")},
            "/metrics": {"get": op("The metrics of docs/design.md section 5 per cluster and GPU model (finance and admins: every project; leads: project figures of their subtree): availability, occupancy (allocated, unallocated), impact and the share of projects served at least 95% of what they were owed, utilization, queue waits p50/p90 by class (debug, protected, unallocated), preemptions per 1,000 GPU-hours, and owed vs received per project. Query: ?cluster=NAME&window=24h|7d|30d|period&period=YYYY-MM, or ?from=RFC3339&to=RFC3339 (at most 400 days); 422 invalid_input names the field", None, "200")},
            "/ledger": {"get": op("A project's ledger entries and current balance: ?project=NAME", None, "200")},
            "/notifications": {"get": op("The caller's notifications (budget alerts), newest first", None, "200")},
            "/alerts": {"get": op("Budget alerts that fired for projects the caller may see (threshold, actual or forecast, spend and budget)", None, "200")},
            "/notifications/read": {"post": op("Mark all the caller's notifications read", None, "200")},
            "/audit": {"get": op("Audit entries visible to the caller (admin and finance: all; leads: their subtree)", None, "200")},
            "/runs": {
                "get": op("Runs the caller may see, newest first: ?scope=mine|projects|all&state=STATE|active&project=NAME&cluster=NAME&limit=N", None, "200"),
                "post": submit_run
            },
            "/runs/preview": {"post": op("Cost preview of a submission with the same checks, submitting nothing: protected GPU-hours and price, or free and preemptible; whether it needs approval", Some("NewRun"), "200")},
            "/runs/{id}": {"parameters": [id], "get": op("A run with its state, timeline of events (preemptions with their reason and the run they made room for), placements per attempt, its environment (secret values as ••••, their names in secret_env), and while queued the reason it waits in words and the estimated start", None, "200")},
            "/runs/{id}/cancel": {"parameters": [id], "post": op("Cancel a run (its submitter, a lead of its project, admins): at once while waiting, through its agent (SIGTERM, grace period) while running; 409 not_cancellable once ended", None, "200")},
            "/runs/{id}/approve": {"parameters": [id], "post": op("Approve a run waiting for approval (a lead of its project or above, admins); optional body {\"reason\"}; 409 not_waiting_approval", None, "200")},
            "/runs/{id}/deny": {"parameters": [id], "post": op("Deny a run waiting for approval with a reason the researcher sees", Some("Decision"), "200")},
            "/approvals": {"get": op("Runs waiting for approval that the caller may decide", None, "200")},
            "/agent/register": {"post": op("Node agent (agent token of a cluster): register declared nodes and open a session (see docs/agent-protocol.md); 409 undeclared_node, inventory_mismatch or node_in_use", Some("AgentRegister"), "200")},
            "/agent/stop": {"post": op("Node agent stopping cleanly: end its session; its nodes are lost at once and their runs requeued or lost", Some("AgentStop"), "200")},
            "/agent/sync": {"post": op("Node agent: heartbeat, process reports and long poll for assignments and stops; 409 stale_session or not_assigned", Some("AgentSync"), "200")}
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {"Error": {"description": "An error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}},
            "schemas": {
                "Error": {"type": "object", "properties": {"error": {"type": "object", "required": ["code", "message"], "properties": {
                    "code": {"type": "string", "enum": ["invalid_input", "invalid_text", "idempotency_mismatch", "malformed_request", "not_found", "conflict", "capacity_exceeded", "budget_exceeded", "price_changed", "not_cancellable", "larger_than_cluster", "not_waiting_approval", "inventory_mismatch", "stale_session", "not_assigned", "payload_too_large", "unauthorized", "forbidden", "csrf_failed", "method_not_allowed", "internal"]},
                    "message": {"type": "string"}, "field": {"type": ["string", "null"]}}}}},
                "Share": {"oneOf": [{"type": "number", "minimum": 0, "maximum": 100}, {"type": "string", "examples": ["12.5", "12.5%"]}]},
                "SharesBody": {"type": "object", "required": ["shares"], "properties": {"shares": {"type": "array", "items": {"type": "object", "required": ["node", "share"], "properties": {"node": {"type": "integer"}, "share": {"$ref": "#/components/schemas/Share"}}}}}},
                "NewNode": {"type": "object", "required": ["parent", "name", "kind", "share"], "properties": {"parent": {"type": "integer"}, "name": {"type": "string", "maxLength": 64}, "kind": {"enum": ["group", "project"]}, "share": {"$ref": "#/components/schemas/Share"}}},
                "NodePatch": {"type": "object", "properties": {"name": {"type": "string"}, "parent": {"type": "integer"}, "archived": {"const": true}}},
                "BudgetUpdate": {"type": "object", "description": "omitted fields keep their value; null clears the period budget override or the money cap", "properties": {"period_budget_minor": {"type": ["integer", "null"], "minimum": 0}, "money_cap_minor": {"type": ["integer", "null"], "minimum": 0}, "self_service_gpu_hours": {"type": "integer", "minimum": 0, "maximum": 100000}, "alert_thresholds": {"type": ["array", "null"], "items": {"type": "integer", "minimum": 1, "maximum": 100}, "maxItems": 10, "description": "percent of the period budget; omitted keeps the current ones"}}},
                "MeBody": {"type": "object", "required": ["email"], "properties": {"email": {"type": "string"}}},
                "MemberBody": {"type": "object", "required": ["user"], "properties": {"user": {"type": "string"}}},
                "NameBody": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
                "NodeBody": {"type": "object", "required": ["name", "gpu_model", "gpu_count"], "properties": {"name": {"type": "string"}, "gpu_model": {"type": "string"}, "gpu_count": {"type": "integer", "minimum": 1, "maximum": 64}}},
                "StateBody": {"type": "object", "required": ["state"], "properties": {"state": {"enum": ["up", "draining", "down"]}, "reason": {"type": ["string", "null"], "maxLength": 1000, "description": "why, when draining"}}},
                "ReasonBody": {"type": "object", "required": ["reason"], "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": 1000}}},
                "DrainBody": {"type": "object", "required": ["reason"], "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": 1000}}},
                "ModelBody": {"type": "object", "required": ["billing_weight_milli", "price_per_gpu_hour_minor"], "properties": {"name": {"type": "string"}, "billing_weight_milli": {"type": "integer", "minimum": 1, "maximum": 100000}, "price_per_gpu_hour_minor": {"type": "integer", "minimum": 0}}},
                "UserBody": {"type": "object", "required": ["name", "role"], "properties": {"name": {"type": "string"}, "role": {"enum": ["admin", "finance", "lead", "researcher"]}, "node": {"type": ["string", "null"], "description": "the tree node a lead leads"}}},
                "ContractBody": {"type": "object", "required": ["project", "cluster", "gpu_model", "gpus", "start", "end"], "properties": {
                    "project": {"type": "string"}, "cluster": {"type": "string"}, "gpu_model": {"type": "string"}, "gpus": {"type": "integer", "minimum": 1},
                    "start": {"type": "string", "description": "RFC 3339 with an offset, or wall-clock (2026-12-01 09:00) with time_zone"},
                    "end": {"type": "string", "description": "exclusive; same forms as start"},
                    "expected_price_minor": {"type": ["integer", "null"], "description": "the price from a quote; the purchase is refused with price_changed if it differs"},
                    "time_zone": {"type": ["string", "null"], "description": "IANA zone for wall-clock times; a time in a repeated hour means its first occurrence, a time that does not exist is refused"}}},
                "NewRun": {"type": "object", "required": ["project", "cluster", "gpu_model", "gpus", "min_runtime_s", "time_limit_s", "command"], "properties": {
                    "project": {"type": "string"}, "cluster": {"type": "string"}, "gpu_model": {"type": "string"},
                    "gpus": {"type": "integer", "minimum": 1, "description": "a gang: all start together or none"},
                    "min_runtime_s": {"type": "integer", "minimum": 0, "description": "seconds protected from preemption (0 = unallocated: free, preemptible); at most the site maximum (8 h by default) and the time limit"},
                    "time_limit_s": {"type": "integer", "minimum": 1, "maximum": 2592000},
                    "priority": {"type": "integer", "minimum": -1000, "maximum": 1000, "default": 0, "description": "orders runs within the project only"},
                    "resumable": {"type": "boolean", "default": false, "description": "requeued after a preemption (true) or ends as preempted"},
                    "command": {"type": "string", "maxLength": 8192, "description": "run with sh -c; CUDA_VISIBLE_DEVICES and TRANCHE_RUN_ID are set"},
                    "workdir": {"type": ["string", "null"], "description": "absolute path on the node"},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "variables whose names contain TOKEN, SECRET, KEY or PASSWORD (any case) are kept secret like secret_env"},
                    "secret_env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "variables kept secret: stored sealed, shown as •••• (run details list their names in secret_env), given only to the agent that runs the attempt"}}},
                "Decision": {"type": "object", "required": ["reason"], "properties": {"reason": {"type": "string", "maxLength": 2000}}},
                "AgentRegister": {"type": "object", "required": ["nodes"], "properties": {"nodes": {"type": "array", "items": {"type": "object", "required": ["name", "gpus", "gpu_model"], "properties": {"name": {"type": "string"}, "gpus": {"type": "integer", "minimum": 1, "maximum": 64}, "gpu_model": {"type": "string"}}}}, "agent": {"type": "string", "maxLength": 200}}},
                "AgentStop": {"type": "object", "required": ["session"], "properties": {"session": {"type": "string"}}},
                "AgentSync": {"type": "object", "required": ["session", "nodes"], "properties": {
                    "session": {"type": "string"}, "wait_s": {"type": "integer", "minimum": 0, "maximum": 30},
                    "nodes": {"type": "array", "items": {"type": "object", "required": ["node"], "properties": {"node": {"type": "integer"}, "utilization": {"type": "array", "items": {"type": ["integer", "null"], "minimum": 0, "maximum": 100}}}}},
                    "runs": {"type": "array", "items": {"type": "object", "required": ["run", "attempt", "node", "state"], "properties": {"run": {"type": "integer"}, "attempt": {"type": "integer"}, "node": {"type": "integer"}, "state": {"enum": ["running", "exited"]}, "exit_code": {"type": ["integer", "null"]}, "signal": {"type": ["integer", "null"]}}}}}},
                "GrantBody": {"type": "object", "required": ["role"], "properties": {"role": {"enum": ["admin", "finance", "lead", "researcher"]}, "node": {"type": ["string", "null"]}}}
            }
        }
    });
    add_ai_use_cases(&mut doc);
    doc
}

/// The AI use-case register's paths and schemas (docs/ai-use-cases.md).
fn add_ai_use_cases(doc: &mut Value) {
    let id = id_param("id");
    let mut import = op(
        "Import a cost export given as the body (finance, admins): ?format=openai|anthropic|github|focus, &rate= (site currency per unit of the file's; needed when the file's currency differs), &file_name=, &dry_run=true for the preview (200, writes nothing). 201 with the lines added per use case and unassigned; 200 with already_imported for a file imported before. 422 malformed_file (field file, nothing imported) or currency_mismatch (field rate)",
        None,
        "201",
    );
    import["requestBody"] = json!({"required": true, "content": {"text/csv": {"schema": {"type": "string"}}, "application/json": {"schema": {"type": "object"}}}});
    let paths = [
        (
            "/use-cases",
            json!({
                "get": op("The AI use cases the caller may see, with this month's spend (gpu_minor, imported_micro in millionths, total_minor, over_limit) and human cost", None, "200"),
                "post": op("Register a use case (a lead of the owner node or above, admins); 422 name_taken", Some("UseCaseBody"), "201")
            }),
        ),
        (
            "/use-cases/{id}",
            json!({"parameters": [id.clone()],
                "get": op("One use case with its spend this month", None, "200"),
                "put": op("Replace a use case's fields (its leads, admins)", Some("UseCaseBody"), "200")
            }),
        ),
        (
            "/use-cases/{id}/status",
            json!({"parameters": [id.clone()], "put": op("Set the status: proposed, pilot, active or stopped (its leads, admins)", Some("UseCaseStatus"), "200")}),
        ),
        (
            "/use-cases/{id}/reviews",
            json!({"parameters": [id.clone()],
                "get": op("The monthly decisions (newest first) and stop triggers", None, "200"),
                "post": op("Record the monthly decision: continue, expand (new_limit_minor above the current limit, applied) or stop (status stopped)", Some("ReviewBody"), "201")
            }),
        ),
        (
            "/use-cases/{id}/hours",
            json!({"parameters": [id.clone()], "post": op("Record hours of human work in a month (whole minutes), priced at the use case's hourly rate", Some("HoursBody"), "201")}),
        ),
        (
            "/use-cases/{id}/acknowledge",
            json!({"parameters": [id.clone()], "post": op("Acknowledge the open \"stop rule triggered\" with a note (its leads, admins); 409 nothing_to_acknowledge", Some("NoteBody"), "200")}),
        ),
        (
            "/use-cases/{id}/stop-criterion",
            json!({"parameters": [id], "post": op("Report the stop criterion met (critical-systems bag): raises \"stop rule triggered\"; 409 already_triggered", Some("ReasonBody"), "201")}),
        ),
        (
            "/spend-imports",
            json!({"get": op("Imports and unassigned lines (finance, admins)", None, "200"), "post": import}),
        ),
        (
            "/spend-rules",
            json!({
                "get": op("Mapping rules of the use cases the caller may see", None, "200"),
                "post": op("Add a mapping rule (finance, admins, the use case's leads); assigns the unassigned lines it matches; 409 rule_exists", Some("SpendRuleBody"), "201")
            }),
        ),
    ];
    for (path, item) in paths {
        doc["paths"][path] = item;
    }
    let schemas = [
        (
            "UseCaseBody",
            json!({"type": "object", "required": ["name", "owner_node_id", "bag", "monthly_limit_minor", "metric"], "properties": {
            "name": {"type": "string", "maxLength": 120}, "owner_node_id": {"type": "integer"},
            "bag": {"enum": ["personal", "team", "critical"]}, "monthly_limit_minor": {"type": "integer", "minimum": 0},
            "allowed_data": {"type": "string"}, "ai_action": {"type": "string"}, "human_review": {"type": "string"},
            "metric": {"type": "string", "minLength": 1}, "stop_rule": {"type": "string", "description": "required for the critical bag"},
            "services": {"type": "array", "items": {"type": "string"}}, "project_ids": {"type": "array", "items": {"type": "integer"}},
            "human_hourly_rate_minor": {"type": "integer", "minimum": 0}}}),
        ),
        (
            "UseCaseStatus",
            json!({"type": "object", "required": ["status"], "properties": {"status": {"enum": ["proposed", "pilot", "active", "stopped"]}}}),
        ),
        (
            "ReviewBody",
            json!({"type": "object", "required": ["month", "decision", "metric_value"], "properties": {
            "month": {"type": "string", "examples": ["2026-11"]}, "decision": {"enum": ["continue", "expand", "stop"]},
            "new_limit_minor": {"type": ["integer", "null"]}, "metric_value": {"type": "string", "maxLength": 500}, "comment": {"type": "string"}}}),
        ),
        (
            "HoursBody",
            json!({"type": "object", "required": ["month", "hours", "activity"], "properties": {
            "month": {"type": "string"}, "hours": {"oneOf": [{"type": "number"}, {"type": "string"}]},
            "activity": {"enum": ["data", "review", "exceptions"]}, "note": {"type": "string", "maxLength": 500}}}),
        ),
        (
            "NoteBody",
            json!({"type": "object", "properties": {"note": {"type": "string", "maxLength": 2000}}}),
        ),
        (
            "SpendRuleBody",
            json!({"type": "object", "required": ["use_case_id"], "properties": {
            "use_case_id": {"type": "integer"}, "source": {"enum": ["any", "openai", "anthropic", "github", "focus"], "default": "any"},
            "service": {"type": "string"}, "scope": {"type": "string", "description": "project id, workspace id, cost centre, organization, sub-account or tag key=value"}}}),
        ),
    ];
    for (name, schema) in schemas {
        doc["components"]["schemas"][name] = schema;
    }
    if let Some(codes) = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]
        ["code"]["enum"]
        .as_array_mut()
    {
        for code in [
            "name_taken",
            "malformed_file",
            "currency_mismatch",
            "rule_exists",
            "nothing_to_acknowledge",
            "already_triggered",
        ] {
            codes.push(json!(code));
        }
    }
}
