//! Building blocks of the OpenAPI document: the text rule as patterns, and the request and
//! response schemas shared in `components/schemas` (docs/api.md says how they are kept exact).

use serde_json::{Map, Value, json};

/// White space that the server trims from single-line text (Unicode `White_Space` less the
/// control characters, which the text rule refuses before anything is trimmed).
const WS: &str = "[ \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";

/// One character of single-line text: anything but a control character (Unicode `Cc`,
/// U+0000 to U+001F and U+007F to U+009F) or a bidirectional embedding, override or isolate
/// (U+202A to U+202E, U+2066 to U+2069), as [`crate::web::input::check_text`] enforces.
const CHAR: &str = "[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]";

/// A string of single-line text: no control characters.
pub fn text() -> Value {
    json!({"type": "string", "pattern": format!("^{CHAR}*$")})
}

/// Single-line text of at most `max` characters.
pub fn text_max(max: u32) -> Value {
    json!({"type": "string", "pattern": format!("^{CHAR}*$"), "maxLength": max})
}

/// Text of several lines (`command`, `env`, `secret_env`): tabs and line breaks allowed.
pub fn lines(max: u32) -> Value {
    json!({"type": "string", "pattern": "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]*$", "maxLength": max})
}

/// Single-line text with at least one character that is not white space, at most `max`
/// characters (white space around it is trimmed by the server).
pub fn required_text(max: u32) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": max,
        "pattern": format!("^{CHAR}*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]{CHAR}*$")})
}

/// An identifier-like name ([`crate::domain::ident`]): a letter or digit, then letters,
/// digits, `.`, `_` or `-`, at most `max` characters; white space around it is trimmed.
pub fn ident(max: u32) -> Value {
    json!({"type": "string", "pattern": format!("^{WS}*[A-Za-z0-9][A-Za-z0-9._-]{{0,{}}}{WS}*$", max - 1)})
}

/// A share of the parent ([`crate::domain::Share::parse_percent`]): a number from 0 to 100
/// with at most two decimals, or the same as text with an optional `%` and a decimal point or
/// comma (`12,5`).
pub fn share() -> Value {
    let num = "(0*(100([.,]0{0,2})?|[0-9]{1,2}([.,][0-9]{0,2})?)|[.,][0-9]{1,2})";
    json!({"oneOf": [
        {"type": "number", "minimum": 0, "maximum": 100, "multipleOf": 0.01},
        {"type": "string", "pattern": format!("^{WS}*{num}{WS}*%*{WS}*$"), "examples": ["12.5", "12.5%", "12,5"]}
    ]})
}

/// A 64-bit integer.
pub fn int() -> Value {
    json!({"type": "integer", "format": "int64"})
}

/// An integer from `min` to `max`.
pub fn int_in(min: i64, max: i64) -> Value {
    json!({"type": "integer", "format": "int64", "minimum": min, "maximum": max})
}

/// A number (JSON float).
pub fn num() -> Value {
    json!({"type": "number"})
}

/// A string (a response field: no rule on its characters).
pub fn s() -> Value {
    json!({"type": "string"})
}

/// A boolean.
pub fn b() -> Value {
    json!({"type": "boolean"})
}

/// `v` or `null`.
pub fn nullable(v: Value) -> Value {
    match v.get("type").and_then(Value::as_str) {
        Some(t) => {
            let mut v = v.clone();
            v["type"] = json!([t, "null"]);
            v
        }
        None => json!({"anyOf": [v, {"type": "null"}]}),
    }
}

/// A JSON object of any fields, or `null`: a record's state before or after a change in the
/// audit log, whose fields are the record's own.
pub fn free_object() -> Value {
    json!({"type": ["object", "null"], "additionalProperties": true})
}

/// Queue waits by class (`metrics::ClassWaits`): runs counted, median and 90th percentile in
/// seconds, for all runs and per class.
fn class_waits() -> Value {
    let waits = obj(&[("runs", int()), ("p50_s", num()), ("p90_s", num())]);
    obj(&[
        ("all", waits.clone()),
        ("debug", waits.clone()),
        ("protected", waits.clone()),
        ("unallocated", waits),
    ])
}

/// An array of `items`.
pub fn arr(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// A reference to `components/schemas/NAME`.
pub fn sref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// A response object whose listed fields are all present (others may follow).
pub fn obj(fields: &[(&str, Value)]) -> Value {
    let props: Map<String, Value> = fields
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect();
    let required: Vec<&str> = fields.iter().map(|(k, _)| *k).collect();
    json!({"type": "object", "required": required, "properties": props})
}

/// A request body: `required` fields must be given, `optional` ones may be, nothing else is
/// accepted (the server's structs deny unknown fields).
pub fn body(required: &[(&str, Value)], optional: &[(&str, Value)]) -> Value {
    let props: Map<String, Value> = required
        .iter()
        .chain(optional)
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect();
    let names: Vec<&str> = required.iter().map(|(k, _)| *k).collect();
    json!({"type": "object", "required": names, "properties": props, "additionalProperties": false})
}

/// The stable error codes of `{"error": {"code"}}`.
pub const ERROR_CODES: &[&str] = &[
    "invalid_input",
    "invalid_text",
    "idempotency_mismatch",
    "malformed_request",
    "not_found",
    "conflict",
    "capacity_exceeded",
    "budget_exceeded",
    "price_changed",
    "not_cancellable",
    "larger_than_cluster",
    "model_not_in_cluster",
    "not_waiting_approval",
    "flag_cleared",
    "undeclared_node",
    "inventory_mismatch",
    "node_in_use",
    "stale_session",
    "session_replaced",
    "not_agent_cluster",
    "not_assigned",
    "slurm_unreachable",
    "slurm_refused",
    "payload_too_large",
    "unauthorized",
    "forbidden",
    "csrf_failed",
    "method_not_allowed",
    "internal",
    "unavailable",
    "name_taken",
    "malformed_file",
    "currency_mismatch",
    "rule_exists",
    "nothing_to_acknowledge",
    "already_triggered",
    "active_runs",
    "active_contracts",
];

/// The request body schemas.
pub fn requests() -> Vec<(&'static str, Value)> {
    let name64 = ident(64);
    vec![
        (
            "SharesBody",
            body(
                &[(
                    "shares",
                    arr(body(&[("node", int()), ("share", share())], &[])),
                )],
                &[],
            ),
        ),
        (
            "NewNode",
            body(
                &[
                    ("parent", int()),
                    ("name", node_name()),
                    ("kind", json!({"enum": ["group", "project"]})),
                    ("share", share()),
                ],
                &[],
            ),
        ),
        (
            "NodePatch",
            json!({"type": "object", "additionalProperties": false, "minProperties": 1, "maxProperties": 1,
                "description": "exactly one of name, parent or archived per request, so each change stands or fails alone",
                "properties": {"name": node_name(), "parent": int(), "archived": {"type": "boolean", "description": "true archives the node; false is refused (422): archived nodes are not restored through the API"}}}),
        ),
        (
            "BudgetUpdate",
            json!({"type": "object", "additionalProperties": false,
                "description": "omitted fields keep their value; null clears the period budget override or the money cap",
                "properties": {
                    "period_budget_minor": nullable(int_in(0, 1_000_000_000_000_000)),
                    "money_cap_minor": nullable(int_in(0, 1_000_000_000_000_000)),
                    "self_service_gpu_hours": int_in(0, 100_000),
                    "alert_thresholds": {"type": ["array", "null"], "items": int_in(1, 100), "maxItems": 10, "uniqueItems": true,
                        "description": "percent of the period budget; omitted or null keeps the current ones"}}}),
        ),
        (
            "MeBody",
            body(
                &[(
                    "email",
                    json!({"type": "string", "maxLength": 254, "description": "an e-mail address with a dot in its domain, or empty to clear it",
                        "pattern": format!("^{WS}*([A-Za-z0-9.!#$%&'*+/=?^_`{{|}}~-]+@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+)?{WS}*$")}),
                )],
                &[],
            ),
        ),
        ("MemberBody", body(&[("user", name64.clone())], &[])),
        ("NameBody", body(&[("name", name64.clone())], &[])),
        (
            "NodeBody",
            body(
                &[
                    ("name", name64.clone()),
                    ("gpu_model", ident(32)),
                    ("gpu_count", int_in(1, 64)),
                ],
                &[],
            ),
        ),
        (
            "HardwareBody",
            body(
                &[("gpu_model", ident(32)), ("gpu_count", int_in(1, 64))],
                &[],
            ),
        ),
        (
            "StateBody",
            body(
                &[("state", json!({"enum": ["up", "draining", "down"]}))],
                &[("reason", nullable(text_max(1000)))],
            ),
        ),
        ("ReasonBody", body(&[("reason", required_text(1000))], &[])),
        ("DrainBody", body(&[("reason", required_text(1000))], &[])),
        (
            "ModelBody",
            body(
                &[
                    ("billing_weight_milli", int_in(1, 100_000)),
                    ("price_per_gpu_hour_minor", int_in(0, 100_000_000)),
                ],
                &[("name", ident(32))],
            ),
        ),
        (
            "UserBody",
            body(
                &[
                    ("name", name64.clone()),
                    (
                        "role",
                        json!({"enum": ["admin", "finance", "lead", "researcher"]}),
                    ),
                ],
                &[(
                    "node",
                    nullable(
                        json!({"type": "string", "pattern": format!("^{CHAR}*$"), "description": "the tree node a lead leads (required for lead, refused for other roles)"}),
                    ),
                )],
            ),
        ),
        (
            "GrantBody",
            body(
                &[(
                    "role",
                    json!({"enum": ["admin", "finance", "lead", "researcher"]}),
                )],
                &[("node", nullable(text()))],
            ),
        ),
        (
            "ContractBody",
            body(
                &[
                    ("project", required_text(64)),
                    ("cluster", required_text(64)),
                    ("gpu_model", required_text(32)),
                    ("gpus", int_in(1, 100_000)),
                    (
                        "start",
                        json!({"type": "string", "pattern": format!("^{CHAR}*$"), "description": "RFC 3339 with an offset, or wall-clock (2026-12-01 09:00) with time_zone"}),
                    ),
                    (
                        "end",
                        json!({"type": "string", "pattern": format!("^{CHAR}*$"), "description": "exclusive; same forms as start; at least a minute after start"}),
                    ),
                ],
                &[
                    (
                        "expected_price_minor",
                        json!({"type": ["integer", "null"], "format": "int64", "description": "the price from a quote; the purchase is refused with price_changed if it differs"}),
                    ),
                    (
                        "time_zone",
                        json!({"type": ["string", "null"], "pattern": format!("^{CHAR}*$"), "description": "IANA zone for wall-clock times; a time in a repeated hour means its first occurrence, a time that does not exist is refused"}),
                    ),
                ],
            ),
        ),
        ("NewRun", new_run()),
        ("Decision", body(&[], &[("reason", text_max(2000))])),
        (
            "AgentRegister",
            body(
                &[(
                    "nodes",
                    json!({"type": "array", "minItems": 1, "maxItems": 1024, "items": body(&[("name", text()), ("gpus", int_in(1, 64)), ("gpu_model", text())], &[])}),
                )],
                // A label the agent makes up (host and process): bidirectional formatting
                // characters allowed, control characters not (`web::input::MACHINE_LABELS`).
                &[
                    (
                        "agent",
                        nullable(
                            json!({"type": "string", "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$", "maxLength": 200}),
                        ),
                    ),
                    ("previous_session", nullable(text_max(200))),
                ],
            ),
        ),
        ("AgentStop", body(&[("session", text())], &[])),
        (
            "AgentSync",
            json!({"type": "object", "required": ["session", "nodes"], "additionalProperties": false,
                "dependentRequired": {"running_count": ["running_digest", "since"], "running_digest": ["running_count", "since"], "started_up_to": ["since"]},
                "properties": {
                "session": text_max(crate::runs::agents::MAX_SESSION_CHARS as u32), "wait_s": int_in(0, 30),
                "running_count": {"type": "integer", "minimum": 0, "maximum": crate::runs::agents::MAX_RUNNING_COUNT, "description": "delta syncs: how many processes the agent runs on these nodes; runs may then leave out running processes an earlier answer acknowledged (docs/agent-protocol.md, Running-set digest)"},
                "started_up_to": {"type": "integer", "minimum": 1, "maximum": crate::runs::agents::MAX_RUN_ID, "description": "delta syncs: the highest run id among the processes the agent started; a server restored onto a new machine continues its run ids above it (docs/agent-protocol.md section 2)"},
                "running_digest": {"type": "integer", "minimum": 0, "maximum": crate::agent::DIGEST_MODULUS - 1, "description": "with running_count: the sum modulo 2^61 - 1 of the first 60 bits of SHA-256 of run:attempt:node of each of those processes"},
                "since": {"type": ["integer", "null"], "minimum": 0, "description": "the answer version the agent holds: only orders changed after it come back (docs/agent-protocol.md); absent = the whole state"},
                "nodes": arr(json!({"type": "object", "required": ["node"], "additionalProperties": false, "properties": {"node": int(), "utilization": arr(nullable(int_in(0, 100)))}})),
                "runs": arr(json!({"type": "object", "required": ["run", "attempt", "node", "state"], "additionalProperties": false, "properties": {"run": int(), "attempt": int(), "node": int(), "state": {"enum": ["running", "exited"]}, "exit_code": {"type": ["integer", "null"], "minimum": -1, "maximum": 255, "description": "exit status of an exited process, 0 to 255, or -1 when the agent could not learn it; an exited report has exactly one of exit_code and signal, a running one neither (else 422 invalid_input on exit_code)"}, "signal": {"type": ["integer", "null"], "minimum": 1, "maximum": 64, "description": "the signal that killed the process, 1 to 64 (the run's exit code is 128 plus it); another number is 422 invalid_input on signal"}, "exited_s_ago": {"type": ["integer", "null"], "minimum": 0, "maximum": 604800, "description": "for an exited process, how many whole seconds ago it ended by the agent's clock (absent: now); the run ends and is charged at that instant; outside 0 to 604800, or on a running report, 422 invalid_input on exited_s_ago"}, "fault": {"type": ["string", "null"], "minLength": 1, "maxLength": 500, "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u200b-\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060-\\u2069\\ufeff]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u200b-\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060-\\u2069\\ufeff][^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u200b-\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060-\\u2069\\ufeff]*$", "description": "for an exited process whose command never ran because of its node (the agent's state or log directory cannot be written, no process can be started): why, one line; the run is requeued and the node drained (docs/agent-protocol.md section 2); on a running report, blank or over 500 characters, 422 invalid_input on fault"}}}))}}),
        ),
        (
            "UseCaseBody",
            body(
                &[
                    ("name", required_text(120)),
                    ("owner_node_id", int()),
                    ("bag", json!({"enum": ["personal", "team", "critical"]})),
                    ("monthly_limit_minor", int_in(1, 1_000_000_000_000_000)),
                    ("metric", required_text(2000)),
                ],
                &[
                    ("allowed_data", text_max(2000)),
                    ("ai_action", text_max(2000)),
                    ("human_review", text_max(2000)),
                    (
                        "stop_rule",
                        json!({"type": "string", "pattern": format!("^{CHAR}*$"), "maxLength": 2000, "description": "required (not blank) for the critical bag"}),
                    ),
                    (
                        "services",
                        json!({"type": "array", "maxItems": 50, "items": text_max(200)}),
                    ),
                    ("project_ids", arr(int())),
                    ("human_hourly_rate_minor", int_in(0, 100_000_000)),
                ],
            ),
        ),
        (
            "UseCaseStatus",
            body(
                &[(
                    "status",
                    json!({"enum": ["proposed", "pilot", "active", "stopped"]}),
                )],
                &[],
            ),
        ),
        (
            "ReviewBody",
            body(
                &[
                    ("month", month()),
                    ("decision", json!({"enum": ["continue", "expand", "stop"]})),
                    ("metric_value", required_text(500)),
                ],
                &[
                    (
                        "new_limit_minor",
                        json!({"type": ["integer", "null"], "format": "int64", "minimum": 0, "maximum": 1_000_000_000_000_000i64, "description": "only with expand, and then above the current limit"}),
                    ),
                    ("comment", text_max(2000)),
                ],
            ),
        ),
        (
            "HoursBody",
            body(
                &[
                    ("month", month()),
                    (
                        "hours",
                        json!({"oneOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": 74_400}, {"type": "string", "pattern": "^[0-9]+(\\.[0-9]{1,2}0*)?$"}], "description": "decimal hours, more than zero and at most 74,400 (a month's work), with at most two decimals and a whole number of minutes (steps of 0.05); more decimals or more hours are refused (422), never rounded"}),
                    ),
                    (
                        "activity",
                        json!({"enum": ["data", "review", "exceptions"]}),
                    ),
                ],
                &[("note", text_max(500))],
            ),
        ),
        (
            "NoteBody",
            body(&[], &[("note", text_max(2000)), ("reason", text_max(2000))]),
        ),
        (
            "SpendRuleBody",
            body(
                &[("use_case_id", int())],
                &[
                    (
                        "source",
                        json!({"enum": ["any", "openai", "anthropic", "github", "focus"], "default": "any"}),
                    ),
                    ("service", text_max(200)),
                    (
                        "scope",
                        json!({"type": "string", "pattern": format!("^{CHAR}*$"), "maxLength": 200, "description": "project id, workspace id, cost centre, organization, sub-account or tag key=value; a rule needs a service, a scope or both"}),
                    ),
                ],
            ),
        ),
    ]
}

/// A tree node's display name ([`crate::domain::node_name`]): 1 to 64 characters after
/// trimming, no control or invisible formatting characters.
fn node_name() -> Value {
    json!({"type": "string", "maxLength": 64, "minLength": 1,
        "pattern": format!("^{WS}*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2069\\ufeff\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]([^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2069\\ufeff]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2069\\ufeff\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000])?{WS}*$")})
}

/// A budget period `YYYY-MM`.
pub fn month() -> Value {
    json!({"type": "string", "pattern": "^[0-9]{4}-(0[1-9]|1[0-2])$", "examples": ["2026-11"]})
}

fn new_run() -> Value {
    let env_name = "^(?!TRANCHE_|CUDA_VISIBLE_DEVICES$)[A-Za-z_][A-Za-z0-9_]{0,127}$";
    let env = json!({"type": "object", "maxProperties": 64,
        "propertyNames": {"pattern": env_name}, "additionalProperties": lines(4096)});
    let mut secret = env.clone();
    secret["description"] = json!(
        "variables kept secret: stored sealed, shown as •••• (run details list their names in secret_env), given only to the agent that runs the attempt"
    );
    let mut env = env;
    env["description"] = json!(
        "variables whose names contain TOKEN, SECRET, KEY or PASSWORD (any case) are kept secret like secret_env; a name may not be in both; at most 64 in env and secret_env together"
    );
    body(
        &[
            ("project", required_text(64)),
            ("cluster", required_text(64)),
            ("gpu_model", required_text(32)),
            (
                "gpus",
                json!({"type": "integer", "format": "int64", "minimum": 1, "maximum": 100_000, "description": "a gang: all start together or none"}),
            ),
            (
                "min_runtime_s",
                json!({"type": "integer", "format": "int64", "minimum": 0, "maximum": 28_800, "description": "seconds protected from preemption (0 = unallocated: free, preemptible); at most the site maximum (8 h by default) and the time limit"}),
            ),
            ("time_limit_s", int_in(1, 2_592_000)),
            ("command", {
                let mut c = lines(8192);
                c["pattern"] = json!(
                    "^[\\t\\n\\r ]*[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069][^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]*$"
                );
                c["minLength"] = json!(1);
                c["description"] = json!(
                    "run with sh -c; CUDA_VISIBLE_DEVICES and TRANCHE_RUN_ID are set; 1 to 8192 characters after trimming"
                );
                c
            }),
        ],
        &[
            (
                "priority",
                json!({"type": "integer", "minimum": -1000, "maximum": 1000, "default": 0, "description": "orders runs within the project only"}),
            ),
            (
                "resumable",
                json!({"type": "boolean", "default": false, "description": "requeued after a preemption (true) or ends as preempted"}),
            ),
            (
                "workdir",
                json!({"type": ["string", "null"], "maxLength": 4096, "pattern": format!("^{WS}*(/{CHAR}*)?$"), "description": "absolute path on the node; empty or null means the agent's"}),
            ),
            ("env", env),
            ("secret_env", secret),
        ],
    )
}

/// The response body schemas.
pub fn responses() -> Vec<(&'static str, Value)> {
    let id_name = || obj(&[("id", int()), ("name", s())]);
    let grant = obj(&[("id", int()), ("node_id", nullable(int())), ("role", s())]);
    let node = obj(&[
        ("id", int()),
        ("cluster_id", int()),
        ("name", s()),
        ("gpu_model", s()),
        ("gpu_count", int()),
        ("state", json!({"enum": ["up", "draining", "down"]})),
        ("status", s()),
        ("last_heartbeat", nullable(s())),
    ]);
    let model = obj(&[
        ("id", int()),
        ("name", s()),
        ("billing_weight_milli", int()),
        ("price_per_gpu_hour_minor", int()),
    ]);
    let drain = obj(&[
        ("id", int()),
        ("node_id", int()),
        ("reason", s()),
        ("drained_at", s()),
        ("drained_by", nullable(s())),
        ("emptied_at", nullable(s())),
        ("needed_human", b()),
        ("returned_at", nullable(s())),
        ("returned_by", nullable(s())),
    ]);
    let run_row = || {
        obj(&[
            ("id", int()),
            ("project", s()),
            ("project_id", int()),
            ("cluster", s()),
            ("gpu_model", s()),
            ("gpus", int()),
            ("min_runtime_s", int()),
            ("time_limit_s", int()),
            ("priority", int()),
            ("resumable", b()),
            ("command", s()),
            ("state", s()),
            ("attempt", int()),
            ("submitted_by", s()),
            ("submitted_at", s()),
            ("started_at", nullable(s())),
            ("ended_at", nullable(s())),
            ("exit_code", nullable(int())),
            ("wait_reason", nullable(s())),
            ("position_in_project", nullable(int())),
            ("decision_reason", nullable(s())),
            ("estimated_start", nullable(s())),
        ])
    };
    let preview = obj(&[
        ("balance_minor", int()),
        ("contract_milli_gpu_hours", int()),
        ("cost_minor", int()),
        ("free", b()),
        ("needs_approval", b()),
        ("protected_milli_gpu_hours", int()),
        ("self_service_gpu_hours", int()),
    ]);
    let contract = obj(&[
        ("id", int()),
        ("project", s()),
        ("cluster", s()),
        ("gpu_model", s()),
        ("gpus", int()),
        ("start", s()),
        ("end", s()),
        ("hours", num()),
        ("price_minor", int()),
        ("currency", s()),
        (
            "state",
            json!({"enum": ["scheduled", "active", "ended", "cancelled"], "description": "scheduled: bought, its window not begun (cancellable, refunded); active: its window under way; ended: its window over; cancelled"}),
        ),
        ("refund_minor", nullable(int())),
        ("bought_by", nullable(s())),
    ]);
    let use_case = obj(&[
        ("id", int()),
        ("name", s()),
        ("owner_node_id", int()),
        ("bag", json!({"enum": ["personal", "team", "critical"]})),
        (
            "status",
            json!({"enum": ["proposed", "pilot", "active", "stopped"]}),
        ),
        ("monthly_limit_minor", int()),
        ("metric", s()),
        ("stop_rule", s()),
        ("services", arr(s())),
        ("project_ids", arr(int())),
        ("human_hourly_rate_minor", int()),
        ("hidden_projects", int()),
    ]);
    let mut use_case_spend = use_case.clone();
    if let Some(r) = use_case_spend["required"].as_array_mut() {
        r.extend([json!("human"), json!("spend")]);
    }
    use_case_spend["properties"]["human"] = obj(&[("minutes", int()), ("cost_minor", int())]);
    use_case_spend["properties"]["spend"] = obj(&[
        ("gpu_minor", int()),
        ("imported_micro", int()),
        ("total_minor", int()),
        ("over_limit", b()),
    ]);
    let empty_ok = || obj(&[("ok", json!({"const": true}))]);
    vec![
        (
            "Error",
            obj(&[(
                "error",
                obj(&[
                    ("code", json!({"type": "string", "enum": ERROR_CODES})),
                    ("message", s()),
                    ("field", nullable(s())),
                ]),
            )]),
        ),
        ("Ok", empty_ok()),
        ("Created", obj(&[("id", int())])),
        (
            "Me",
            obj(&[
                ("id", int()),
                ("name", s()),
                ("email", nullable(s())),
                ("roles", arr(s())),
                ("grants", arr(grant.clone())),
                ("projects", arr(id_name())),
            ]),
        ),
        (
            "Tree",
            obj(&[
                ("currency", s()),
                (
                    "period",
                    obj(&[
                        ("start", s()),
                        ("end", s()),
                        ("hours", num()),
                        ("time_zone", s()),
                    ]),
                ),
                (
                    "nodes",
                    arr(obj(&[
                        ("id", int()),
                        ("parent_id", nullable(int())),
                        ("name", s()),
                        ("kind", json!({"enum": ["group", "project"]})),
                        ("depth", int()),
                        ("share_percent", num()),
                        ("share_bp", int()),
                        ("effective_share_percent", num()),
                        (
                            "entitlements",
                            arr(obj(&[
                                ("cluster", s()),
                                ("gpu_model", s()),
                                ("gpu_hours", num()),
                                ("money_minor", int()),
                            ])),
                        ),
                        ("entitlement_money_minor", int()),
                    ])),
                ),
            ]),
        ),
        (
            "Clusters",
            obj(&[
                (
                    "clusters",
                    arr(obj(&[
                        ("id", int()),
                        ("name", s()),
                        ("gpus", arr(obj(&[("gpu_model", s()), ("count", int())]))),
                        ("nodes", arr(node.clone())),
                    ])),
                ),
                ("gpu_models", arr(model.clone())),
                ("currency", s()),
            ]),
        ),
        (
            "GpuModels",
            obj(&[("gpu_models", arr(model)), ("currency", s())]),
        ),
        (
            "ClusterNode",
            obj(&[
                ("node", node),
                ("drain", nullable(drain.clone())),
                ("empty_ready_for_repair", b()),
                ("drains", arr(drain)),
            ]),
        ),
        (
            "Project",
            obj(&[
                ("id", int()),
                ("name", s()),
                ("share_bp", int()),
                ("effective_share_percent", num()),
                ("entitlement_money_minor", int()),
                ("period_budget_minor", int()),
                ("period_budget_override_minor", nullable(int())),
                ("money_cap_minor", nullable(int())),
                ("self_service_gpu_hours", int()),
                ("balance_minor", int()),
                ("members", arr(id_name())),
                ("currency", s()),
            ]),
        ),
        (
            "IdleFlags",
            obj(&[
                ("threshold_percent", int()),
                ("idle_after_s", int()),
                ("currency", s()),
                (
                    "flags",
                    arr(obj(&[
                        ("id", int()),
                        ("run_id", int()),
                        ("attempt", int()),
                        ("project_id", int()),
                        ("project", s()),
                        ("idle_value_minor", int()),
                        ("free", b()),
                    ])),
                ),
            ]),
        ),
        (
            "Users",
            obj(&[(
                "users",
                arr(obj(&[
                    ("id", int()),
                    ("name", s()),
                    ("disabled", b()),
                    (
                        "grants",
                        arr(obj(&[
                            ("id", int()),
                            ("node_id", nullable(int())),
                            ("node_name", nullable(s())),
                            ("role", s()),
                            ("source", json!({"enum": ["manual", "idp"]})),
                        ])),
                    ),
                ])),
            )]),
        ),
        (
            "UserCreated",
            obj(&[
                ("id", int()),
                ("name", s()),
                (
                    "password",
                    json!({"type": "string", "description": "shown once; never again"}),
                ),
            ]),
        ),
        (
            "Tokens",
            obj(&[(
                "tokens",
                arr(obj(&[
                    ("id", int()),
                    ("label", s()),
                    ("created_at", s()),
                    ("last_used_at", nullable(s())),
                    ("revoked_at", nullable(s())),
                ])),
            )]),
        ),
        ("Contract", contract.clone()),
        ("ContractRepeated", {
            let mut c = contract.clone();
            c["properties"]["repeated"] = json!({"const": true});
            if let Some(r) = c["required"].as_array_mut() {
                r.push(json!("repeated"));
            }
            c
        }),
        ("Contracts", obj(&[("contracts", arr(contract))])),
        (
            "Quote",
            obj(&[
                (
                    "quote",
                    obj(&[
                        ("price_minor", int()),
                        ("gpu_hours", num()),
                        ("gpus", int()),
                        ("seconds", int()),
                        ("installed", int()),
                        ("contractable", int()),
                        ("peak_contracted", int()),
                        ("balance_minor", int()),
                    ]),
                ),
                ("start", s()),
                ("end", s()),
                ("currency", s()),
            ]),
        ),
        (
            "Capacity",
            obj(&[
                ("cluster", s()),
                ("gpu_model", s()),
                (
                    "calendar",
                    obj(&[
                        ("installed", int()),
                        ("contractable", int()),
                        ("hours", arr(obj(&[("start", s()), ("contracted", int())]))),
                    ]),
                ),
            ]),
        ),
        (
            "Spend",
            obj(&[
                ("period", s()),
                ("currency", s()),
                (
                    "rows",
                    arr(obj(&[
                        ("node", s()),
                        ("node_id", int()),
                        ("depth", int()),
                        ("archived", b()),
                        ("gpu_model", s()),
                        ("period", s()),
                        ("contract_minor", int()),
                        ("contract_gpu_hours", num()),
                        ("run_minor", int()),
                        ("run_gpu_hours", num()),
                        ("free_gpu_hours", num()),
                        ("spend_minor", int()),
                        ("entitlement_gpu_hours", num()),
                        ("entitlement_minor", int()),
                        ("budget_minor", nullable(int())),
                        ("cap_minor", nullable(int())),
                        ("forecast_minor", nullable(int())),
                    ])),
                ),
            ]),
        ),
        (
            "Metrics",
            obj(&[
                ("from", s()),
                ("to", s()),
                ("window", s()),
                ("scope", s()),
                (
                    "pools",
                    arr(obj(&[
                        ("cluster", s()),
                        ("gpu_model", s()),
                        ("installed_gpu_hours", num()),
                        ("allocated_gpu_hours", num()),
                        ("unallocated_gpu_hours", num()),
                        ("availability", nullable(num())),
                        ("occupancy", nullable(num())),
                        ("utilization", nullable(num())),
                        ("impact", nullable(num())),
                        ("from", int()),
                        ("to", int()),
                        ("healthy_gpu_hours", num()),
                        ("occupancy_allocated", nullable(num())),
                        ("occupancy_unallocated", nullable(num())),
                        ("projects_served_share", nullable(num())),
                        ("utilization_coverage", nullable(num())),
                        ("preemptions", int()),
                        ("preemptions_per_1000_gpu_hours", nullable(num())),
                        (
                            "projects",
                            arr(obj(&[
                                ("id", int()),
                                ("name", s()),
                                ("share", num()),
                                ("owed_gpu_hours", num()),
                                ("received_gpu_hours", num()),
                                ("received_of_owed_gpu_hours", num()),
                                ("impact", nullable(num())),
                            ])),
                        ),
                        ("waits", class_waits()),
                    ])),
                ),
                (
                    "drains",
                    obj(&[
                        ("drains", int()),
                        ("emptied_by_themselves", int()),
                        ("needed_human", int()),
                        ("in_progress", int()),
                    ]),
                ),
            ]),
        ),
        (
            "Ledger",
            obj(&[
                ("project", s()),
                ("currency", s()),
                ("balance_minor", int()),
                (
                    "entries",
                    arr(obj(&[
                        ("id", int()),
                        ("at", s()),
                        ("kind", s()),
                        ("amount_minor", int()),
                        ("period_start", s()),
                        ("gpu_model", nullable(s())),
                        ("gpu_seconds", int()),
                        ("run_id", nullable(int())),
                        ("contract_id", nullable(int())),
                        ("note", s()),
                    ])),
                ),
                ("next_before", nullable(int())),
            ]),
        ),
        (
            "Notifications",
            obj(&[(
                "notifications",
                arr(obj(&[
                    ("id", int()),
                    ("created_at", s()),
                    ("message", s()),
                    ("link", s()),
                    ("read", b()),
                ])),
            )]),
        ),
        (
            "Alerts",
            obj(&[(
                "alerts",
                arr(obj(&[
                    ("project_id", int()),
                    ("project", s()),
                    ("threshold_pct", int()),
                    ("kind", s()),
                    ("fired_at", s()),
                ])),
            )]),
        ),
        ("MarkedRead", obj(&[("marked_read", int())])),
        (
            "Audit",
            obj(&[
                (
                    "entries",
                    arr(obj(&[
                        ("id", int()),
                        ("at", s()),
                        ("actor", nullable(s())),
                        ("action", s()),
                        ("entity", s()),
                        ("entity_id", nullable(int())),
                        ("node_id", nullable(int())),
                        ("before", free_object()),
                        ("after", free_object()),
                    ])),
                ),
                ("next_before", nullable(int())),
            ]),
        ),
        ("Runs", obj(&[("runs", arr(run_row()))])),
        (
            "RunPage",
            obj(&[("runs", arr(run_row())), ("next_before", nullable(int()))]),
        ),
        (
            "RunSubmitted",
            obj(&[
                ("id", int()),
                ("state", json!({"enum": ["queued", "waiting_approval"]})),
                ("preview", preview.clone()),
                ("cost", s()),
            ]),
        ),
        (
            "RunRepeated",
            obj(&[
                ("id", int()),
                ("state", s()),
                ("repeated", json!({"const": true})),
            ]),
        ),
        ("RunPreview", obj(&[("preview", preview), ("cost", s())])),
        ("RunDetail", {
            let mut d = run_row();
            for (k, v) in [
                ("can_cancel", b()),
                ("can_decide", b()),
                (
                    "env",
                    json!({"type": "object", "additionalProperties": {"type": "string"}}),
                ),
                ("secret_env", arr(s())),
                ("workdir", nullable(s())),
                (
                    "events",
                    arr(obj(&[
                        ("at", s()),
                        ("attempt", int()),
                        ("kind", s()),
                        ("message", s()),
                        ("for_run", nullable(int())),
                    ])),
                ),
                (
                    "placements",
                    arr(obj(&[
                        ("attempt", int()),
                        ("node", s()),
                        ("gpus", arr(int())),
                        ("process", s()),
                        ("exit_code", nullable(int())),
                    ])),
                ),
                (
                    "charges",
                    obj(&[
                        ("charged_minor", int()),
                        ("charged_gpu_seconds", int()),
                        ("prepaid_gpu_seconds", int()),
                        ("free_gpu_seconds", int()),
                    ]),
                ),
            ] {
                if let Some(r) = d["required"].as_array_mut() {
                    r.push(json!(k));
                }
                d["properties"][k] = v;
            }
            d
        }),
        ("RunState", obj(&[("id", int()), ("state", s())])),
        (
            "AgentRegistered",
            obj(&[
                ("session", s()),
                (
                    "nodes",
                    arr(obj(&[("id", int()), ("name", s()), ("kept", b())])),
                ),
                ("heartbeat_s", int()),
                ("timeout_s", int()),
            ]),
        ),
        ("AgentStopped", obj(&[("nodes", int())])),
        ("AgentOrders", {
            let mut o = obj(&[
                (
                    "assignments",
                    arr(obj(&[
                        ("run", int()),
                        ("attempt", int()),
                        ("node", int()),
                        ("gpus", arr(int())),
                        ("command", s()),
                        ("workdir", nullable(s())),
                        (
                            "env",
                            json!({"type": "object", "additionalProperties": {"type": "string"}}),
                        ),
                        ("user", s()),
                    ])),
                ),
                (
                    "stops",
                    arr(obj(&[
                        ("run", int()),
                        ("attempt", int()),
                        ("node", int()),
                        ("grace_s", int()),
                    ])),
                ),
            ]);
            o["description"] = json!(
                "the whole desired state of the agent's nodes, or with since the orders changed after it (docs/agent-protocol.md section 2)"
            );
            o["properties"]["version"] = json!({"type": "integer", "description": "delta syncs: the version these orders bring the agent to"});
            o["properties"]["full"] = json!({"type": "boolean", "description": "delta syncs: the lists are the whole desired state"});
            o["properties"]["report_running"] = json!({"type": "boolean", "description": "the running set's count or digest differs from the server's: list every running process in the next sync"});
            o
        }),
        ("UseCase", use_case.clone()),
        ("UseCaseWithSpend", use_case_spend.clone()),
        (
            "UseCases",
            obj(&[
                ("period_start", s()),
                ("currency", s()),
                ("use_cases", arr(use_case_spend)),
            ]),
        ),
        (
            "UseCaseStatusAnswer",
            obj(&[("id", int()), ("status", s())]),
        ),
        (
            "Reviews",
            obj(&[
                ("reviews", arr(sref("Review"))),
                (
                    "stop_triggers",
                    arr(obj(&[
                        ("id", int()),
                        ("period_start", s()),
                        ("reason", s()),
                        ("triggered_at", s()),
                        ("acknowledged_by", nullable(s())),
                        ("acknowledged_at", nullable(s())),
                        ("note", s()),
                    ])),
                ),
            ]),
        ),
        (
            "Review",
            obj(&[
                ("id", int()),
                ("use_case_id", int()),
                ("period_start", s()),
                ("decision", json!({"enum": ["continue", "expand", "stop"]})),
                ("new_limit_minor", nullable(int())),
                ("metric_value", s()),
                ("comment", s()),
                ("spent_minor", int()),
                ("limit_minor", int()),
                ("decided_by", nullable(s())),
                ("decided_at", s()),
            ]),
        ),
        (
            "HoursRecorded",
            obj(&[
                ("id", int()),
                ("minutes", int()),
                ("month_minutes", int()),
                ("month_human_cost_minor", int()),
            ]),
        ),
        (
            "Acknowledged",
            obj(&[("id", int()), ("acknowledged", json!({"const": true}))]),
        ),
        (
            "StopTriggered",
            obj(&[
                ("id", int()),
                ("stop_rule_triggered", json!({"const": true})),
            ]),
        ),
        (
            "Imports",
            obj(&[
                (
                    "imports",
                    arr(obj(&[
                        ("id", int()),
                        ("source", s()),
                        ("file_name", s()),
                        ("currency", s()),
                        ("rate_micro", nullable(int())),
                        ("rows_new", int()),
                        ("rows_skipped", int()),
                        ("amount_micro", int()),
                        ("imported_by", nullable(s())),
                        ("imported_at", s()),
                    ])),
                ),
                (
                    "unassigned",
                    obj(&[
                        ("count", int()),
                        ("amount_micro", int()),
                        (
                            "lines",
                            arr(obj(&[
                                ("id", int()),
                                ("source", s()),
                                ("service", s()),
                                ("description", s()),
                                ("amount_micro", int()),
                                ("original_amount", s()),
                                ("original_currency", s()),
                                ("period_start", s()),
                                ("scopes", arr(s())),
                            ])),
                        ),
                    ]),
                ),
            ]),
        ),
        (
            "ImportResult",
            obj(&[
                ("format", s()),
                ("currency", s()),
                ("rate", nullable(s())),
                ("lines", int()),
                ("new_lines", int()),
                ("skipped_lines", int()),
                ("already_imported", b()),
                ("amount_micro", int()),
                ("amount_minor", int()),
                (
                    "shares",
                    arr(obj(&[
                        ("use_case_id", nullable(int())),
                        ("use_case", s()),
                        ("lines", int()),
                        ("amount_micro", int()),
                    ])),
                ),
                (
                    "covers",
                    json!({"type": "array", "items": s(), "minItems": 2, "maxItems": 2}),
                ),
                ("import_id", nullable(int())),
                ("dry_run", b()),
            ]),
        ),
        (
            "Rules",
            obj(&[(
                "rules",
                arr(obj(&[
                    ("id", int()),
                    ("use_case_id", int()),
                    ("source", s()),
                    ("service", s()),
                    ("scope", s()),
                ])),
            )]),
        ),
        (
            "RuleCreated",
            obj(&[("id", int()), ("lines_assigned", int())]),
        ),
    ]
}

#[cfg(test)]
mod tests {
    /// Every code an error of the source can carry (`code: "..."` of `AppError::Refused` and
    /// `Unprocessable`, and those of `AppError::code`) is in the document's enum, so a client
    /// generated from it knows every answer.
    #[test]
    fn every_error_code_of_the_source_is_documented() {
        fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(std::fs::read_to_string(&p).unwrap());
                }
            }
        }
        let mut files = Vec::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        let mut codes = std::collections::BTreeSet::new();
        for text in &files {
            for part in text.split("code: \"").skip(1) {
                let code: String = part
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if part[code.len()..].starts_with('"') && !code.is_empty() {
                    codes.insert(code);
                }
            }
        }
        for e in [
            crate::error::AppError::Csrf,
            crate::error::AppError::TooLarge,
            crate::error::AppError::Unauthorized,
        ] {
            codes.insert(e.code().to_string());
        }
        assert!(codes.len() > 20, "{codes:?}");
        let missing: Vec<&String> = codes
            .iter()
            .filter(|c| !super::ERROR_CODES.contains(&c.as_str()))
            .collect();
        assert!(missing.is_empty(), "not in ERROR_CODES: {missing:?}");
    }
}
