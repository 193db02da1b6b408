# The AI use-case register in English. Domain terms: docs/glossary.md.

## Words used on several pages of the register

ai-title = AI use cases
ai-use-case = Use case
ai-owner-team = Owner team
ai-bag = Bag
ai-status = Status
ai-monthly-limit = Monthly limit
ai-metric = Metric
ai-stop-rule = Stop rule
ai-format = Format
ai-service = Service
ai-scope = Scope
ai-scopes = Scopes
ai-lines = Lines
ai-amount = Amount
ai-month = Month
ai-decision = Decision
ai-comment = Comment
ai-by = By
ai-when = When
ai-any = any
ai-none = none
ai-unassigned = unassigned
ai-percent = { $pct }%
ai-mapping-rules = Mapping rules
ai-rule-scope-label = Project, workspace, cost centre or tag
ai-add-rule = Add rule
ai-bag-personal = Personal productivity
ai-bag-team = Team processes
ai-bag-critical = Critical systems
ai-status-proposed = proposed
ai-status-pilot = pilot
ai-status-active = active
ai-status-stopped = stopped
ai-decision-continue = continue
ai-decision-expand = expand
ai-decision-stop = stop
ai-activity-data = preparing data
ai-activity-review = reviewing answers
ai-activity-exceptions = chasing exceptions
ai-trend-up = up
ai-trend-down = down
ai-trend-flat = flat
ai-only-leads-register = only leads and admins register use cases
ai-not-lead-change = you do not lead { $owner }, so you cannot change its use cases
ai-no-such-use-case = there is no such use case
ai-no-use-case = there is no use case { $id }

## The register

ai-list-intro = Every use of AI has an owner team, the data it may use, a person who reviews it, a monthly limit, a metric and a stop rule. Spend in { $month }: the linked GPU projects' ledger spend plus imported spend of outside services.
ai-list-trend-note = Trend: this month so far, scaled to the whole month, against last month (within 10% is flat).
ai-list-register = Register a use case
ai-list-spend-link = Imported spend, unassigned lines and mapping rules
ai-list-export = Export CSV
ai-list-none = No use cases you may see yet.
ai-th-spend = Spend { $month }
ai-th-used = Used
ai-th-human-cost = Human cost
ai-th-last-month = Last month
ai-th-trend = Trend
ai-th-last-decision = Last decision
ai-over-the-limit = over the limit
ai-last-decision = { $decision } ({ $month })

## Registering and editing a use case

ai-form-title-new = Register a use case
ai-form-title-edit = Edit use case
ai-form-heading-new = Register an AI use case
ai-form-heading-edit = Edit { $name }
ai-form-intro = Budget the use case, not the tool: who owns it, what data it may use, what the AI does, where a person reviews it, what it may spend a month and when it stops.
ai-form-name = Name
ai-form-allowed-data = Allowed data
ai-form-ai-action = AI action
ai-form-human-review = Human review
ai-form-monthly-limit = Monthly limit ({ $currency })
ai-form-services = Services it may use (comma-separated)
ai-form-hourly-rate = Hourly rate of human work ({ $currency })
ai-form-projects = GPU projects that belong to it (comma-separated)
ai-form-save = Save
ai-form-register = Register
ai-registered = Registered the use case { $name }.
ai-saved = Use case saved.
ai-err-owner = owner: choose the owner team from the program tree
ai-err-monthly-limit = monthly limit: { $problem }
ai-err-limit-zero = monthly limit: enter the most the use case may spend in a month, above zero (its stop line)
ai-err-hourly-rate-empty = hourly rate: enter the price of an hour of the human work the use case saves (0 if those hours are not valued)
ai-err-hourly-rate = hourly rate: { $problem }
ai-err-hourly-rate-range = hourly rate: from 0 to { $max }
ai-err-not-gpu-project = projects: { $name } is not a GPU project
ai-err-name = name: give the use case a name of 1 to 120 characters
ai-err-not-lead-register = you do not lead { $node }, so you cannot register use cases for it
ai-err-bag = bag: choose personal, team or critical
ai-err-too-long = { $field }: at most { $max } characters
ai-field-allowed_data = allowed_data
ai-field-ai_action = ai_action
ai-field-human_review = human_review
ai-field-metric = metric
ai-field-stop_rule = stop_rule
ai-field-comment = comment
ai-field-note = note
ai-err-metric = metric: say what shows that the use case deserves to continue
ai-err-stop-rule = stop rule: a use case in the critical-systems bag needs a stop rule
ai-err-services = services: at most 50 services of up to 200 characters each
ai-err-not-live-project = projects: { $id } is not a live GPU project
ai-err-not-lead-link = you do not lead { $node }, so you cannot link it to a use case
ai-err-name-taken = name: a use case called { $name } already exists
ai-err-period = period: { $why }

## Amounts typed in a form


## A use case's page

ai-over-limit = Over the monthly limit: { $total } spent of { $limit } in { $month }.
ai-stop-triggered = Stop rule triggered
ai-stop-banner = ({ $at }): { $reason }. Tranche cannot stop an outside service: stop it, then acknowledge below.
ai-alert-actual = { $pct }% of the monthly limit reached: { $spent } of { $limit }
ai-alert-forecast = forecast to reach { $pct }% of the monthly limit by the month's end: { $spent } of { $limit }
ai-allowed-data = Allowed data
ai-ai-action = AI action
ai-human-review = Human review
ai-services = Services
ai-gpu-projects = GPU projects
ai-spend-in = Spend in { $month }
ai-spend-gpu = GPU projects (ledger)
ai-spend-imported = Imported outside services
ai-spend-total = Total
ai-limit-used = { $limit } ({ $pct } used)
ai-human-work = Human work (beside the limit)
ai-human-line = { $hours } h × { $rate } = { $cost }
ai-hours = Hours
ai-work = Work
ai-note = Note
ai-record-hours = Record hours
ai-edit = Edit
ai-change-status = Change status
ai-what-was-done = What was done
ai-what-was-done-example = service paused at the provider
ai-acknowledge = Acknowledge the stop rule
ai-criterion-met = Stop criterion met
ai-what-happened = what happened
ai-trigger = Trigger the stop rule
ai-acknowledged = acknowledged by { $name } on { $at }: { $note }
ai-review = Monthly review
ai-new-limit = New monthly limit (expand only)
ai-metric-value = Metric value ({ $metric })
ai-record-decision = Record the decision
ai-no-decision = No decision yet.
ai-th-spend-of-limit = Spend of limit
ai-expand-to = expand to { $limit }
ai-spend-of = { $spent } of { $limit }
ai-no-rules = No imported spend maps to this use case yet.
ai-status-now = { $name } is now { $status }.
# $count chooses the plural form; $n is the same number written out.
ai-rule-added = Spend now maps to { $name }; { $count ->
    [one] { $n } unassigned line assigned.
   *[other] { $n } unassigned lines assigned.
}
ai-decision-recorded = Decision recorded: { $decision }.
ai-hours-recorded = Recorded { $hours } h.
ai-stop-acknowledged = Stop rule acknowledged.
ai-stop-raised = Stop rule triggered; stop the service, then acknowledge.
ai-err-month = month: { $problem }
ai-err-new-limit = new limit: { $problem }
ai-err-status = status: { $got } is not one of proposed, pilot, active, stopped
ai-err-decision = decision: choose continue, expand or stop
ai-err-decision-stopped = decision: the use case is stopped; to go on, set its status to “pilot” or “active” first
ai-err-metric-value = metric value: give the metric's value this month (at most 500 characters)
ai-err-future-month = month: decide on this month or a past one
ai-err-hours-future-month = month: record hours for this month or a past one
ai-err-not-lead-decide = you do not lead { $owner }, so you cannot decide on its use cases
ai-err-expand-above = new limit: expanding needs a limit above the current { $current } (got { $got })
ai-err-expand-needs = new limit: expanding needs the new monthly limit
ai-err-only-expand = new limit: only an expansion sets a new limit; leave it empty
ai-err-hours = hours: { $got } is not a positive number of hours such as 1.5 or 0.25
ai-err-hours-decimals = hours: { $got } has more than two decimals; give hours to the hundredth, such as 1.25
ai-err-hours-max = hours: { $got } is more than 74,400 hours, the most one entry records
ai-err-hours-minutes = hours: { $got } is not a whole number of minutes; use steps of 0.05 hours (3 minutes), such as 0.25
ai-err-activity = activity: choose data, review or exceptions
ai-err-hours-zero = hours: more than zero
ai-err-note = note: at most 500 characters
ai-err-not-lead-hours = you do not lead { $owner }, so you cannot record hours for its use cases
ai-err-not-lead-acknowledge = you do not lead { $owner }, so you cannot acknowledge for its use cases
ai-err-nothing-to-acknowledge = no stop rule is triggered for this use case
ai-err-reason = reason: say how the stop criterion was met (at most 2000 characters)
ai-err-not-lead-report = you do not lead { $owner }, so you cannot report for its use cases
ai-err-not-critical = only use cases in the critical-systems bag have a stop rule that Tranche raises
ai-err-already-triggered = the stop rule is already triggered this month

## The stop rule's notification (home page and e-mail)

ai-stop-notice = Stop rule triggered for { $name } (critical systems): { $reason }. Tranche cannot stop an outside service: stop it, then acknowledge on the use case's page
ai-stop-subject = Tranche AI use case: stop rule triggered for { $name }
ai-stop-reason-criterion = stop criterion met: { $text }
ai-stop-reason-limit = spent { $amount } of its { $month } limit of { $limit }

## The home page's notes on use cases

ai-home-stop = stop rule triggered: stop the service, then acknowledge
ai-home-over = over its monthly limit: { $spent } of { $limit }
ai-home-review = waits for your decision on { $month }

## Imported spend

ai-spend-title = Imported AI spend
ai-spend-intro = Cost exports of outside services, in { $currency }. The same file twice adds nothing; lines that no mapping rule assigns to a use case stay listed as unassigned. A file in another currency needs the rate ({ $currency } per unit of the file's currency).
ai-spend-preview = Preview
ai-spend-already = This file was imported before: confirming adds nothing.
ai-spend-currency = Currency
ai-spend-rate-each = at { $rate } { $currency } each
ai-spend-covers = Covers
ai-spend-covers-range = { $from } to { $to }
ai-spend-lines-in-file = { $lines } in the file: { $new } new, { $skipped } already imported
ai-spend-new = New spend
ai-spend-confirm = Confirm import
ai-spend-start-over = Start over
ai-spend-import-heading = Import a cost export
ai-spend-file = File
ai-spend-rate = Rate ({ $currency } per unit, only for another currency)
ai-spend-unassigned = Unassigned lines
ai-spend-unassigned-count = { $count ->
    [one] { $n } line
   *[other] { $n } lines
}, { $total }.
ai-spend-day = Day
ai-spend-description = Description
ai-spend-rules-note = A line belongs to the use case of the first rule it matches; rules that name a format, a service and a scope come first.
ai-spend-imports = Imports
ai-spend-nothing = Nothing imported yet.
ai-spend-file-name = File
ai-spend-import-rate = { $currency } at { $rate } { $site }
ai-spend-import-lines = { $new } new, { $skipped } already imported
ai-spend-only-finance-see = only finance and admins see imported spend
ai-spend-only-finance = only finance and admins import spend
ai-spend-choose-format = format: choose the export's format
ai-spend-choose-file = file: choose a file to import
ai-spend-choose-again = { $problem } (choose the file again: browsers do not send it back)
ai-spend-not-upload = expected a file upload form: { $error }
ai-spend-unreadable = the upload could not be read: { $error }
ai-spend-expired = this preview was already used or has expired; upload the file again
ai-spend-imported-before = This file was imported before; nothing was added.
ai-spend-imported-new = Imported { $count ->
    [one] { $n } new line
   *[other] { $n } new lines
} ({ $amount }); { $skipped } already imported.
ai-err-source = source: choose any, openai, anthropic, github or focus
ai-err-rule-empty = give a service, a scope (project, workspace, cost centre or tag key=value) or both
ai-err-rule-long = service and scope: at most 200 characters each
ai-err-rule-forbidden = only finance, admins and the use case's leads map spend to it
ai-err-rule-takes = this rule would take lines that use case { $use_case } (another team's) maps with a less specific rule; ask finance or an admin to map them
ai-err-rule-exists = a rule for this source, service and scope already exists
ai-err-rate = rate: { $got } is not a positive number of at most six decimals, such as 0.92
ai-err-malformed = { $format }: { $problem }; nothing was imported
ai-err-rate-not-needed = rate: the file is already in { $currency }; leave the rate empty
ai-err-currency-mismatch = the file is in { $file }, the organisation counts in { $currency }; give the rate ({ $currency } per { $file }) to convert it, or export it in { $currency }. Nothing was imported

## Reading cost exports

ai-import-not-utf8 = the file is not UTF-8 text (byte { $byte })
ai-import-no-lines = the file has no cost lines
ai-import-control-char = cost line { $line } has a control character (U+{ $code }) in “{ $text }”: fix the export and send it again
ai-import-too-many = the file has { $count } cost lines, more than { $max }; split it
ai-import-not-number = { $got } is not a number
ai-import-too-large = { $got } is too large
ai-import-line-too-large = cost line { $line }: { $amount } is too large once converted at the rate
ai-import-line-outside = cost line { $line }: its charge period begins { $start }, outside the months reports cover ({ $from } to { $to }); nothing was imported
ai-import-total-too-large = the amounts are too large to add up: imported lines may come to at most { $max } in all (counting credits as amounts too), this file's included
ai-import-not-instant = { $got } is not a date or an instant such as 2026-11-01T00:00:00Z
ai-import-not-currency = { $at }: { $got } is not a currency code such as USD
ai-import-mixed = { $at }: the file mixes currencies ({ $first } and { $second }); export one currency per file
ai-import-not-json = the file is not valid JSON: { $error }
ai-import-no-data = the file has no `data` list of buckets; export the API's JSON answer as it is
ai-import-not-text = { $field } is missing or not text
ai-import-not-list = { $field } is missing or not a list
ai-import-not-unix = { $field } is missing or not a Unix time in seconds
ai-import-before = { $at }: { $end } is before { $start }
ai-import-missing = { $field } is missing
ai-import-not-number-field = { $field } is missing or not a number
ai-import-not-decimal-string = { $field } is missing or not a decimal string
ai-import-not-csv = the file is not CSV: { $error }
ai-import-bad-csv-line = line { $line }: not valid CSV: { $error }
ai-import-bad-csv = not valid CSV: { $error }
ai-import-column-twice = the file names the column { $column } twice: export it once
ai-import-no-column = the file has no { $column } column (its columns: { $columns })
ai-import-no-scope-column = the file has neither a cost_center_name nor an organization column
ai-import-line = line { $line }
ai-import-empty = { $at }: { $field } is empty
ai-import-tags-example = { $at }: Tags is not a JSON object such as {"{"}"team":"support"{"}"}
ai-import-tags = { $at }: Tags is not a JSON object

ai-format-openai = OpenAI costs API (JSON)
ai-format-anthropic = Anthropic cost report (JSON)
ai-format-github = GitHub billing usage report (CSV)
ai-format-focus = FOCUS 1.x (CSV)
