//! The OpenAPI 3.1 document for `/api/v1`, written by hand next to the routes it describes and
//! checked against the live server by Schemathesis (`tests/it/openapi.rs`; docs/api.md says
//! how it is kept exact). Every parameter carries the bounds the server enforces, every
//! request body refuses unknown fields, and every response body is described.

use serde_json::{Value, json};

use super::openapi_schemas::{self as sc, int, required_text, sref, text};

/// The error statuses every operation may answer, each with the JSON error body.
const ERROR_STATUSES: [&str; 8] = ["400", "401", "403", "404", "409", "413", "422", "503"];

/// An operation answering `status` with the response schema `ok` (a name in
/// `components/schemas`).
fn op(summary: &str, status: &str, ok: &str) -> Value {
    let mut responses = json!({
        status: {"description": "Success", "content": {"application/json": {"schema": sref(ok)}}}
    });
    for code in ERROR_STATUSES {
        responses[code] = json!({"$ref": "#/components/responses/Error"});
    }
    json!({"summary": summary, "security": [{"bearer": []}], "responses": responses})
}

/// `o` with a required JSON request body of the schema `name`.
fn req(mut o: Value, name: &str) -> Value {
    o["requestBody"] =
        json!({"required": true, "content": {"application/json": {"schema": sref(name)}}});
    o
}

/// `o` with these query (or header) parameters.
fn params(mut o: Value, p: Value) -> Value {
    o["parameters"] = p;
    o
}

/// `o` also answering `status` with the schema `name`.
fn also(mut o: Value, status: &str, name: &str) -> Value {
    o["responses"][status] =
        json!({"description": "Success", "content": {"application/json": {"schema": sref(name)}}});
    o
}

/// `o` authenticated by a node agent token instead of a user's API token.
fn agent(mut o: Value) -> Value {
    o["security"] = json!([{"agent": []}]);
    o
}

/// A query parameter.
fn q(name: &str, required: bool, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": "query", "required": required, "schema": schema, "description": description})
}

fn id_param(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": int()})
}

/// The optional `Idempotency-Key` header of an operation that creates a `thing` (`run`).
fn idempotency_header(what: &str, thing: &str) -> Value {
    json!([{
        "name": "Idempotency-Key", "in": "header", "required": false,
        "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x21-\\x7e]([\\x20-\\x7e]*[\\x21-\\x7e])?$"},
        "description": format!("A key chosen by the client for this {what} (visible ASCII); stored with a SHA-256 of the request, so a retry with the same request gets the first {thing} and another request is refused with idempotency_mismatch")
    }])
}

/// The document served at `GET /api/v1/openapi.json`.
pub fn document() -> Value {
    let id = id_param("id");
    let submit_run = also(
        params(
            req(
                op(
                    "Submit a run; the answer carries its id, its state (queued or waiting_approval) and the cost preview. 404 for an unknown project, cluster or GPU model; 409 larger_than_cluster or budget_exceeded with the numbers; 422 when min_runtime_s exceeds time_limit_s or a variable is in both env and secret_env. An optional Idempotency-Key header (1 to 255 characters) makes retries safe: a repeat of a key the caller used before, with the same body, answers 200 with that run and \"repeated\": true, creating nothing; the key repeated with another body is 422 idempotency_mismatch (field Idempotency-Key), creating nothing",
                    "201",
                    "RunSubmitted",
                ),
                "NewRun",
            ),
            idempotency_header("submission", "run"),
        ),
        "200",
        "RunRepeated",
    );
    let buy_contract = also(
        params(
            req(
                op(
                    "Buy a capacity contract (admin or lead of the project): admitted against contractable capacity and the project's budget in one transaction; 404 for an unknown project, cluster or GPU model; 409 capacity_exceeded or budget_exceeded with the numbers; 422 for times that do not parse or an end before start. An optional Idempotency-Key header (1 to 255 characters) makes a retry safe: a repeat of a key the caller used before, with the same request, answers 200 with that contract and \"repeated\": true, buying nothing; the key repeated with another request is 422 idempotency_mismatch (field Idempotency-Key), buying nothing",
                    "201",
                    "Contract",
                ),
                "ContractBody",
            ),
            idempotency_header("purchase", "contract"),
        ),
        "200",
        "ContractRepeated",
    );
    let pool_filter = json!([
        q("cluster", false, text(), "only this cluster (name)"),
        q("gpu_model", false, text(), "only this GPU model (name)")
    ]);
    let metrics_params = json!([
        q(
            "cluster",
            false,
            text(),
            "cluster name; empty for every cluster"
        ),
        q(
            "window",
            false,
            json!({"enum": ["", "24h", "7d", "30d", "period"]}),
            "the window ending now (default 24h), or the budget period"
        ),
        q(
            "period",
            false,
            text(),
            "YYYY-MM: the budget period shown with window=period (default the current period); given without a window it asks for window=period; beside another window it is 422"
        ),
        q(
            "from",
            false,
            text(),
            "window start, RFC 3339, before now (with to instead of window; at most 400 days)"
        ),
        q(
            "to",
            false,
            text(),
            "window end (exclusive), RFC 3339; default now, and a later end is now (the answer's to says so)"
        )
    ]);
    let runs_params = json!([
        q(
            "scope",
            false,
            json!({"enum": ["mine", "projects", "all"], "default": "all"}),
            "mine (submitted by me), projects (of projects I am a member of or lead) or all I may see"
        ),
        q(
            "state",
            false,
            json!({"enum": ["", "active", "waiting_approval", "denied", "queued", "starting", "running", "stopping", "succeeded", "failed", "cancelled", "preempted", "lost"]}),
            "only this state; active is queued, starting, running or stopping"
        ),
        q("project", false, text(), "only this project (name)"),
        q("cluster", false, text(), "only this cluster (name)"),
        q(
            "limit",
            false,
            int(),
            "at most this many, newest first (default 200; clamped to 1 to 1000)"
        ),
        q(
            "before",
            false,
            sc::int_in(1, i64::MAX),
            "only runs with a smaller id: the next (older) page starts before the last id of the previous one; 422 invalid_input when not a whole number from 1"
        )
    ]);
    let import = also(
        params(
            {
                let mut o = op(
                    "Import a cost export given as the body (finance, admins). 201 with the lines added per use case and unassigned; 200 with already_imported for a file imported before, or with dry_run=true for the preview (writes nothing). 422 malformed_file (field file, nothing imported) or currency_mismatch (field rate)",
                    "201",
                    "ImportResult",
                );
                o["requestBody"] = json!({"required": true, "content": {"text/csv": {"schema": {"type": "string"}}, "application/json": {"schema": {"type": "object"}}}});
                o
            },
            json!([
                q(
                    "format",
                    true,
                    json!({"enum": ["openai", "anthropic", "github", "focus"]}),
                    "the export's format"
                ),
                q(
                    "rate",
                    false,
                    text(),
                    "site currency per unit of the file's; needed when the file's currency differs"
                ),
                q(
                    "file_name",
                    false,
                    text(),
                    "the file's name, for the import list"
                ),
                q(
                    "dry_run",
                    false,
                    json!({"type": "boolean", "default": false}),
                    "preview only"
                )
            ]),
        ),
        "200",
        "ImportResult",
    );
    let mut approve = op(
        "Approve a run waiting for approval (a lead of its project or above, admins); optional body {\"reason\"} (no body, or an empty one, approves without a reason; a body given is checked as every JSON body: 422 invalid_text for a control character, invalid_input for another shape); 409 not_waiting_approval",
        "200",
        "RunState",
    );
    approve["requestBody"] =
        json!({"required": false, "content": {"application/json": {"schema": sref("Decision")}}});
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Tranche API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Budgets of GPU time down a program tree. Authenticate with `Authorization: Bearer TOKEN` (create tokens on the API tokens page or with `tranche admin create-token`). Errors are `{\"error\": {\"code\", \"message\", \"field\"}}` (components/schemas/Error lists the stable codes): 400 malformed_request (not JSON), 401 unauthorized, 403 forbidden, 404 not_found (an unknown id or name), 409 a rule with numbers or a duplicate, 413 payload_too_large, 422 invalid_input naming the field (also for a body that is not of the operation's shape: not an object, a value of the wrong type, a missing, unknown or repeated field), invalid_text (a text field holds a control character such as NUL; `field` names it, e.g. `env.PATH`) or idempotency_mismatch. Text fields refuse control characters (their `pattern`); request bodies refuse unknown fields. Money is in integer minor units of the configured currency; shares are percentages of the parent with at most two decimals."
        },
        "servers": [{"url": "/api/v1"}],
        "paths": {
            "/me": {
                "get": op("The caller: name, e-mail address for budget alerts (null when none), roles, grants and projects", "200", "Me"),
                "put": req(op("Set the caller's e-mail address for budget alerts (empty clears it)", "200", "Ok"), "MeBody")
            },
            "/tree": {"get": op("The program tree visible to the caller with shares, effective shares and entitlements per cluster and GPU model for the current budget period", "200", "Tree")},
            "/clusters": {
                "get": op("Clusters with their nodes, GPU models and counts", "200", "Clusters"),
                "post": req(op("Create a cluster (admin); 422 when the name is taken", "201", "Created"), "NameBody")
            },
            "/clusters/{id}/nodes": {"parameters": [id], "post": req(op("Add a node to a cluster (admin); 404 for an unknown GPU model", "201", "Created"), "NodeBody")},
            "/cluster-nodes/{id}/state": {"parameters": [id], "put": req(op("Set a node's state: up, draining or down (admin); opening a drain needs a reason (422 without one); the state the node is already in changes nothing", "200", "Ok"), "StateBody")},
            "/cluster-nodes/{id}": {"parameters": [id], "get": op("A node with its open drain (empty_ready_for_repair once nothing runs there) and its drain history (admin)", "200", "ClusterNode"), "patch": req(op("Correct a declared node's GPU model and count (admin): while no agent serves it and nothing runs there (409), and only if the active capacity contracts still fit the pool (409 capacity_exceeded); answers the node", "200", "ClusterNode"), "HardwareBody")},
            "/cluster-nodes/{id}/drain": {"parameters": [id], "post": req(op("Drain a node for repair with a reason: no new runs; its runs are requeued as each passes its minimum runtime (admin)", "200", "ClusterNode"), "DrainBody")},
            "/cluster-nodes/{id}/return": {"parameters": [id], "post": op("Return a drained or down node to service (admin)", "200", "ClusterNode")},
            "/idle-flags": {"get": params(op("Open idle (squatting) flags the caller may see: runs whose GPUs all report utilization under the threshold for longer than the idle period, with idle seconds, GPU-seconds and value (minor units)", "200", "IdleFlags"), json!([q("project", false, int(), "only this project (id)")]))},
            "/idle-flags/{id}/stop": {"parameters": [id], "post": req(op("Stop an idle run with a reason (lead of its project or admin); 409 flag_cleared once it recovered or ended", "200", "RunState"), "ReasonBody")},
            "/gpu-models": {
                "get": op("GPU models with billing weights and prices", "200", "GpuModels"),
                "post": req(op("Create a GPU model (admin); name is required here; 422 when it is taken", "201", "Created"), "ModelBody")
            },
            "/gpu-models/{id}": {"parameters": [id], "patch": req(op("Change a GPU model's billing weight and price (admin); a name given is ignored", "200", "Ok"), "ModelBody")},
            "/nodes": {"post": req(op("Create a tree node (admin); 422 when siblings' shares would sum to more than 100%", "201", "Created"), "NewNode")},
            "/nodes/{id}": {"parameters": [id], "patch": req(op("Rename, move or archive a tree node (admin); archiving a node whose subtree has runs running or waiting is 409 active_runs naming both counts", "200", "Ok"), "NodePatch")},
            "/nodes/{id}/shares": {"parameters": [id], "put": req(op("Set shares of some children of a node at once (admin or lead of the node or above); siblings sum to at most 100% (422 otherwise)", "200", "Ok"), "SharesBody")},
            "/projects/{id}": {"parameters": [id], "get": op("A project: share, entitlement, period budget, money cap, self-service limit, members", "200", "Project")},
            "/projects/{id}/budget": {"parameters": [id], "put": req(op("Set a project's period budget, money cap and self-service limit (admin or lead above the project); 422 invalid_input on period_budget_minor when a lead's budgets of the projects under a node they lead would sum to more than that node's entitlement", "200", "Ok"), "BudgetUpdate")},
            "/projects/{id}/members": {"parameters": [id], "post": req(op("Add a member (admin or lead); 404 for an unknown user name", "201", "Ok"), "MemberBody")},
            "/projects/{id}/members/{user}": {"parameters": [id, {"name": "user", "in": "path", "required": true, "schema": text()}], "delete": op("Remove a member (admin or lead)", "200", "Ok")},
            "/users": {
                "get": op("Users and their roles (admin)", "200", "Users"),
                "post": req(op("Create a user with a role; the answer carries the generated password once (admin); a lead needs node, other roles refuse it (422); 404 for an unknown node name", "201", "UserCreated"), "UserBody")
            },
            "/users/{id}/grants": {"parameters": [id], "post": req(op("Grant a role (admin); a lead needs node, other roles refuse it (422); 404 for an unknown node name", "201", "Created"), "GrantBody")},
            "/users/{id}/disable": {"parameters": [id], "post": op("Disable an account (admin): its sessions end, its API tokens are revoked and sign-in is refused; grants and history stay. 409 conflict for one's own account, the last enabled admin, or the break-glass admin while password sign-in is off", "200", "Ok")},
            "/users/{id}/enable": {"parameters": [id], "post": op("Enable a disabled account again (admin); the tokens revoked when it was disabled stay revoked", "200", "Ok")},
            "/users/{id}/tokens": {"parameters": [id], "get": op("A user's API tokens (admin; never the tokens themselves), to revoke one with DELETE /tokens/{id}", "200", "Tokens")},
            "/users/{id}/grants/{grant}": {"parameters": [id, id_param("grant")], "delete": op("Revoke a role (admin); the last admin cannot be revoked", "200", "Ok")},
            "/tokens": {"get": op("The caller's API tokens (never the tokens themselves)", "200", "Tokens")},
            "/tokens/{id}": {"parameters": [id], "delete": op("Revoke one of the caller's tokens, or any user's (admin)", "200", "Ok")},
            "/contracts": {
                "get": params(op("Contracts visible to the caller", "200", "Contracts"), pool_filter.clone()),
                "post": buy_contract
            },
            "/contracts/quote": {"post": req(op("Price preview for a contract, with the same checks, buying nothing", "200", "Quote"), "ContractBody")},
            "/contracts/{id}/cancel": {"parameters": [id], "post": op("Cancel a contract before its start for the site's refund percentage", "200", "Contract")},
            "/capacity": {"get": params(op("Capacity calendar of a cluster's GPU model: installed, contractable and, per hour of the next 8 weeks, GPUs contracted", "200", "Capacity"), json!([
                q("cluster", true, required_text(64), "cluster name"),
                q("gpu_model", true, required_text(32), "GPU model name")
            ]))},
            "/spend": {"get": params(op("Spend report rows (the CSV's rows) (finance, admins, leads of the node); 422 invalid_input for a period before the last 24 months or after the next 2", "200", "Spend"), json!([
                q("period", false, json!({"type": "string", "pattern": "^[ ]*([0-9]{4}-(0[1-9]|1[0-2]))?[ ]*$"}), "YYYY-MM; default the current period"),
                q("node", false, int(), "tree node id; default the root or the first node the lead leads"),
                q("cluster", false, text(), "cluster name; default all")
            ]))},
            "/metrics": {"get": params(op("The metrics of docs/design.md section 5 per cluster and GPU model (finance and admins: every project; leads: project figures of their subtree): availability, occupancy (allocated, unallocated), impact and the share of projects served at least 95% of what they were owed, utilization, queue waits p50/p90 by class (debug, protected, unallocated), preemptions per 1,000 GPU-hours, and owed vs received per project. 422 invalid_input names the field (a time that does not parse, from after to, more than 400 days)", "200", "Metrics"), metrics_params)},
            "/ledger": {"get": params(op("A project's current balance and its ledger entries a page at a time, newest first; next_before, when not null, is the before of the next (older) page", "200", "Ledger"), json!([
                q("project", true, text(), "project name"),
                q("before", false, sc::int_in(1, i64::MAX), "only entries with a smaller id (the previous page's next_before); 422 invalid_input when not a whole number from 1"),
                q("limit", false, int(), "at most this many (default 500; clamped to 1 to 1000)")
            ]))},
            "/notifications": {"get": op("The caller's notifications (budget alerts), newest first", "200", "Notifications")},
            "/alerts": {"get": op("Budget alerts that fired for projects the caller may see (threshold, actual or forecast, spend and budget)", "200", "Alerts")},
            "/notifications/read": {"post": op("Mark all the caller's notifications read", "200", "MarkedRead")},
            "/audit": {"get": params(op("Audit entries visible to the caller (admin and finance: all; leads: their subtree), newest first, a page at a time; next_before, when not null, is the before of the next (older) page", "200", "Audit"), json!([
                q("before", false, sc::int_in(1, i64::MAX), "only entries with a smaller id (the previous page's next_before); 422 invalid_input when not a whole number from 1"),
                q("limit", false, int(), "at most this many (default 1000; clamped to 1 to 1000)")
            ]))},
            "/runs": {
                "get": params(op("Runs the caller may see, newest first, a page at a time; next_before, when not null, is the before of the next (older) page", "200", "RunPage"), runs_params),
                "post": submit_run
            },
            "/runs/preview": {"post": req(op("Cost preview of a submission with the same checks, submitting nothing: protected GPU-hours and price, or free and preemptible; whether it needs approval", "200", "RunPreview"), "NewRun")},
            "/runs/{id}": {"parameters": [id], "get": op("A run with its state, timeline of events (preemptions with their reason and the run they made room for), placements per attempt, its environment (secret values as ••••, their names in secret_env), and while queued the reason it waits in words and the estimated start", "200", "RunDetail")},
            "/runs/{id}/cancel": {"parameters": [id], "post": op("Cancel a run (its submitter, a lead of its project, admins): at once while waiting, through its agent (SIGTERM, grace period) while running; 409 not_cancellable once ended", "200", "RunState")},
            "/runs/{id}/approve": {"parameters": [id], "post": approve},
            "/runs/{id}/deny": {"parameters": [id], "post": req(op("Deny a run waiting for approval with a reason the researcher sees (422 without one)", "200", "RunState"), "Decision")},
            "/approvals": {"get": op("Runs waiting for approval that the caller may decide", "200", "Runs")},
            "/agent/register": {"post": agent(req(op("Node agent (agent token of a cluster): register declared nodes and open a session (see docs/agent-protocol.md); 409 undeclared_node, inventory_mismatch or node_in_use", "200", "AgentRegistered"), "AgentRegister"))},
            "/agent/stop": {"post": agent(req(op("Node agent stopping cleanly: end its session; its nodes are lost at once and their runs requeued or lost", "200", "AgentStopped"), "AgentStop"))},
            "/agent/sync": {"post": agent(req(op("Node agent: heartbeat, process reports and long poll for assignments and stops; 409 stale_session (register again), session_replaced (another agent serves a node: stop) or not_assigned", "200", "AgentOrders"), "AgentSync"))},
            "/use-cases": {
                "get": op("The AI use cases the caller may see, with this month's spend (gpu_minor, imported_micro in millionths, total_minor, over_limit) and human cost", "200", "UseCases"),
                "post": req(op("Register a use case (a lead of the owner node or above, admins); 422 name_taken; a critical use case needs a stop rule (422)", "201", "UseCase"), "UseCaseBody")
            },
            "/use-cases/{id}": {"parameters": [id],
                "get": op("One use case with its spend this month", "200", "UseCaseWithSpend"),
                "put": req(op("Replace a use case's fields (its leads, admins)", "200", "UseCase"), "UseCaseBody")
            },
            "/use-cases/{id}/status": {"parameters": [id], "put": req(op("Set the status: proposed, pilot, active or stopped (its leads, admins)", "200", "UseCaseStatusAnswer"), "UseCaseStatus")},
            "/use-cases/{id}/reviews": {"parameters": [id],
                "get": op("The monthly decisions (newest first) and stop triggers", "200", "Reviews"),
                "post": req(op("Record the monthly decision: continue, expand (new_limit_minor above the current limit, applied) or stop (status stopped); 422 for a future month or a limit given without expand", "201", "Review"), "ReviewBody")
            },
            "/use-cases/{id}/hours": {"parameters": [id], "post": req(op("Record hours of human work in a month (whole minutes, 422 otherwise), priced at the use case's hourly rate", "201", "HoursRecorded"), "HoursBody")},
            "/use-cases/{id}/acknowledge": {"parameters": [id], "post": req(op("Acknowledge the open \"stop rule triggered\" with a note (its leads, admins); 409 nothing_to_acknowledge", "200", "Acknowledged"), "NoteBody")},
            "/use-cases/{id}/stop-criterion": {"parameters": [id], "post": req(op("Report the stop criterion met with a reason (critical-systems bag): raises \"stop rule triggered\"; 409 already_triggered", "201", "StopTriggered"), "NoteBody")},
            "/spend-imports": {"get": op("Imports and unassigned lines (finance, admins)", "200", "Imports"), "post": import},
            "/spend-rules": {
                "get": op("Mapping rules of the use cases the caller may see", "200", "Rules"),
                "post": req(op("Add a mapping rule (finance, admins, the use case's leads); assigns the unassigned lines it matches; 409 rule_exists; 422 without a service or a scope", "201", "RuleCreated"), "SpendRuleBody")
            }
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "a user's API token"},
                "agent": {"type": "http", "scheme": "bearer", "description": "a node agent token of a cluster (tranche admin create-agent-token)"}
            },
            "responses": {"Error": {"description": "An error", "content": {"application/json": {"schema": sref("Error")}}}},
            "schemas": {}
        }
    });
    for (name, schema) in sc::requests().into_iter().chain(sc::responses()) {
        doc["components"]["schemas"][name] = schema;
    }
    add_operation_ids(&mut doc);
    doc
}

/// Gives every operation a stable `operationId` from its method and path (`get_runs_id` for
/// `GET /runs/{id}`), the names a generated client's functions take.
fn add_operation_ids(doc: &mut Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let words: Vec<String> = path
            .split('/')
            .filter(|w| !w.is_empty())
            .map(|w| w.trim_matches(['{', '}']).replace('-', "_"))
            .collect();
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, o) in item.iter_mut() {
            if method != "parameters" {
                o["operationId"] = json!(format!("{method}_{}", words.join("_")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `$ref` in the document names a component that exists.
    #[test]
    fn every_reference_resolves() {
        let doc = document();
        fn walk(v: &Value, doc: &Value, bad: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(r)) = m.get("$ref") {
                        let path = r.trim_start_matches("#/");
                        let target = path.split('/').fold(doc, |d, k| &d[k]);
                        if target.is_null() {
                            bad.push(r.clone());
                        }
                    }
                    m.values().for_each(|x| walk(x, doc, bad));
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, doc, bad)),
                _ => {}
            }
        }
        let mut bad = Vec::new();
        walk(&doc, &doc, &mut bad);
        assert!(bad.is_empty(), "unresolved: {bad:?}");
    }

    /// Every operation describes its success body with a schema, not an untyped object.
    #[test]
    fn every_operation_describes_its_answer() {
        let doc = document();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, o) in item.as_object().unwrap() {
                if method == "parameters" {
                    continue;
                }
                let ok = o["responses"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .find(|(k, _)| k.starts_with('2'))
                    .map(|(_, v)| v["content"]["application/json"]["schema"]["$ref"].clone());
                assert!(
                    ok.as_ref().is_some_and(Value::is_string),
                    "{method} {path} has no success schema"
                );
            }
        }
    }
}
