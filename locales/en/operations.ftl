# Operations pages in English: the cluster, nodes, inventory, users, capacity, the dashboard,
# idle-GPU flags and the audit log. Domain terms: docs/glossary.md.

## Inventory (admins): GPU models and clusters

inventory-title = Inventory
inventory-models = GPU models
inventory-models-note = A GPU-hour of a model costs its billing weight × its price per weighted GPU-hour ({ $currency }).
inventory-weight = Billing weight
inventory-price-per-hour = Price per weighted GPU-hour
inventory-weight-of = Billing weight of { $name }
inventory-price-of = Price of { $name }
inventory-save = Save
inventory-add-model = Add a GPU model
inventory-name = Name
inventory-price = Price ({ $currency })
inventory-add-model-button = Add model
inventory-clusters = Clusters
inventory-nodes = Nodes
inventory-add-cluster = Add a cluster
inventory-add-cluster-button = Add cluster
inventory-gpus-of-model = { $count } × { $model }
inventory-model-added = Added GPU model { $name }.
inventory-model-saved = GPU model saved.
inventory-cluster-added = Added cluster { $name }.
inventory-admins-only = only an admin may open this page
inventory-admins-change = only an admin can change the inventory
inventory-price-too-high = a price per GPU-hour is at most 1,000,000.00
inventory-model-exists = a GPU model named { $name } already exists
inventory-model-not-found = no GPU model with id { $id }
inventory-cluster-exists = a cluster named { $name } already exists

## Form checks of names, numbers and amounts (inventory, cluster and users forms)

# $what is one of the inventory-noun-* words.
inventory-name-required = a { $what } name is required
inventory-name-too-long = a { $what } name has at most { $max } characters (this one has { $count })
inventory-name-invalid = { $name } is not a valid { $what } name: use letters, digits, '.', '_' or '-', starting with a letter or digit
inventory-noun-user = user
inventory-noun-cluster = cluster
inventory-noun-gpu-model = GPU model
inventory-noun-node = node
inventory-number-whole = { $what } must be a whole number (got { $got })
inventory-number-range = { $what } must be between { $min } and { $max } (got { $got })
inventory-number-positive = { $what } must be positive (got { $got })
inventory-number-decimal = { $what } must be a number such as 1 or 1.5 (got { $got })
inventory-number-three-decimals = { $what } has at most three decimals (got { $got })
inventory-number-at-most-100 = { $what } must be at most 100 (got { $got })
inventory-noun-gpu-count = the GPU count
inventory-noun-weight = the billing weight
inventory-amount-empty = enter an amount, for example 1500 or 1500.50
inventory-amount-negative = an amount cannot be negative (got { $got })
inventory-amount-not-a-number = { $got } is not an amount; enter digits such as 1500.50
inventory-amount-too-precise = an amount has at most two decimals (got { $got })
inventory-amount-too-large = { $got } is too large

## A cluster (admins)

cluster-back = ← Inventory
cluster-title = Cluster { $name }
cluster-gpus-in-nodes = { $gpus }in { $nodes } nodes.
cluster-executor = Executor:
cluster-executor-agent = agent
cluster-executor-slurm = slurm
cluster-slurm-answers = Slurm partition { $partition }: the controller answers.
cluster-slurm-down = Slurm partition { $partition }: the controller does not answer since { $since } ({ $error }); new starts wait.
cluster-outside = Slurm jobs outside Tranche
cluster-outside-none = No job submitted to Slurm directly holds GPUs of this cluster.
cluster-outside-note = These jobs were submitted to Slurm directly, outside Tranche; Tranche places no run on the GPUs they hold.
cluster-th-slurm-job = Slurm job
cluster-th-name = Name
cluster-th-user = User
cluster-declare = Declare a node
cluster-host-name = Host name
cluster-declare-button = Declare node
cluster-nodes-note =
    Only the nodes declared here can be served, by an agent with this cluster's token and
    exactly the GPU model and count declared. A node is <strong>lost</strong> when its agent stopped
    or sent no heartbeat for the timeout; lost nodes get no runs and do not count towards
    entitlements or contractable capacity. To drain a node for repair with a reason, open it.
cluster-th-status = Status
cluster-th-agent = Agent
cluster-th-heartbeat = Last heartbeat
cluster-th-admin-state = Admin state
cluster-state-of = State of { $name }
cluster-drain-reason = reason, for a drain
cluster-drain-reason-of = Why { $name } is drained
cluster-set = Set
cluster-heartbeat = { $at } ({ $ago })
cluster-ago-seconds = { $count } s ago
cluster-ago-minutes = { $count } min ago
cluster-ago-hours = { $count } h ago
cluster-ago-days = { $count } days ago
cluster-node-added = Added node { $name }.
cluster-node-state-set = Node is now { $state }.
cluster-not-found = no cluster with id { $id }
cluster-no-such-model = there is no GPU model named { $name }
cluster-node-exists = a node named { $name } already exists (host names are unique across clusters)
cluster-bad-state = a node state is up, draining or down (got { $got })

## A cluster node (admins) and the states of nodes

node-status-up = up
node-status-draining = draining
node-status-down = down
node-status-lost = lost
node-status-awaiting-agent = awaiting agent
node-title = Node { $name }
node-back = ← Cluster { $cluster }
node-status = Status
node-drain = Drain
node-return = Return to service
node-drain-for-repair = Drain for repair
node-drain-note = The node takes no new runs; each of its runs is requeued once it has run its minimum runtime (protected runs keep running until then). The page says when it is empty.
node-reason = Reason
node-drain-button = Drain
node-runs = Runs on it
node-runs-none = None.
node-th-run = Run
node-th-protection = Protection
node-drains = Drains
node-never-drained = Never drained.
node-th-by = By
node-th-drained = Drained
node-th-empty-since = Empty since
node-th-needed-human = Needed a human
node-th-returned = Returned
node-yes = yes
node-no = no
node-drain-empty = empty, ready for repair since { $since }
node-drain-draining = draining since { $since }: its runs are requeued as each passes its minimum runtime
node-protected-until = protected until { $at }
node-past-min-runtime = past its minimum runtime
node-unallocated = unallocated (never protected)
node-system = system
node-not-yet = not yet
node-returned-by = { $at } by { $by }
node-edit = Correct the node's GPUs
node-edit-note = For a node declared with the wrong model or count (its agent is then refused: inventory mismatch). Only while no agent serves it and nothing runs there.
node-edit-button = Save
node-edited = Node corrected.
node-drained = Node is draining: it takes no new runs.
node-returned = Node is back in service.
node-edit-served = node { $name } is served by a running agent: stop its agent, correct the node, then start the agent again
node-edit-busy = runs hold GPUs on node { $name }: correct it once nothing runs there (drain it first)
node-edit-contracts = with node { $name } changed, active capacity contracts would hold { $peak } { $model } GPUs at once, more than the { $limit } the pool may contract
node-not-found = no node with id { $id }
node-reason-too-long = a drain reason is at most 1,000 characters
node-reason-required = say why the node is drained (what is to be repaired)

## A node of the program tree: shares and administration

node-tree-back = ← Program tree
node-project-page = Project page (budget and members)
# HTML; $share is a percentage with its sign, $effective a number, $money an amount.
node-facts = Share of parent: <strong>{ $share }</strong> · effective share: <strong>{ $effective }%</strong> of the organisation · entitlement this period: <strong>{ $money }</strong>
node-percent = { $value }%
node-children-shares = Shares of its children
node-no-children = No children yet.
node-th-child = Child
node-th-share-of = Share of { $name } (%)
node-th-effective = Effective share
node-share-of = Share of { $name }
node-siblings-sum = Siblings may sum to at most 100%; now { $sum }%.
node-save-shares = Save shares
node-administration = Administration
node-add-child = Add a child
node-name = Name
node-kind = Kind
node-kind-group = program / team
node-kind-project = project
node-share = Share (%)
node-add = Add
node-rename = Rename
node-new-name = New name
node-move = Move
node-new-parent = New parent
node-archive = Archive
node-archive-button = Archive { $name }
node-shares-saved = Shares saved.
node-child-added = Added { $name }.
node-renamed = Renamed.
node-moved = Moved.
node-archived = Archived.
node-tree-not-found = no tree node with id { $id }
node-outside-view = this node is outside what you may see
node-not-a-share-field = { $key } is not a share field
node-bad-kind = a node is a group or a project, not { $got }
node-choose-parent = choose the new parent
node-share-empty = enter a share as a percentage, for example 25 or 12.5
node-share-not-a-number = { $got } is not a number; enter a percentage such as 25 or 12.5
node-share-negative = a share cannot be negative (got { $got })
node-share-over-hundred = a share cannot exceed 100% (got { $got })
node-share-too-precise = a share has at most two decimals (got { $got })
node-share-twice = node { $id } appears more than once
node-shares-forbidden = only an admin or a lead of this node can change its children's shares
node-not-a-child = node { $id } is not a live child of node { $parent }
node-shares-over-100 = the shares of these siblings would sum to { $sum }%; they may sum to at most 100%
node-name-taken = a node named { $name } already exists; names are unique across the tree (ignoring case)
node-name-archived = the name { $name } belongs to an archived node; choose another name
node-no-room = the siblings already hold { $used }%, so at most { $left }% is left (asked for { $asked }%)
node-admins-create = only an admin can create tree nodes
node-admins-rename = only an admin can rename tree nodes
node-admins-move = only an admin can move tree nodes
node-admins-archive = only an admin can archive tree nodes
node-parent-is-project = { $name } is a project; projects have no children
node-root-move = the root cannot be moved
node-move-into-itself = { $name } cannot move under itself or its own subtree
node-root-archive = the root cannot be archived
node-has-children = { $name } still has { $count } live children; archive or move them first
node-has-contracts = { $name } still has { $count } capacity contracts that have not ended: cancel those not started, and archive it once the others end
node-has-active-runs = { $name } still has runs under way ({ $running } running, { $waiting } waiting); cancel them or let them end before archiving it
node-name-required = a name is required
node-name-too-long = a name has at most 64 characters (this one has { $count })
node-name-invisible = a name cannot contain control or invisible formatting characters

## Users and roles (admins)

users-title = Users
users-heading = Users and roles
# HTML; $name and $password are escaped.
users-created = Created <strong>{ $name }</strong>. Their password, shown once: <code>{ $password }</code>
users-create = Create a user
users-name = Name
users-role = Role
users-lead-of = Lead of node (leads only)
users-create-button = Create
users-password-sign-in = Password sign-in
# HTML; $name is escaped.
users-local-off = Off for everyone except the break-glass admin <strong>{ $name }</strong>; everyone else signs in through the organisation's identity provider.
users-turn-on = Turn password sign-in back on for everyone
users-local-on = On for every local account.
users-break-glass = Break-glass admin (keeps password sign-in)
users-turn-off = Turn password sign-in off for everyone else
users-th-user = User
users-th-roles = Roles
users-th-grant = Grant a role
# $role is one of the role-* words.
users-role-of = { $role } of { $node }
users-from-idp = (from the identity provider)
users-revoke = Revoke { $role } from { $user }
users-node-placeholder = node (leads)
users-grant = Grant
users-role-granted = Role granted.
users-role-revoked = Role revoked.
users-disable = Disable
users-enable = Enable
users-disable-label = Disable { $user }
users-enable-label = Enable { $user }
users-disabled-tag = disabled
users-account-disabled = Account disabled: its sessions ended, its API tokens and sign-in are refused.
users-account-enabled = Account enabled again.
users-disable-self = you cannot disable your own account
users-local-off-no-provider = password sign-in cannot be turned off: this server has no identity provider (OIDC or LDAP) configured, so no one but the break-glass admin could sign in
users-disable-break-glass = { $name } is the break-glass admin while password sign-in is off; turn it back on or name another first
users-local-turned-on = Password sign-in is on for every local account.
users-local-turned-off = Password sign-in is off except for the break-glass admin.
users-local-on-or-off = local sign-in is on or off (got { $got })
users-no-such-node = there is no tree node named { $name }
users-lead-needs-node = a lead needs the tree node they lead
users-only-lead-node = only a lead is scoped to a tree node
users-bad-role = a role is admin, finance, lead or researcher (got { $got })
users-exists = a user named { $name } already exists
users-not-found = no user with id { $id }
users-has-role = { $name } already has that role
users-grant-not-found = no grant { $grant } for user { $user }
users-last-admin = this is the last admin; grant admin to someone else first
users-break-glass-required = name the break-glass admin who keeps password sign-in
users-no-such-user = there is no user named { $name }
users-disabled = { $name } is disabled
users-no-local-password = { $name } has no local password
users-no-manual-admin = { $name } holds no admin role given by hand in Tranche

## Capacity calendar

capacity-title = Capacity calendar
capacity-pool = Cluster and GPU model
capacity-show = Show
# HTML of numbers only.
capacity-intro = <strong>{ $installed }</strong> GPUs installed; contracts may hold <strong>{ $contractable }</strong> of them at any instant ({ $percent }%).
capacity-times = Times in { $zone }. Each cell is one hour: the GPUs still contractable in it.
capacity-th-day = Day
capacity-th-max-contracted = Max contracted
capacity-th-min-contractable = Min contractable
capacity-buy = buy
capacity-none = No GPUs are installed yet.
capacity-cell-past = past or not in this day
capacity-cell = { $date } { $time }: { $contracted } contracted, { $left } contractable left
capacity-no-pool = no pool { $pool }

## Metrics dashboard

dashboard-title = Metrics
dashboard-window = Window
dashboard-window-24h = last 24 hours
dashboard-window-7d = last 7 days
dashboard-window-30d = last 30 days
dashboard-window-period = a budget period
dashboard-period = Budget period
dashboard-period-current = current
dashboard-all-clusters = all clusters
dashboard-show = Show
dashboard-export = Export CSV
dashboard-from-to = From { $from } to { $to }.
dashboard-subtree = Impact, waits and projects cover the projects you lead; availability, occupancy, utilization and preemptions are the whole pool's.
dashboard-th-availability = Availability
dashboard-th-occupancy = Occupancy
dashboard-th-allocated = allocated
dashboard-th-unallocated = unallocated
dashboard-th-impact = Impact
dashboard-th-served = Projects served ≥95%
dashboard-th-utilization = Utilization
dashboard-th-debug-wait = Debug wait p50 / p90 (runs)
dashboard-th-protected-wait = Protected wait p50 / p90 (runs)
dashboard-th-unallocated-wait = Unallocated wait p50 / p90 (runs)
dashboard-th-preemptions = Preemptions (per 1,000 GPU-h)
dashboard-definitions = Availability: healthy GPU-time (node up, agent live) / installed. Occupancy: GPU-time held by runs / healthy GPU-time. Impact: hour by hour, Σ min(received, owed) / Σ owed, where owed is the entitlement capped at the project's demand. Utilization: busy fraction agents reported over the GPU-time they reported on. Debug runs: minimum runtime at most 15 minutes. Definitions: docs/design.md section 5.
dashboard-drains-heading = Drains for repair
dashboard-owed-heading = Owed vs received by project
dashboard-th-owed = Owed GPU-h
dashboard-th-received = Received GPU-h
dashboard-percent = { $value }%
dashboard-no-drains = No node was drained for repair in this window.
# $share is dashboard-drains-human-share or nothing.
dashboard-drains = { $count } drains for repair began in this window: { $emptied } emptied by themselves, { $human } needed an admin to stop a protected run{ $share }, { $emptying } still emptying.
dashboard-drains-human-share = {" "}({ $percent }% of finished drains needed a human)
dashboard-chart-occupancy = Occupancy by pool
dashboard-chart-allocated = allocated
dashboard-chart-unallocated = unallocated
dashboard-chart-occupancy-axis = % of healthy GPU-time
dashboard-chart-owed = Owed vs received (GPU-hours)
dashboard-chart-owed-series = owed
dashboard-chart-received-series = received within owed
dashboard-chart-gpu-hours = GPU-hours
dashboard-forbidden = metrics are for finance, admins and leads
dashboard-no-such-cluster = there is no cluster named { $name }
dashboard-bad-instant = { $got } is not an instant with an offset, such as 2026-12-01T00:00:00Z
dashboard-from-with-to = give from with to
dashboard-to-after-from = to must be after from
dashboard-from-before-now = from must be before now: nothing is measured yet after it
dashboard-window-too-long = a window is at most 400 days long
dashboard-period-not-begun = that budget period has not begun
dashboard-period-needs-window = a budget period is shown with the window “a budget period”: choose that window, or leave the period empty
dashboard-bad-window = { $got } is not a window; choose 24h, 7d, 30d or period

## Idle GPUs (home and project pages)

idle-th-run = Run
idle-th-submitter = Submitter
idle-th-since = Idle since
idle-th-gpu-hours = GPU-hours idle
idle-th-value = Value
idle-reason-for = Reason to stop run { $run }
idle-stop = Stop
idle-stopping = Run { $run } is stopping (idle).
idle-reason-required = give a reason for stopping the run (1 to 1000 characters)
idle-forbidden = only a lead of the run's project may stop an idle run
idle-not-found = no idle flag { $id }
idle-cleared = idle flag { $id } has cleared (the run's GPUs are busy again, or the attempt ended); nothing was stopped

## Audit log

audit-title = Audit log
audit-forbidden = the audit log is for admins, finance and leads
audit-all = All changes, newest first (last { $count }).
audit-subtrees = Changes in the subtrees you lead, newest first (last { $count }).
audit-th-when = When ({ $zone })
audit-th-who = Who
audit-th-what = What
audit-th-record = Record
audit-th-before = Before
audit-th-after = After
audit-system = system
audit-yes = yes
audit-no = no
audit-none = none
audit-empty = (empty)
audit-pages = Pages of the audit log
audit-newest = Newest entries
audit-older = Older entries
err-audit-before = before is the id of an audit entry, a whole number from 1, to show the entries older than it; got { $got }

## Audit log: an entry's action and record in words, by the codes the entries keep (an
## action's dot as a dash). A code without words here is shown as recorded.
audit-action =
    .agent_token-create = Agent token created
    .agent_token-revoke = Agent token revoked
    .api_token-create = API token created
    .api_token-revoke = API token revoked
    .agent-refused = Agent call refused
    .agent-session_restored = Agent session kept after a restore
    .budget-update = Budget changed
    .cluster-create = Cluster created
    .contract-buy = Capacity contract bought
    .contract-cancel = Capacity contract cancelled
    .demo-load = Demo organisation loaded
    .demo-load_use_cases = Demo AI use cases loaded
    .gpu_model-create = GPU model created
    .gpu_model-update = GPU model changed
    .member-add = Member added
    .member-remove = Member removed
    .node-add = Node added
    .node-archive = Node archived
    .node-create = Node created
    .node-drain = Node drained for repair
    .node-move = Node moved
    .node-remove = Node removed
    .node-rename = Node renamed
    .node-return = Node returned to service
    .node-state = Node state changed
    .node-update = Node changed
    .run-approve = Run approved
    .run-cancel = Run cancelled
    .run-deny = Run denied
    .run-idle_stop = Idle run stopped
    .settings-default_language = Default language changed
    .share-update = Shares changed
    .site-local_sign_in = Local sign-in changed
    .spend-import = Spend imported
    .spend_rule-create = Mapping rule created
    .use_case-create = AI use case created
    .use_case-hours = Human hours recorded
    .use_case-review = Monthly review recorded
    .use_case-status = Use case status changed
    .use_case-stop_acknowledge = Stop rule acknowledged
    .use_case-stop_criterion = Stop rule triggered
    .use_case-update = AI use case changed
    .user-create = Account created
    .user-email = E-mail address changed
    .user-grant = Role granted
    .user-language = Language changed
    .user-password = Password changed
    .user-revoke = Role revoked
audit-entity =
    .agent_token = agent token
    .api_token = API token
    .ai_mapping_rule = mapping rule
    .ai_spend_import = spend import
    .ai_use_case = AI use case
    .cluster = cluster
    .cluster_node = cluster node
    .contract = capacity contract
    .gpu_model = GPU model
    .org_settings = organisation settings
    .project = project
    .run = run
    .site = site
    .tree_node = tree node
    .user = account
