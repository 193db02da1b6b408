# Capacity contracts, approvals of protected runs and the ledger's messages in English.
# Domain terms: docs/glossary.md.

## The contract list

contract-list-title = Contracts
contract-list-heading = Capacity contracts
contract-calendar = Capacity calendar
contract-buy-link = Buy a contract
contract-none = No contracts yet.
contract-th-window = Window ({ $zone })
contract-th-price = Price
contract-state-active = active
contract-state-scheduled = scheduled
contract-state-ended = ended
contract-state-cancelled = cancelled
contract-state-refunded = cancelled, { $refund } refunded
contract-cancel = cancel ({ $refund } back)
contract-window = { $start } → { $end } ({ $hours } h)
contract-cancelled = Cancelled contract #{ $id }; { $refund } refunded.

## Buying a contract

contract-form-title = Buy a capacity contract
contract-form-intro = Reserve GPUs for a window: inside it your project's runs on them are protected; unused reserved GPUs are lent only to preemptible work and taken back at once. Paid up front from the project's budget. Times are wall-clock in { $zone } (or RFC 3339 with an offset).
contract-preview = Price preview
contract-project = Project
contract-gpus = GPUs
contract-window-label = Window
contract-window-utc = UTC { $start } → { $end }
contract-gpu-hours = GPU-hours
contract-price = Price
contract-price-formula = = { $gpus ->
    [one] 1 GPU
   *[other] { $gpus } GPUs
} × { $length } × weight { $weight } × { $unit }
contract-unit-price = { $price } per weighted GPU-hour
contract-budget = Budget
contract-budget-now-after = { $now } now, { $after } after
contract-capacity = Capacity
contract-capacity-value = { $peak } of { $contractable } contractable GPUs already contracted at the busiest instant
contract-confirm = Confirm purchase
contract-start-over = Start over
contract-cluster = Cluster
contract-gpu-model = GPU model
contract-start = Start
contract-end = End
contract-preview-button = Preview price
contract-only-leads = only leads and admins buy capacity contracts
contract-err-start = start: { $problem }
contract-err-end = end: { $problem }
contract-expired = this preview was already used or has expired; preview the price again before confirming
contract-bought = Bought contract #{ $id } for { $price }.

## Dates and times typed in a form

contract-when-empty = enter a date and time, for example 2026-12-01 09:00
contract-when-not-a-time = { $got } is not a date and time; use 2026-12-01 09:00 (local) or RFC 3339 with an offset
contract-when-skipped = { $time } does not exist in { $zone }: the clocks skip that hour; choose a time before or after it
contract-when-out-of-range = { $got }: the date is outside the supported range; enter a date from the year 1 to 9998

## The ledger's checks of a purchase and a cancellation

contract-err-no-project = there is no project named { $name }
contract-err-not-lead = only an admin or a lead of { $project } can buy contracts for it
contract-err-no-cluster = there is no cluster named { $name }
contract-err-no-model = there is no GPU model named { $name }
contract-err-no-gpus = cluster { $cluster } has no { $model } GPUs
contract-err-gpus-not-counted = none of the { $declared } { $model } GPUs of cluster { $cluster } counts now (their nodes are lost: the agent serving them stopped): no capacity can be contracted until they are back
contract-err-gpu-count = the GPU count must be between 1 and { $installed } (the { $model } GPUs installed on { $cluster }), got { $got }
contract-err-past = the window starts in the past ({ $start }); it must start after now
contract-err-order = the window must end after it starts (it starts { $start } and ends { $end })
contract-err-minute = a contract lasts at least one minute
contract-err-horizon = contracts can be bought up to 8 weeks ahead, until { $until }
contract-err-capacity = not enough contractable capacity: { $contractable } of the { $installed } { $model } GPUs on { $cluster } may be contracted ({ $percent }%), { $peak } are already contracted at { $at }, so only { $left } more can be; asked for { $gpus }
contract-err-budget = not enough budget: the contract needs { $hours } { $model } GPU-hours ({ $price }), { $project } has { $left } GPU-hours left in its { $month } budget ({ $balance })
contract-err-price-changed = the price changed since the preview: { $then } then, { $now } now; preview again
contract-err-not-found = no contract with id { $id }
contract-err-not-lead-cancel = only an admin or a lead of the project can cancel its contracts
contract-err-already-cancelled = this contract is already cancelled
contract-err-started = this contract has started; a started contract cannot be cancelled

## Approvals

approvals-intro = Protected runs above their project's self-service limit (GPUs × minimum runtime) wait here for a lead of the project or a node above it. A denial needs a reason: the researcher sees it on the run's page.
approvals-none = No runs wait for your approval.
approvals-not-lead = You lead no part of the program tree, so no runs wait for you.
approvals-run = Run { $id }
approvals-run-what = : { $gpus } × { $model } on { $cluster } for { $project }
run-what-on = { $gpus } × { $model } on { $cluster }
run-what = { $gpus } × { $model } on { $cluster } for { $project }
approvals-protected = Protected
approvals-protected-hours = { $hours } GPU-hours
approvals-deny-reason = Reason (required)
approvals-error-on-run = run { $id }: { $problem }
approvals-approved = Run { $id } approved.
approvals-denied = Run { $id } denied.
approvals-err-reason = say why the run is denied; the researcher sees it
approvals-err-reason-long = the reason must be at most 2000 characters
approvals-err-not-lead = only a lead of the run's project (or a node above it) may approve or deny it
approvals-err-not-waiting = run { $id } is not waiting for approval (it is { $state })
approvals-err-budget = the project has { $balance } left this period but the run's minimum runtime costs { $cost }
