# Tranche's interface in English. Every message here exists in es/ and eu/ with the same
# variables (src/i18n/completeness.rs). Domain terms: docs/glossary.md.

## Layout

nav-home = Home
nav-runs = Runs
nav-submit = Submit
nav-approvals = Approvals
nav-tree = Program tree
nav-capacity = Capacity
nav-contracts = Contracts
nav-ai = AI use cases
nav-spend = Spend
nav-metrics = Metrics
nav-audit = Audit log
nav-inventory = Inventory
nav-users = Users
nav-settings = Settings
nav-account = Account
layout-sign-out = Sign out
layout-language = Language
layout-language-saved = Language changed.

## Error pages

error-heading = { $status ->
    [400] Bad request
    [403] Forbidden
    [404] Not found
    [409] Conflict
    [413] Too large
    [422] Cannot be accepted
   *[other] Error
}
error-page-title = Error
error-back = Back to Tranche
error-internal = something went wrong on our side; it has been logged
error-unavailable = the database is unavailable for a moment; try again in a few seconds
error-csrf = the form expired or came from another site; reload the page and try again
error-no-such-page = there is no such page
error-form-only = this address takes a form when it is sent, not a visit: go back to the page the form was on
error-page-only = this address is a page to visit and takes no form: go back and send the form from its own page

## Sign in

login-title = Sign in
login-with = Sign in with { $provider }
login-or-password = Or with a Tranche password:
login-user = User name
login-password = Password
login-submit = Sign in
login-wrong = wrong user name or password
login-throttled = too many failed sign-ins for this name from your address: try again in { $seconds } s
login-local-off = password sign-in is turned off here: sign in with your organisation's account
login-directory-down = the organisation's directory cannot be reached; try again in a few minutes
login-provider-down = the organisation's identity provider cannot be reached; try again in a few minutes
login-provider-timeout = the organisation's identity provider cannot be reached or did not answer in time; try again in a few minutes
login-oidc-state = this sign-in does not belong to this browser session or was already used; start again with the sign-in button
login-oidc-refused = the identity provider refused the sign-in: { $why }
login-oidc-invalid = the identity provider's answer failed a check ({ $why }); nobody was signed in
login-no-access = your account is in none of the groups that give access to Tranche; ask an administrator to add you to one
login-name-taken = a Tranche account named { $name } already exists and is not linked to your organisation account; ask an administrator
login-disabled = this account is disabled in Tranche
signed-out-title = Signed out
signed-out-heading = Signed out of Tranche
signed-out-now = You are signed out of Tranche. Now signing you out at { $provider } too…
signed-out-continue = Continue to { $provider }

## Home

home-approvals = { $count ->
    [0] No runs wait for your approval.
    [one] { $shown } run waiting for your approval
   *[other] { $shown } runs waiting for your approval
}
home-title = Home
home-welcome = Welcome, { $name }
home-roles = Your roles:
home-no-roles = none yet — ask an admin.
home-period = Budget period: { $period } ({ $zone }).
home-period-range = { $start } to { $end } ({ $hours } h)
home-notifications = Notifications
home-mark-read = Mark all read
home-ai = AI use cases
home-idle = Idle GPUs (squatting)
home-idle-note = Runs whose GPUs all report under { $threshold }% utilization.
home-preemptions = Preemption notices
home-node-losses = Runs whose node was lost
home-run = Run { $id }
home-active-runs = Your active runs
home-no-active = None.
home-submit = Submit a run
home-all-runs = All your runs
home-led = Nodes you lead
home-led-share = { $share }% of the organisation
home-projects = Your projects
home-effective-share = Effective share
home-entitlement = Entitlement this period
home-see-tree = See the program tree
role-admin = admin
role-finance = finance
role-lead = lead
role-researcher = researcher

## Table headings used on several pages

th-what = What
th-state = State
th-command = Command
th-project = Project
th-cluster = Cluster
th-model = Model
th-gpu-model = GPU model
th-gpus = GPUs
th-node = Node
th-when = When
th-attempt = Attempt
th-details = Details

## Run states

state-waiting_approval = waiting approval
state-denied = denied
state-queued = queued
state-starting = starting
state-running = running
state-stopping = stopping
state-completed = completed
state-succeeded = succeeded
state-failed = failed
state-cancelled = cancelled
state-preempted = preempted
state-timeout = timeout
state-lost = lost

## Runs list

runs-title = Runs
runs-submit = Submit a run
runs-show = Show
runs-state = State
runs-project = Project
runs-cluster = Cluster
runs-filter = Filter
runs-none = No runs match.
runs-submitted = Submitted ({ $zone })
runs-any = any
runs-scope-all = everything I may see
runs-scope-mine = submitted by me
runs-scope-projects = my projects
runs-state-active = active
runs-shown-latest = { $shown ->
    [one] Showing the latest run of { $total }.
   *[other] Showing the latest { $shown } of { $total } runs.
}
runs-shown-all = { $total ->
    [one] Showing the only run.
   *[other] Showing all { $total } runs.
}
runs-shown-older = Showing runs { $from } to { $to } of { $total }, newest first.
runs-shown-none-older = { $total ->
    [one] No older runs; { $total } run matches in all.
   *[other] No older runs; { $total } runs match in all.
}
runs-pages = Pages of runs
runs-newest = Newest runs
runs-older = Older runs

## Why a run waits (the run page and lists)

run-waiting-estimated = { $reason }; estimated start { $at }
run-waiting-no-estimate = { $reason }; no estimated start yet
run-waiting-next-pass = waiting for the scheduler's next pass
wait-reserved-suffix = ; reserved start about { $at }
wait-fair-share = { $count ->
    [one] { $projects } comes first (within its entitlement or further below its fair share) and holds or waits for the GPUs it needs{ $reserved }
   *[other] { $more ->
        [0] { $projects }
       *[other] { $projects } and { $more } more
    } come first (within their entitlement or further below their fair share) and hold or wait for the GPUs it needs{ $reserved }
}
wait-position = { NUMBER($position, type: "ordinal") ->
    [one] { $position }st
    [two] { $position }nd
    [few] { $position }rd
   *[other] { $position }th
} in line in its project
wait-over-share = its project holds { $held } { $model } GPUs and its fair share (entitlement) is { $entitlement }; the other busy GPUs are within other projects' entitlements, so it waits for { $gpus } to free up{ $reserved }
wait-idle-gpus = unallocated: waits for { $gpus ->
    [one] { $gpus } idle GPU
   *[other] { $gpus } idle GPUs
} of its model ({ $free } idle now); it never preempts{ $waiting ->
    [0] {""}
    [one] ; 1 allocated run waiting for its model comes first
   *[other] ; { $waiting } allocated runs waiting for its model come first
}
wait-short-run-headroom = waits for { $gpus ->
    [one] { $gpus } GPU
   *[other] { $gpus } GPUs
}: { $free } idle now, of which the pool keeps { $kept } for short runs (time limit 15 minutes or less) so that they start at once
wait-reserved = waiting for { $gpus } { $model } { $gpus ->
    [one] GPU
   *[other] GPUs
}, { $free } idle now; reserved start about { $at }
wait-behind-reservation = GPUs are reserved for run { $run } from about { $at }, and this run would not end before then
wait-protected = the GPUs it could take are protected until { $until } (minimum runtime of the runs on them, or the capacity contract they run on)
wait-gpus = waiting for { $gpus } { $gpus ->
    [one] GPU
   *[other] GPUs
} of its model; { $free } free now
wait-nodes-draining = node draining: it needs { $gpus } GPUs and the ones it could take are on nodes being drained for repair
wait-budget = budget exhausted: its minimum runtime costs { $needs }, the project has { $has } left this period (it may still run unallocated with minimum runtime 0)
wait-unallocated-cap = project's cap of { $cap } unallocated GPUs reached ({ $held } in use)
wait-contracts = { $held } GPUs are held for other projects' capacity contracts (free, or lent to unallocated runs until a contract takes them back)
wait-in-line = in line: { $count ->
    [one] { $count } run
   *[other] { $count } runs
} ahead of it
wait-gpus-down = waiting for nodes that are down: it needs { $gpus } { $gpus ->
    [one] GPU
   *[other] GPUs
 } of its model, { $up } are on nodes that are up
wait-never-fits = asks for { $gpus } { $gpus ->
    [one] GPU
   *[other] GPUs
 } but only { $installed } of its model are installed; it can never start
wait-no-live-agent = no live agent: none of the { $offline } { $model } GPUs of its cluster has a running node agent; it starts once agents serve its nodes
wait-no-live-agent-enough = no live agent on enough nodes: it needs { $gpus } { $model } { $gpus ->
    [one] GPU
   *[other] GPUs
}, { $installed } are on nodes with a running node agent and { $offline } on nodes without one
wait-gpus-some-offline = waiting for { $gpus } { $model } { $gpus ->
    [one] GPU
   *[other] GPUs
}: { $free } free on nodes with a running node agent; { $offline } more are on nodes without one
wait-draining-or-outside = waiting for { $gpus } { $gpus ->
    [one] GPU
   *[other] GPUs
}: the free ones are on nodes being drained or filled by Slurm jobs outside Tranche; outside Tranche, { $outside }
wait-with-outside = { $reason }; outside Tranche, { $outside }
wait-executor-down = the Slurm controller of cluster { $cluster } does not answer since { $since } ({ $error }); new starts wait, running runs keep their state
runs-ahead = { $count ->
    [one] { $count } run ahead of it
   *[other] { $count } runs ahead of it
}

## The run page

run-title = Run { $id }
run-back = ← Runs
run-why-waits = Why it waits:
run-waits-approval = Waits for a lead's approval:
run-waits-approval-why = its protected contract ({ $hours } GPU-hours) is above the project's self-service limit.
run-decision = Decision:
run-preempted = Preempted { $count ->
    [one] { $count } time
   *[other] { $count } times
}: see the highlighted timeline entries.
run-lost = Its node was lost { $count ->
    [one] { $count } time
   *[other] { $count } times
} (the node's agent stopped or fell silent): not a preemption; see the highlighted timeline entries.
run-project = Project
run-gpus = GPUs
run-gpus-on = { $gpus } × { $model } on { $cluster }
run-min-runtime = Minimum runtime
run-min-runtime-free = 0 (free, preemptible)
run-protected-hours = ({ $hours } protected GPU-hours)
run-time-limit = Time limit
run-priority = Priority
run-within-project = (within the project)
run-charges = Charges
run-charges-none = none yet (a run is charged as it runs; its minimum runtime's cost is only held)
run-charges-never-ran = none: it never ran
run-charges-ended-none = none
run-charges-paid = { $money } from the project's budget for { $hours } GPU-hours
run-charges-prepaid = { $hours } GPU-hours on the project's capacity contract, paid with it
run-charges-free = { $hours } GPU-hours free (unallocated, or beyond the budget)
run-resumable = Resumable
run-resumable-yes = yes, requeued after a preemption or the loss of its node
run-resumable-no = no, a preemption or the loss of its node ends it
run-submitted = Submitted
run-submitted-by = by { $name }, { $at }
run-started = Started
run-started-attempt = { $at } (attempt { $attempt })
run-ended = Ended
run-exit = exit { $code }
run-decision-reason = Decision reason
run-command = Command
run-workdir = Working directory
run-env = Environment
run-cancel = Cancel run { $id }
run-approve-or-deny = Approve or deny
run-approve-reason = Reason (optional)
run-approve = Approve
run-deny-reason = Reason (required; the researcher sees it)
run-deny = Deny
run-timeline = Timeline
run-nothing-yet = Nothing yet.
run-made-room = made room for
run-link = run { $id }
run-placements = Placements
run-not-placed = Not placed on any node yet.
run-no-placement = No placement was recorded for this run.
run-gpu-indices = GPU indices
run-executor-job = Executor job
run-process = Process
proc-assigned = assigned, not started yet
proc-running = running
proc-exited = exited
proc-held = held until every node of the gang can start it together (another run's process still uses GPUs of one of them)
proc-never-started = never started (stopped before its process started)
run-slurm-job = Slurm job { $job }
run-exit-code = Exit code
run-utilization = GPU utilization
run-submitted-queued = Run { $id } submitted and queued: { $preview }.
run-submitted-approval = Run { $id } submitted; it waits for a lead's approval.
run-already-submitted = This form was already submitted: it is run { $id }.
run-form-resent = This form was already submitted as run { $id } with other values. Check the values below and submit again to create a new run.
run-cancelled = Run { $id } cancelled.
run-cancel-requested = Cancel of run { $id } requested; its processes are being stopped.

## The run form

form-title = Submit a run
form-intro = A run is a gang: all its GPUs start together or none do. Its <strong>minimum runtime</strong> is its time-slice contract: it is protected from preemption for that long and its cost is charged to the project's budget. Minimum runtime 0 makes it free and preemptible: it uses idle GPUs and any allocated run may take them back. Durations are minutes (90) or hours and minutes (1:30); the site maximum for the minimum runtime is { $max }.
form-fix-field = Fix the field marked below.
form-preview = Cost preview
form-needs-approval-tag = needs approval
form-needs-approval = Submitting puts it in a lead's approvals inbox; it starts only once approved.
form-nothing-yet = Nothing is submitted yet: press Submit to queue it.
form-where = Where
form-project = Project
form-no-projects = You are not a member of any project yet; ask a lead to add you.
form-cluster = Cluster
form-gpu-model = GPU model
form-gpus = GPUs
form-how-long = How long
form-min-runtime = Minimum runtime
form-min-runtime-example = 0 or 1:30
form-time-limit = Time limit
form-time-limit-example = 60 or 24:00
form-priority = Priority in the project
form-resumable = Resumable (requeue after a preemption instead of ending)
form-what = What
form-command = Command
form-workdir = Working directory (optional)
form-workdir-example = /home/me/project
form-env = Environment (optional, one NAME=value per line)
form-secret-env = Secret environment (optional, one NAME=value per line)
form-secret-note = Secret values are stored encrypted, shown as •••• to everyone (you included) and given only to the node agent that runs the job. Variables whose names contain TOKEN, SECRET, KEY or PASSWORD (such as <code>HF_TOKEN</code>) are kept secret even when typed in the environment above.
form-secret-reenter = Secret values are never shown again: the names are kept, type their values again before sending.
form-preview-button = Preview cost
form-submit = Submit
err-gpus-whole = the GPU count must be a whole number (got { $got })
err-min-runtime-format = the minimum runtime must be whole minutes (90) or hours and minutes (1:30); got { $got }
err-time-limit-format = the time limit must be whole minutes (90) or hours and minutes (1:30); got { $got }
err-priority-whole = the priority must be a whole number from -1,000 to 1,000 (got { $got })
err-env-line = line { $line }: write NAME=value (got { $got })
err-env-twice = line { $line }: { $name } is given twice

## Account

account-never = never
account-label-too-long = a label has at most 100 characters
account-title = Your account
account-language = Language
account-language-note = The language of the interface for you. Without a choice of your own, Tranche follows your browser's language, else the organisation's default.
account-language-auto = Browser or organisation default
account-save = Save
account-tokens = API tokens
account-tokens-use = Use a token as <code>Authorization: Bearer TOKEN</code> for the <a href="/api/v1/openapi.json">JSON API</a>.
account-token-created = Your new token, shown once — copy it now:
account-token-label = Label
account-token-create = Create a token
account-token-created-at = Created
account-token-used = Last used
account-token-revoked = revoked { $at }
account-token-revoke = revoke
account-email = E-mail
account-email-note = Budget alerts are also sent here when the site has e-mail configured.
account-email-address = Address
account-password = Password
account-password-current = Current password
account-password-new = New password (at least 10 characters)
account-password-repeat = New password again
account-password-change = Change password

## Organisation settings (admins)

settings-title = Organisation settings
settings-default-language = Default language
settings-default-language-note = For visitors whose browser asks for none of English, Spanish and Basque, and users who have not chosen a language.
settings-save = Save
settings-saved = Settings saved.

## Spend reports

reports-title = Spend reports
reports-err-role = spend reports are for finance, admins and leads
reports-all-models = all
reports-archived = archived
reports-period = Period
reports-node = Node
reports-cluster = Cluster
reports-all-clusters = all clusters
reports-show = Show
reports-export = Export CSV
reports-ai-csv = AI use cases CSV
reports-note = Amounts in { $currency }. Contracts: purchases less refunds, GPU-hours of contracts that stand. Runs: allocated run time charged to budgets. Free: unallocated GPU-hours (no charge). Forecast: contracts as bought, and run spend projected to the period's end at its rate so far. The CSV export keeps English column names and plain numbers (1234.56) in every language, for spreadsheets and scripts.
reports-contracts = Contracts
reports-contract-hours = Contract GPU-h
reports-runs = Runs
reports-run-hours = Run GPU-h
reports-free-hours = Free GPU-h
reports-total = Total spend
reports-entitlement-hours = Entitlement GPU-h
reports-entitlement-value = Entitlement value
reports-budget = Budget
reports-cap = Money cap
reports-forecast = Forecast

## Program tree

tree-title = Program tree
tree-intro = Entitlements for the budget period { $period }, in the { $zone } time zone: effective share × installed GPUs × hours; money at each model's billing weight and price.
tree-share-of-parent = Share of parent
tree-gpu-hours = GPU-hours
tree-entitlement = Entitlement ({ $currency })
tree-project-tag = project

## Project page

project-back = ← Program tree
project-tag = project
project-admin-link = Rename, move or archive this project
project-share = Share of parent
project-effective = { $share }% of the organisation
project-period = Period
project-entitlement = Entitlement
project-balance = Balance this period
project-balance-held = (of which { $held } is held for the minimum runtime of its running protected runs: { $free } left for new runs and contracts)
project-balance-later = Balance { $month }
project-balance-later-note = (contracts starting then are paid from it)
project-budget = Period budget
project-budget-default = (the entitlement's value when the period opened; changed shares, prices or GPUs apply from the next period)
project-cap = Monthly money cap
project-alerts = Budget alerts
project-alerts-at = at { $thresholds } of the period budget, actual and forecast
project-self-service = Self-service limit
project-self-service-value = { $hours } GPU-hours per protected run (GPUs × minimum runtime); above it a lead approves
project-runs-now = Runs now
project-no-runs = No run is running or waiting.
project-running = Running ({ $count })
project-waiting = Waiting ({ $count })
project-th-run = Run
project-th-submitter = Submitter
project-th-why = Why it waits
project-fair-share = Fair share
project-siblings-rank = Rank
project-siblings-share = Share
project-siblings-usage = Usage (GPU-hours)
project-siblings-part = Part of usage
project-sibling-hidden = another project (not yours to see)
project-owed = Owed vs received this period
project-by-day = By day
project-day = Day
project-owed-to-date = Owed to date
project-received-to-date = Received to date
project-spend = Spend this period
project-spend-contracts = Capacity contracts
project-spend-runs = Allocated runs
project-spend-total = Total
project-spend-forecast = Forecast to the period's end
project-spend-forecast-note = (contracts once, run spend at its rate so far)
project-entitlements = Entitlement by cluster and GPU model
project-money = Money
project-contracts = Capacity contracts
project-no-contracts = None.
project-window = Window
project-price = Price
project-members = Members
project-no-members = No members yet.
project-remove = remove
project-add-member = Add member (user name)
project-add = Add
project-budget-settings = Budget settings
project-save-budget = Save budget
project-budget-saved = Budget saved.
project-noun-threshold = an alert threshold
project-noun-self-service = the self-service limit
project-none = none
project-rank = Rank <strong>{ $rank } of { $count }</strong> among its siblings; { $usage } GPU-hours (billing-weighted, allocated) in the last 7 days, the scheduler's fair-share window. Siblings are served in order of share over usage; an idle sibling comes first.
project-owed-line = Owed so far (hour by hour, the entitlement capped at the project's demand, as on the metrics page): <strong>{ $owed }</strong> GPU-hours; received (allocated runs): <strong>{ $received }</strong> GPU-hours ({ $pct }); impact (received of what was owed): <strong>{ $impact }</strong>.
project-no-contracts-buy = <a href="/capacity">See the capacity calendar</a> to buy one.
project-budget-field = Period budget ({ $currency }; empty = the entitlement's value)
project-cap-field = Monthly money cap ({ $currency }; empty = none)
project-self-service-field = Self-service limit (GPU-hours)
project-thresholds-field = Alert thresholds (% of the budget, e.g. 50, 75, 90)

## Alerts (notifications and e-mails)

alert-budget-actual = { $project } has spent { $pct }% of its { $month } budget: { $amount } of { $budget }
alert-budget-forecast = { $project } is forecast to spend { $pct }% of its { $month } budget by the period's end: { $amount } of { $budget }
alert-budget-actual-over = { $project } has spent more than its { $month } budget: { $amount } of { $budget }
alert-budget-forecast-over = { $project } is forecast to spend more than its { $month } budget by the period's end: { $amount } of { $budget }
alert-budget-subject = Tranche budget alert: { $project } at { $pct }% ({ $kind })
alert-see-project = See the project
alert-use-case-actual = AI use case { $name } has spent { $pct }% of its { $month } limit: { $amount } of { $limit }
alert-use-case-forecast = AI use case { $name } is forecast to spend { $pct }% of its { $month } limit by the period's end: { $amount } of { $limit }
alert-use-case-actual-over = AI use case { $name } has spent more than its { $month } limit: { $amount } of { $limit }
alert-use-case-forecast-over = AI use case { $name } is forecast to spend more than its { $month } limit by the period's end: { $amount } of { $limit }
alert-use-case-subject = Tranche AI use case alert: { $name } at { $pct }% ({ $kind })
alert-see-use-case = See the use case
alert-idle = Run { $run } ({ $project }) holds { $gpus } { $model } GPUs idle (all under { $pct }% utilization) since { $since }: { $hours } GPU-hours, { $value } so far
alert-idle-free = Run { $run } ({ $project }) holds { $gpus } { $model } GPUs idle (all under { $pct }% utilization) since { $since }: { $hours } GPU-hours so far (a free run: charged nothing, but other runs could use them)
alert-idle-subject = Tranche: run { $run } holds idle GPUs
alert-see-run = See the run
idle-value-free = free (charged nothing)

## Run submission: checks and the cost preview

run-preview-free = free, preemptible (minimum runtime 0: it uses idle GPUs, and an allocated run that needs them may preempt it, unless it would free more than that run needs plus one node's GPUs)
run-preview-cost = { $hours } protected GPU-hours, { $cost } from the project's budget (balance { $balance }), held when it starts; it is charged for the time it runs
run-preview-contract = ; { $hours } protected GPU-hours fall on the project's capacity contract, paid with it, if it starts there
run-preview-approval = ; above the project's self-service limit of { $limit } GPU-hours, so a lead must approve it
err-choose-project = choose a project
err-choose-cluster = choose a cluster
err-choose-model = choose a GPU model
err-model-not-in-cluster = cluster { $cluster } has no { $model } GPUs installed; choose a GPU model the cluster has
err-larger-than-cluster = asks for { $gpus } { $gpus ->
    [one] GPU
   *[other] GPUs
 } but cluster { $cluster } has only { $installed } { $model } GPUs installed; it could never start
err-budget-exceeded = project { $project } has { $balance } left this period but the minimum runtime costs { $cost }; lower the GPUs or minimum runtime, or submit with minimum runtime 0 to run unallocated (free, preemptible)

## Charts

# A percentage: the number already formatted for the language (CLDR: 12.5%, 12,5 %, % 12,5).
percent = { $n }%

chart-contracts = capacity contracts
chart-runs = allocated runs
chart-owed = owed (entitlement capped at demand)
chart-received = received (allocated)
chart-gpu-hours = GPU-hours
chart-owed-received-title = { $project }: owed vs received this period (GPU-hours)
chart-spend-by-period = Spend by period
chart-spend-by-model = Spend by GPU model, { $period }

## The page for a form refused by the text rule

input-error-title = Check the form
input-error-intro = Nothing was saved. What you sent is below, control characters shown as symbols (␀ for U+0000); correct it and send it again.
input-error-again = Send again
input-error-back = Back to Tranche
input-control-char = { $field }: contains the control character U+{ $code } at character { $position }; remove it ({ $rule })
input-rule-multiline = only printable text, tabs and line breaks are allowed here
input-rule-line = only printable text on one line is allowed here

## A run's timeline (src/i18n/said.rs: stored as key and arguments, rendered per reader)

event-kind-submitted = submitted
event-kind-approved = approved
event-kind-denied = denied
event-kind-started = started
event-kind-running = running
event-kind-succeeded = succeeded
event-kind-failed = failed
event-kind-requeued = requeued
event-kind-ended = ended
event-kind-time_limit = time limit
event-kind-unallocated = unallocated
event-kind-cancel_requested = cancel requested
event-kind-cancelled = cancelled
event-kind-lost = lost
event-kind-preempted = preempted
event-kind-contract = on contract
event-submitted = submitted by { $by }
event-submitted-approval = submitted by { $by }; waits for a lead's approval ({ $hours } protected GPU-hours, self-service limit { $limit })
event-approved = approved by { $by }
event-approved-why = approved by { $by }: { $reason }
event-denied = denied by { $by }: { $reason }
event-cancelled = cancelled by { $by }
event-idle-stopped = stopped as idle by { $by }: { $reason }
event-unallocated = the project's budget is spent: the run goes on as unallocated (free, preemptible)
event-requeued-preempted = requeued after preemption; it keeps its history and runs again when GPUs are free
event-ended-preempted = ended as preempted (not resumable)
event-cancelled-stopped = cancelled; its processes have stopped
event-cancelled-node-lost = cancelled; its node's agent was lost before its processes were seen to stop: they count as stopped, and an agent that comes back stops any left
event-cancelled-before-start = cancelled before its processes were seen to start: none was running
event-time-limit-node-lost = stopped at its time limit; its node's agent was lost before its processes were seen to stop: they count as stopped, and an agent that comes back stops any left
event-cancelled-job-gone = cancelled; Slurm no longer lists its job, so how it ended is unknown and its processes count as stopped
event-time-limit-job-gone = stopped at its time limit; Slurm no longer lists its job, so how it ended is unknown and its processes count as stopped
event-time-limit-stopped = stopped at its time limit
event-gang-failed = a process of the gang failed; the others were stopped
event-requeued-lost = requeued after its node was lost
event-requeued-lost-unstarted = requeued: its node was lost before its processes started there (nothing ran, so it runs again whether or not it is resumable)
event-lost = its node was lost and the run is not resumable
event-process-gone = its process is gone and its agent never reported how it ended (a restored database, or exits the agent could not report)
event-node-fault = its node { $node } could not run its process and is drained for repair: { $fault }
event-requeued-node-fault = requeued: its node could not start its processes (nothing ran, so it runs again whether or not it is resumable)
event-requeued-gang-fault = requeued: one of its nodes could not start its process while the others ran
event-lost-gang-fault = lost: one of its nodes could not start its process while the others ran, and the run is not resumable
event-exited = exited with { $status }
event-exited-0 = exited with status 0
exit-127 = status 127 (command not found, or the agent could not start it: see the run's log on the node)
exit-signal = status { $code } (killed by { $signal })
exit-status = status { $code }
event-running = its processes are running
event-on-contract = from now on it runs on capacity contract { $contract } (its project's): protected while the window lasts, its time there prepaid
event-time-limit = reached its time limit; stopping
event-node-silent = node { $node } lost: its agent sent no heartbeat for { $seconds } s
event-agent-restarted = node { $node }: its agent restarted, so the run's processes there are gone
event-agent-stopped = node { $node }: its agent stopped, so the run's processes there are gone
event-place = { $node } GPUs { $gpus }
event-started-on = started on { $places }
event-started-contract = started on { $places } (on capacity contract { $contract })
event-started-contract-part = started on { $places } ({ $covered } of its { $gpus } GPUs on capacity contract { $contract }, the others charged)
preempt-node-draining = node { $node } is draining for repair
preempt-node-down = node { $node } is down
preempt-unallocated = unallocated (free) run: its GPUs went to an allocated run
preempt-fair-share = past its minimum runtime, and project { $project } is further below its fair share
preempt-entitlement = past its minimum runtime, and project { $project } is below its entitlement (its share of the GPUs) while this run's project held more than its own
preempt-contract = its GPUs are promised to capacity contract { $contract }
preempt-legacy-quota = ran beyond its team's quota; another team reclaimed its quota
event-slurm-refused = Slurm refused the job: { $why }
event-slurm-uneven = Slurm runs one GPU count per node in a job; the pass placed { $placed }
event-slurm-timeout = Slurm job { $job } reached its time limit
event-slurm-cancelled = cancelled outside Tranche: Slurm job { $job } was cancelled in Slurm
event-slurm-node-failed = Slurm job { $job } ended { $state }: its node failed
event-slurm-ended = Slurm job { $job } ended { $state } ({ $reason })
event-slurm-vanished = Slurm no longer knows job { $job }; how it ended is unknown
event-history-submitted = submitted (recorded history)
event-history-started = started on { $gpus } GPUs (recorded history)
event-history-finished = finished (recorded history)
event-history-ends = stopped when the recorded history ends
event-history-preempted = preempted (recorded history)
event-history-requeued = requeued after preemption (recorded history)

## A run's checks (the form and the API)

err-run-gpus = the GPU count must be a whole number from 1 to 100,000
err-run-time-limit = the time limit must be above zero and at most 30 days ({ $max } seconds)
err-run-time-limit-partition = cluster { $cluster } runs jobs in a Slurm partition whose time limit (MaxTime) is { $max } seconds: ask for at most that
err-run-min-runtime = the minimum runtime must be from 0 to the site maximum of { $hours } h ({ $seconds } s)
err-run-min-over-limit = the minimum runtime cannot be longer than the time limit
err-run-priority = the priority must be from -1,000 to 1,000
err-run-command = the command must be 1 to 8,192 characters of text
err-run-workdir = the working directory must be an absolute path
err-run-env-twice = { $name } is given twice, in the environment and as a secret
err-run-env-many = at most 64 environment variables
err-run-env-name = { $name } is not an environment variable name (letters, digits, _)
err-run-env-reserved = { $name } is set by Tranche and cannot be given
err-run-env-value = the value of { $name } is too long or not text

## The project's budget form and members

budget-err-too-large = an amount is at most 10,000,000,000,000.00
budget-err-negative = a period budget cannot be negative
budget-err-cap-negative = a money cap cannot be negative
budget-err-self-service = the self-service limit must be between 0 and 100,000 GPU-hours
budget-err-forbidden = only an admin or a lead above this project can change its budget
budget-err-threshold-twice = the alert threshold { $pct }% is given twice; give each percentage once
budget-err-thresholds = alert thresholds are up to 10 percentages from 1 to 100
budget-err-thresholds-decimal = alert thresholds are whole percentages separated by a comma and a space, or by spaces, e.g. 50, 75, 90 (typed { $got })
budget-err-over-entitlement = the budgets of the projects under { $node } would sum to { $sum }, more than its entitlement of { $entitlement }; lower this or another project's budget
project-err-no-user = there is no user named { $name }
project-err-user-disabled = { $name } is disabled: enable the account before adding it to a project
project-waits-approval = waits for a lead's approval
project-run-since = since { $at }; { $protection }
project-err-user-empty = enter the name of a user to add or remove

## Refusals and records not found (pages; the API answers with this English text)

err-no-project-id = no project with id { $id }
err-no-live-project-id = no live project with id { $id }
err-no-run = no run { $id }
err-settings-admins = only admins change organisation settings
err-members-forbidden = only an admin or a lead of this project can change its members
err-not-member = you are not a member of project { $project }
err-cancel-forbidden = only the run's submitter or a lead of its project may cancel it
err-run-ended = run { $id } has already ended ({ $state })
err-reports-node-forbidden = spend reports are for finance, admins and the leads of the node
err-period-format = { $got } is not a period; use YYYY-MM, e.g. 2026-11
err-period-range = reports cover the last 24 months and the next 2; { $got } is outside
err-runs-scope = scope is mine, projects or all
err-runs-state = unknown state { $got }; one of active, { $states }
err-runs-before = before is the id of a run, a whole number from 1, to list the runs older than it; got { $got }
err-query-unreadable = the query string could not be read: { $why }
err-form-unreadable = the form could not be read: { $why }
err-not-a-form = expected a form (Content-Type: application/x-www-form-urlencoded)
err-not-utf8 = { $field }: is not valid UTF-8 text; send text only
err-too-large = the request body is too large (at most 2 MiB)
err-oidc-off = OpenID Connect sign-in is not configured here
err-lang-choose = choose en, es or eu
err-lang-choose-auto = choose en, es, eu or auto
err-db-no-record = no such record
err-db-taken = that name is already taken ({ $constraint })
err-db-sibling-shares = the shares of sibling nodes would sum to more than 100%
err-db-out-of-range = a value is out of range ({ $constraint })
err-db-missing-reference = a referenced record does not exist ({ $constraint })
account-err-email = { $email } is not an e-mail address
account-err-current-password = the current password is wrong
account-err-password-short = a password needs at least 10 characters (this one has { $count })
account-err-password-repetitive = a password needs at least { $count } different characters: repeated ones are easy to guess
account-err-password-long = a password has at most 200 characters
account-err-passwords-differ = the two new passwords differ
account-err-no-token = you have no active token with id { $id }
account-flash-token-revoked = Token revoked.
account-flash-password-changed = Password changed; your other sessions have ended.
account-flash-email-saved = E-mail address saved.
project-err-already-member = { $name } is already a member
project-err-not-member = { $name } is not a member
project-member-added = Added { $name }.
project-member-removed = Removed { $name }.
