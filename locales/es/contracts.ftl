# Contratos de capacidad, aprobaciones de ejecuciones protegidas y mensajes del libro mayor en
# español. Términos: docs/glossary.md.

## The contract list

contract-list-title = Contratos
contract-list-heading = Contratos de capacidad
contract-calendar = Calendario de capacidad
contract-buy-link = Comprar un contrato
contract-none = Todavía no hay contratos.
contract-th-window = Franja ({ $zone })
contract-th-price = Precio
contract-state-active = activo
contract-state-scheduled = programado
contract-state-ended = terminado
contract-state-cancelled = cancelado
contract-state-refunded = cancelado, { $refund } reembolsados
contract-cancel = cancelar (se devuelven { $refund })
contract-window = { $start } → { $end } ({ $hours } h)
contract-cancelled = Contrato n.º { $id } cancelado; se han reembolsado { $refund }.

## Buying a contract

contract-form-title = Comprar un contrato de capacidad
contract-form-intro = Reserva GPU para una franja: dentro de ella, las ejecuciones de tu proyecto en esas GPU están protegidas; las GPU reservadas que no se usan solo se prestan a trabajo desalojable y se recuperan de inmediato. Se paga por adelantado del presupuesto del proyecto. Las horas son de reloj en { $zone } (o RFC 3339 con desfase).
contract-preview = Vista previa del precio
contract-project = Proyecto
contract-gpus = GPU
contract-window-label = Franja
contract-window-utc = UTC { $start } → { $end }
contract-gpu-hours = Horas de GPU
contract-price = Precio
contract-price-formula = = { $gpus } GPU × { $length } × peso { $weight } × { $unit }
contract-unit-price = { $price } por hora de GPU ponderada
contract-budget = Presupuesto
contract-budget-now-after = { $now } ahora, { $after } después
contract-capacity = Capacidad
contract-capacity-value = { $peak } de { $contractable } GPU contratables ya contratadas en el momento de más carga
contract-confirm = Confirmar la compra
contract-start-over = Empezar de nuevo
contract-cluster = Clúster
contract-gpu-model = Modelo de GPU
contract-start = Inicio
contract-end = Fin
contract-preview-button = Ver el precio
contract-only-leads = solo los responsables y la administración compran contratos de capacidad
contract-err-start = inicio: { $problem }
contract-err-end = fin: { $problem }
contract-expired = esta vista previa ya se usó o ha caducado; vuelve a ver el precio antes de confirmar
contract-bought = Contrato n.º { $id } comprado por { $price }.

## Dates and times typed in a form

contract-when-empty = escribe una fecha y una hora, por ejemplo 2026-12-01 09:00
contract-when-not-a-time = { $got } no es una fecha y hora; usa 2026-12-01 09:00 (hora local) o RFC 3339 con desfase
contract-when-skipped = { $time } no existe en { $zone }: los relojes se saltan esa hora; elige una hora anterior o posterior
contract-when-out-of-range = { $got }: la fecha está fuera del intervalo admitido; escribe una fecha entre el año 1 y el 9998

## The ledger's checks of a purchase and a cancellation

contract-err-no-project = no hay ningún proyecto llamado { $name }
contract-err-not-lead = solo la administración o un responsable de { $project } pueden comprarle contratos
contract-err-no-cluster = no hay ningún clúster llamado { $name }
contract-err-no-model = no hay ningún modelo de GPU llamado { $name }
contract-err-no-gpus = el clúster { $cluster } no tiene GPU { $model }
contract-err-gpus-not-counted = ninguna de las { $declared } GPU { $model } del clúster { $cluster } cuenta ahora (sus nodos están perdidos: el agente que los atendía se detuvo): no se puede contratar capacidad hasta que vuelvan
contract-err-gpu-count = el número de GPU debe estar entre 1 y { $installed } (las GPU { $model } instaladas en { $cluster }); se ha escrito { $got }
contract-err-past = la franja empieza en el pasado ({ $start }); debe empezar después de ahora
contract-err-order = la franja debe terminar después de empezar (empieza el { $start } y termina el { $end })
contract-err-minute = un contrato dura al menos un minuto
contract-err-horizon = los contratos se pueden comprar con hasta 8 semanas de antelación, hasta el { $until }
contract-err-capacity = no hay capacidad contratable suficiente: de las { $installed } GPU { $model } de { $cluster } se pueden contratar { $contractable } ({ $percent } %), { $peak } ya están contratadas el { $at }, así que solo se pueden contratar { $left } más; se han pedido { $gpus }
contract-err-budget = presupuesto insuficiente: el contrato necesita { $hours } horas de GPU { $model } ({ $price }) y a { $project } le quedan { $left } horas de GPU en su presupuesto de { $month } ({ $balance })
contract-err-price-changed = el precio ha cambiado desde la vista previa: { $then } entonces, { $now } ahora; vuelve a ver el precio
contract-err-not-found = no hay ningún contrato con id { $id }
contract-err-not-lead-cancel = solo la administración o un responsable del proyecto pueden cancelar sus contratos
contract-err-already-cancelled = este contrato ya está cancelado
contract-err-started = este contrato ya ha empezado; un contrato empezado no se puede cancelar

## Approvals

approvals-intro = Las ejecuciones protegidas por encima del límite de autoservicio de su proyecto (GPU × tiempo mínimo de ejecución) esperan aquí a un responsable del proyecto o de un nodo superior. Una denegación necesita un motivo: quien investiga lo ve en la página de la ejecución.
approvals-none = No hay ejecuciones pendientes de tu aprobación.
approvals-not-lead = No eres responsable de ninguna parte del árbol de programas, así que ninguna ejecución espera tu aprobación.
approvals-run = Ejecución { $id }
approvals-run-what = : { $gpus } × { $model } en { $cluster } para { $project }
run-what-on = { $gpus } × { $model } en { $cluster }
run-what = { $gpus } × { $model } en { $cluster } para { $project }
approvals-protected = Protegida
approvals-protected-hours = { $hours } horas de GPU
approvals-deny-reason = Motivo (obligatorio)
approvals-error-on-run = ejecución { $id }: { $problem }
approvals-approved = Ejecución { $id } aprobada.
approvals-denied = Ejecución { $id } denegada.
approvals-err-reason = indica por qué se deniega la ejecución; quien investiga lo verá
approvals-err-reason-long = el motivo debe tener como máximo 2000 caracteres
approvals-err-not-lead = solo un responsable del proyecto de la ejecución (o de un nodo superior) puede aprobarla o denegarla
approvals-err-not-waiting = la ejecución { $id } no está pendiente de aprobación (está en estado «{ $state }»)
approvals-err-budget = al proyecto le quedan { $balance } en este periodo, pero el tiempo mínimo de ejecución de la ejecución cuesta { $cost }
