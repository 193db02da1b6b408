# La interfaz de Tranche en español. Términos del dominio: docs/glossary.md.

## Layout

nav-home = Inicio
nav-runs = Ejecuciones
nav-submit = Enviar
nav-approvals = Aprobaciones
nav-tree = Árbol de programas
nav-capacity = Capacidad
nav-contracts = Contratos
nav-ai = Casos de uso de IA
nav-spend = Gasto
nav-metrics = Métricas
nav-audit = Registro de auditoría
nav-inventory = Inventario
nav-users = Usuarios
nav-settings = Ajustes
nav-account = Cuenta
layout-sign-out = Cerrar sesión
layout-language = Idioma
layout-language-saved = Idioma cambiado.

## Error pages

error-heading = { $status ->
    [400] Solicitud incorrecta
    [403] Prohibido
    [404] No encontrado
    [409] Conflicto
    [413] Demasiado grande
    [422] No se puede aceptar
   *[other] Error
}
error-page-title = Error
error-back = Volver a Tranche
error-internal = algo ha fallado por nuestra parte; ha quedado registrado
error-unavailable = la base de datos no está disponible por un momento; inténtalo de nuevo en unos segundos
error-csrf = el formulario ha caducado o viene de otro sitio; recarga la página y vuelve a intentarlo
error-no-such-page = esa página no existe
error-form-only = esta dirección recibe un formulario al enviarlo, no una visita: vuelve a la página del formulario
error-page-only = esta dirección es una página para visitar y no recibe formularios: vuelve atrás y envía el formulario desde su propia página

## Sign in

login-title = Iniciar sesión
login-with = Iniciar sesión con { $provider }
login-or-password = O con una contraseña de Tranche:
login-user = Nombre de usuario
login-password = Contraseña
login-submit = Iniciar sesión
login-wrong = nombre de usuario o contraseña incorrectos
login-throttled = demasiados inicios de sesión fallidos para este nombre desde tu dirección: vuelve a intentarlo dentro de { $seconds } s
login-local-off = el inicio de sesión con contraseña está desactivado aquí: inicia sesión con la cuenta de tu organización
login-directory-down = no se puede acceder al directorio de la organización; vuelve a intentarlo dentro de unos minutos
login-provider-down = no se puede acceder al proveedor de identidad de la organización; vuelve a intentarlo dentro de unos minutos
login-provider-timeout = no se puede acceder al proveedor de identidad de la organización o no ha respondido a tiempo; vuelve a intentarlo dentro de unos minutos
login-oidc-state = este inicio de sesión no pertenece a esta sesión del navegador o ya se ha usado; empieza de nuevo con el botón de inicio de sesión
login-oidc-refused = el proveedor de identidad ha rechazado el inicio de sesión: { $why }
login-oidc-invalid = la respuesta del proveedor de identidad no ha superado una comprobación ({ $why }); no se ha iniciado ninguna sesión
login-no-access = tu cuenta no está en ninguno de los grupos que dan acceso a Tranche; pide a un administrador que te añada a uno
login-name-taken = ya existe una cuenta de Tranche llamada { $name } que no está vinculada a la cuenta de tu organización; consulta a un administrador
login-disabled = esta cuenta está desactivada en Tranche
signed-out-title = Sesión cerrada
signed-out-heading = Ha cerrado la sesión de Tranche
signed-out-now = Has cerrado la sesión de Tranche. Ahora se cierra también tu sesión en { $provider }…
signed-out-continue = Continuar a { $provider }

## Home

home-approvals = { $count ->
    [0] Ninguna ejecución espera tu aprobación.
    [one] { $shown } ejecución espera tu aprobación
   *[other] { $shown } ejecuciones esperan tu aprobación
}
home-title = Inicio
home-welcome = Hola, { $name }
home-roles = Tus roles:
home-no-roles = ninguno todavía; pídeselo a un administrador.
home-period = Periodo presupuestario: { $period } ({ $zone }).
home-period-range = del { $start } al { $end } ({ $hours } h)
home-notifications = Avisos
home-mark-read = Marcar todo como leído
home-ai = Casos de uso de IA
home-idle = GPU ociosas (acaparadas)
home-idle-note = Ejecuciones cuyas GPU informan todas de un uso inferior al { $threshold } %.
home-preemptions = Avisos de desalojo
home-node-losses = Ejecuciones cuyo nodo se perdió
home-run = Ejecución { $id }
home-active-runs = Tus ejecuciones activas
home-no-active = Ninguna.
home-submit = Enviar una ejecución
home-all-runs = Todas tus ejecuciones
home-led = Nodos de los que eres responsable
home-led-share = { $share } % de la organización
home-projects = Tus proyectos
home-effective-share = Cuota efectiva
home-entitlement = Dotación en este periodo
home-see-tree = Ver el árbol de programas
role-admin = administración
role-finance = finanzas
role-lead = responsable
role-researcher = investigador/a

## Table headings used on several pages

th-what = Qué
th-state = Estado
th-command = Orden
th-project = Proyecto
th-cluster = Clúster
th-model = Modelo
th-gpu-model = Modelo de GPU
th-gpus = GPU
th-node = Nodo
th-when = Cuándo
th-attempt = Intento
th-details = Detalles

## Run states

state-waiting_approval = pendiente de aprobación
state-denied = denegada
state-queued = en cola
state-starting = arrancando
state-running = en ejecución
state-stopping = deteniéndose
state-completed = terminada
state-succeeded = completada
state-failed = fallida
state-cancelled = cancelada
state-preempted = desalojada
state-timeout = tiempo agotado
state-lost = perdida

## Runs list

runs-title = Ejecuciones
runs-submit = Enviar una ejecución
runs-show = Mostrar
runs-state = Estado
runs-project = Proyecto
runs-cluster = Clúster
runs-filter = Filtrar
runs-none = Ninguna ejecución coincide.
runs-submitted = Enviada ({ $zone })
runs-any = cualquiera
runs-scope-all = todo lo que puedo ver
runs-scope-mine = enviadas por mí
runs-scope-projects = mis proyectos
runs-state-active = activas
runs-shown-latest = { $shown ->
    [one] Se muestra la ejecución más reciente de { $total }.
   *[other] Se muestran las { $shown } ejecuciones más recientes de { $total }.
}
runs-shown-all = { $total ->
    [one] Se muestra la única ejecución.
   *[other] Se muestran las { $total } ejecuciones.
}
runs-shown-older = Se muestran las ejecuciones { $from } a { $to } de { $total }, de la más reciente a la más antigua.
runs-shown-none-older = { $total ->
    [one] No hay ejecuciones más antiguas; en total coincide { $total }.
   *[other] No hay ejecuciones más antiguas; en total coinciden { $total }.
}
runs-pages = Páginas de ejecuciones
runs-newest = Ejecuciones más recientes
runs-older = Ejecuciones más antiguas

## Why a run waits (the run page and lists)

run-waiting-estimated = { $reason }; inicio estimado: { $at }
run-waiting-no-estimate = { $reason }; aún sin inicio estimado
run-waiting-next-pass = esperando la próxima pasada del planificador
wait-reserved-suffix = ; inicio reservado hacia { $at }
wait-fair-share = { $count ->
    [one] { $projects } va antes (está dentro de su dotación o más por debajo de su cuota equitativa) y ocupa o espera las GPU que necesita{ $reserved }
   *[other] { $more ->
        [0] { $projects }
       *[other] { $projects } y { $more } más
    } van antes (están dentro de su dotación o más por debajo de su cuota equitativa) y ocupan o esperan las GPU que necesita{ $reserved }
}
wait-position = es la { $position }.ª de la cola de su proyecto
wait-over-share = su proyecto ocupa { $held } GPU { $model } y su cuota equitativa (dotación) es { $entitlement }; las demás GPU ocupadas están dentro de la dotación de otros proyectos, así que espera a que se liberen { $gpus }{ $reserved }
wait-idle-gpus = sin asignación: espera { $gpus ->
    [one] { $gpus } GPU ociosa
   *[other] { $gpus } GPU ociosas
} de su modelo (ahora hay { $free ->
    [one] { $free } ociosa
   *[other] { $free } ociosas
}); nunca desaloja a otras{ $waiting ->
    [0] {""}
    [one] ; antes va 1 ejecución asignada que espera GPU de su modelo
   *[other] ; antes van { $waiting } ejecuciones asignadas que esperan GPU de su modelo
}
wait-short-run-headroom = espera { $gpus } GPU: ahora hay { $free ->
    [one] { $free } ociosa
   *[other] { $free } ociosas
}, de las que el grupo guarda { $kept } para ejecuciones cortas (límite de tiempo de 15 minutos o menos) para que empiecen en el acto
wait-reserved = esperando { $gpus } GPU { $model }, { $free ->
    [one] ahora hay 1 libre
   *[other] ahora hay { $free } libres
}; inicio reservado hacia { $at }
wait-behind-reservation = hay GPU reservadas para la ejecución { $run } desde { $at } aproximadamente, y esta ejecución no terminaría antes
wait-protected = las GPU que podría tomar están protegidas hasta { $until } (tiempo mínimo de ejecución de las ejecuciones que las usan, o el contrato de capacidad en el que se ejecutan)
wait-gpus = esperando { $gpus } GPU de su modelo; ahora hay { $free } libres
wait-nodes-draining = nodo en vaciado: necesita { $gpus } GPU y las que podría usar están en nodos que se están vaciando para su reparación
wait-budget = presupuesto agotado: su tiempo mínimo de ejecución cuesta { $needs } y al proyecto le quedan { $has } en este periodo (aún puede ejecutarse sin asignación con tiempo mínimo 0)
wait-unallocated-cap = alcanzado el límite del proyecto de { $cap } GPU sin asignación ({ $held } en uso)
wait-contracts = { $held } GPU están retenidas para contratos de capacidad de otros proyectos (libres, o prestadas a ejecuciones sin asignación hasta que un contrato las recupere)
wait-in-line = en cola: { $count ->
    [one] { $count } ejecución
   *[other] { $count } ejecuciones
} por delante
wait-gpus-down = esperando a nodos caídos: necesita { $gpus } GPU de su modelo y { $up } están en nodos activos
wait-never-fits = pide { $gpus } GPU, pero de su modelo solo hay { $installed } instaladas; no podrá arrancar nunca
wait-no-live-agent = ningún agente activo: ninguna de las { $offline } GPU { $model } de su clúster tiene un agente de nodo en marcha; arrancará cuando haya agentes sirviendo sus nodos
wait-no-live-agent-enough = no hay agentes activos en suficientes nodos: necesita { $gpus } GPU { $model }; { $installed } están en nodos con un agente de nodo en marcha y { $offline } en nodos sin él
wait-gpus-some-offline = esperando { $gpus } GPU { $model }: { $free } libres en nodos con un agente de nodo en marcha; otras { $offline } están en nodos sin él
wait-draining-or-outside = esperando { $gpus } GPU: las libres están en nodos que se están vaciando u ocupados por trabajos de Slurm ajenos a Tranche; fuera de Tranche, { $outside }
wait-with-outside = { $reason }; fuera de Tranche, { $outside }
wait-executor-down = el controlador de Slurm del clúster { $cluster } no responde desde { $since } ({ $error }); los nuevos arranques esperan y las ejecuciones en marcha conservan su estado
runs-ahead = { $count ->
    [one] { $count } ejecución por delante
   *[other] { $count } ejecuciones por delante
}

## The run page

run-title = Ejecución { $id }
run-back = ← Ejecuciones
run-why-waits = Por qué espera:
run-waits-approval = Espera la aprobación de un responsable:
run-waits-approval-why = su contrato protegido ({ $hours } horas de GPU) supera el límite de autoservicio del proyecto.
run-decision = Decisión:
run-preempted = Desalojada { $count ->
    [one] una vez
   *[other] { $count } veces
}: mira las entradas resaltadas de la cronología.
run-lost = Su nodo se perdió { $count ->
    [one] una vez
   *[other] { $count } veces
} (el agente del nodo se detuvo o dejó de responder): no es un desalojo; mira las entradas resaltadas de la cronología.
run-project = Proyecto
run-gpus = GPU
run-gpus-on = { $gpus } × { $model } en { $cluster }
run-min-runtime = Tiempo mínimo de ejecución
run-min-runtime-free = 0 (gratuita, desalojable)
run-protected-hours = ({ $hours } horas de GPU protegidas)
run-time-limit = Límite de tiempo
run-priority = Prioridad
run-within-project = (dentro del proyecto)
run-charges = Cargos
run-charges-none = ninguno todavía (una ejecución se cobra mientras se ejecuta; el coste de su tiempo mínimo solo se reserva)
run-charges-never-ran = ninguno: nunca llegó a ejecutarse
run-charges-ended-none = ninguno
run-charges-paid = { $money } del presupuesto del proyecto por { $hours } horas de GPU
run-charges-prepaid = { $hours } horas de GPU en el contrato de capacidad del proyecto, ya pagadas con él
run-charges-free = { $hours } horas de GPU gratuitas (sin asignación, o más allá del presupuesto)
run-resumable = Reanudable
run-resumable-yes = sí, vuelve a la cola tras un desalojo o la pérdida de su nodo
run-resumable-no = no, un desalojo o la pérdida de su nodo la terminan
run-submitted = Enviada
run-submitted-by = por { $name }, { $at }
run-started = Iniciada
run-started-attempt = { $at } (intento { $attempt })
run-ended = Terminada
run-exit = salida: { $code }
run-decision-reason = Motivo de la decisión
run-command = Orden
run-workdir = Directorio de trabajo
run-env = Entorno
run-cancel = Cancelar la ejecución { $id }
run-approve-or-deny = Aprobar o denegar
run-approve-reason = Motivo (opcional)
run-approve = Aprobar
run-deny-reason = Motivo (obligatorio; lo verá quien investiga)
run-deny = Denegar
run-timeline = Cronología
run-nothing-yet = Nada todavía.
run-made-room = dejó sitio a
run-link = la ejecución { $id }
run-placements = Ubicaciones
run-not-placed = Aún no se ha ubicado en ningún nodo.
run-no-placement = No se registró ninguna ubicación para esta ejecución.
run-gpu-indices = Índices de GPU
run-executor-job = Trabajo del ejecutor
run-process = Proceso
proc-assigned = asignado, aún sin arrancar
proc-running = en ejecución
proc-exited = terminado
proc-held = retenido hasta que todos los nodos del grupo puedan arrancarlo a la vez (el proceso de otra ejecución aún usa GPU de uno de ellos)
proc-never-started = nunca arrancó (se detuvo antes de que arrancara su proceso)
run-slurm-job = trabajo de Slurm { $job }
run-exit-code = Código de salida
run-utilization = Uso de GPU
run-submitted-queued = Ejecución { $id } enviada y en cola: { $preview }.
run-submitted-approval = Ejecución { $id } enviada; espera la aprobación de un responsable.
run-already-submitted = Este formulario ya se envió: es la ejecución { $id }.
run-form-resent = Este formulario ya se envió como la ejecución { $id } con otros valores. Revisa los valores y vuelve a enviarlo para crear una ejecución nueva.
run-cancelled = Ejecución { $id } cancelada.
run-cancel-requested = Se ha pedido cancelar la ejecución { $id }; sus procesos se están deteniendo.

## The run form

form-title = Enviar una ejecución
form-intro = Una ejecución es un bloque: todas sus GPU arrancan juntas o ninguna. Su <strong>tiempo mínimo de ejecución</strong> es su contrato por franja de tiempo: durante ese tiempo está protegida frente a desalojos y su coste se carga al presupuesto del proyecto. Con tiempo mínimo 0 es gratuita y desalojable: usa GPU ociosas y cualquier ejecución asignada puede recuperarlas. Las duraciones se escriben en minutos (90) o en horas y minutos (1:30); el máximo del sitio para el tiempo mínimo de ejecución es { $max }.
form-fix-field = Corrige el campo marcado abajo.
form-preview = Coste previsto
form-needs-approval-tag = requiere aprobación
form-needs-approval = Al enviarla irá a la bandeja de aprobaciones de un responsable; solo arrancará cuando se apruebe.
form-nothing-yet = Todavía no se ha enviado nada: pulsa Enviar para ponerla en cola.
form-where = Dónde
form-project = Proyecto
form-no-projects = Aún no eres miembro de ningún proyecto; pide a un responsable que te añada.
form-cluster = Clúster
form-gpu-model = Modelo de GPU
form-gpus = GPU
form-how-long = Cuánto tiempo
form-min-runtime = Tiempo mínimo de ejecución
form-min-runtime-example = 0 o 1:30
form-time-limit = Límite de tiempo
form-time-limit-example = 60 o 24:00
form-priority = Prioridad dentro del proyecto
form-resumable = Reanudable (vuelve a la cola tras un desalojo en lugar de terminar)
form-what = Qué
form-command = Orden
form-workdir = Directorio de trabajo (opcional)
form-workdir-example = /home/yo/proyecto
form-env = Entorno (opcional, un NOMBRE=valor por línea)
form-secret-env = Entorno secreto (opcional, un NOMBRE=valor por línea)
form-secret-note = Los valores secretos se guardan cifrados, se muestran como •••• a todo el mundo (también a ti) y solo se entregan al agente del nodo que ejecuta el trabajo. Las variables cuyo nombre contiene TOKEN, SECRET, KEY o PASSWORD (como <code>HF_TOKEN</code>) se mantienen en secreto aunque se escriban en el entorno de arriba.
form-secret-reenter = Los valores secretos nunca se vuelven a mostrar: se conservan los nombres; vuelve a escribir sus valores antes de enviar.
form-preview-button = Ver el coste
form-submit = Enviar
err-gpus-whole = el número de GPU debe ser un número entero (se ha escrito { $got })
err-min-runtime-format = el tiempo mínimo de ejecución debe ir en minutos enteros (90) o en horas y minutos (1:30); se ha escrito { $got }
err-time-limit-format = el límite de tiempo debe ir en minutos enteros (90) o en horas y minutos (1:30); se ha escrito { $got }
err-priority-whole = la prioridad debe ser un número entero entre -1000 y 1000 (se ha escrito { $got })
err-env-line = línea { $line }: escribe NOMBRE=valor (se ha escrito { $got })
err-env-twice = línea { $line }: { $name } aparece dos veces

## Account

account-never = nunca
account-label-too-long = una etiqueta tiene como máximo 100 caracteres
account-title = Tu cuenta
account-language = Idioma
account-language-note = El idioma de la interfaz para ti. Si no eliges ninguno, Tranche sigue el idioma de tu navegador y, si no, el predeterminado de la organización.
account-language-auto = El del navegador o el de la organización
account-save = Guardar
account-tokens = Tokens de la API
account-tokens-use = Usa un token como <code>Authorization: Bearer TOKEN</code> para la <a href="/api/v1/openapi.json">API JSON</a>.
account-token-created = Tu nuevo token, que solo se muestra una vez; cópialo ahora:
account-token-label = Etiqueta
account-token-create = Crear un token
account-token-created-at = Creado
account-token-used = Último uso
account-token-revoked = revocado { $at }
account-token-revoke = revocar
account-email = Correo electrónico
account-email-note = Las alertas de presupuesto también se envían aquí cuando el sitio tiene el correo configurado.
account-email-address = Dirección
account-password = Contraseña
account-password-current = Contraseña actual
account-password-new = Contraseña nueva (al menos 10 caracteres)
account-password-repeat = Repite la contraseña nueva
account-password-change = Cambiar la contraseña

## Organisation settings (admins)

settings-title = Ajustes de la organización
settings-default-language = Idioma predeterminado
settings-default-language-note = Para quien visita con un navegador que no pide inglés, español ni euskera, y para quien no ha elegido idioma.
settings-save = Guardar
settings-saved = Ajustes guardados.

## Spend reports

reports-title = Informes de gasto
reports-err-role = los informes de gasto son para finanzas, administración y responsables
reports-all-models = todos
reports-archived = archivado
reports-period = Periodo
reports-node = Nodo
reports-cluster = Clúster
reports-all-clusters = todos los clústeres
reports-show = Mostrar
reports-export = Exportar CSV
reports-ai-csv = CSV de casos de uso de IA
reports-note = Importes en { $currency }. Contratos: compras menos reembolsos, horas de GPU de los contratos vigentes. Ejecuciones: tiempo de ejecuciones asignadas cargado a los presupuestos. Gratuitas: horas de GPU sin asignación (sin cargo). Previsión: los contratos tal como se compraron y el gasto en ejecuciones proyectado al final del periodo a su ritmo hasta ahora. La exportación CSV mantiene los nombres de columna en inglés y números sin formato (1234.56) en todos los idiomas, para hojas de cálculo y scripts.
reports-contracts = Contratos
reports-contract-hours = Horas de GPU de contratos
reports-runs = Ejecuciones
reports-run-hours = Horas de GPU de ejecuciones
reports-free-hours = Horas de GPU gratuitas
reports-total = Gasto total
reports-entitlement-hours = Horas de GPU de dotación
reports-entitlement-value = Valor de la dotación
reports-budget = Presupuesto
reports-cap = Límite de gasto
reports-forecast = Previsión

## Program tree

tree-title = Árbol de programas
tree-intro = Dotaciones del periodo presupuestario { $period }, en la zona horaria { $zone }: cuota efectiva × GPU instaladas × horas; el dinero, al peso de facturación y al precio de cada modelo.
tree-share-of-parent = Cuota sobre el padre
tree-gpu-hours = Horas de GPU
tree-entitlement = Dotación ({ $currency })
tree-project-tag = proyecto

## Project page

project-back = ← Árbol de programas
project-tag = proyecto
project-admin-link = Renombrar, mover o archivar este proyecto
project-share = Cuota sobre el padre
project-effective = { $share } % de la organización
project-period = Periodo
project-entitlement = Dotación
project-balance = Saldo de este periodo
project-balance-held = (de los cuales { $held } están reservados para el tiempo mínimo de sus ejecuciones protegidas en curso: quedan { $free } para nuevas ejecuciones y contratos)
project-balance-later = Saldo de { $month }
project-balance-later-note = (los contratos que empiezan entonces se pagan con él)
project-budget = Presupuesto del periodo
project-budget-default = (el valor de la dotación al abrirse el periodo; los cambios de cuotas, precios o GPU se aplican desde el periodo siguiente)
project-cap = Límite de gasto mensual
project-alerts = Alertas de presupuesto
project-alerts-at = al { $thresholds } del presupuesto del periodo, real y previsto
project-self-service = Límite de autoservicio
project-self-service-value = { $hours } horas de GPU por ejecución protegida (GPU × tiempo mínimo de ejecución); por encima, aprueba un responsable
project-runs-now = Ejecuciones ahora
project-no-runs = No hay ninguna ejecución en marcha ni en espera.
project-running = En ejecución ({ $count })
project-waiting = En espera ({ $count })
project-th-run = Ejecución
project-th-submitter = Quién la envió
project-th-why = Por qué espera
project-fair-share = Cuota equitativa
project-siblings-rank = Puesto
project-siblings-share = Cuota
project-siblings-usage = Uso (horas de GPU)
project-siblings-part = Parte del uso
project-sibling-hidden = otro proyecto (no visible para ti)
project-owed = Debido frente a recibido en este periodo
project-by-day = Por día
project-day = Día
project-owed-to-date = Debido hasta la fecha
project-received-to-date = Recibido hasta la fecha
project-spend = Gasto de este periodo
project-spend-contracts = Contratos de capacidad
project-spend-runs = Ejecuciones asignadas
project-spend-total = Total
project-spend-forecast = Previsión al final del periodo
project-spend-forecast-note = (los contratos una vez; el gasto de ejecuciones a su ritmo actual)
project-entitlements = Dotación por clúster y modelo de GPU
project-money = Dinero
project-contracts = Contratos de capacidad
project-no-contracts = Ninguno.
project-window = Franja
project-price = Precio
project-members = Miembros
project-no-members = Todavía no hay miembros.
project-remove = quitar
project-add-member = Añadir miembro (nombre de usuario)
project-add = Añadir
project-budget-settings = Ajustes de presupuesto
project-save-budget = Guardar el presupuesto
project-budget-saved = Presupuesto guardado.
project-noun-threshold = un umbral de alerta
project-noun-self-service = el límite de autoservicio
project-none = ninguno
project-rank = Puesto <strong>{ $rank } de { $count }</strong> entre sus nodos hermanos; { $usage } h GPU (ponderadas por facturación, asignadas) en los últimos 7 días, la ventana de cuota equitativa del planificador. Los hermanos se atienden por orden de cuota frente a uso; un hermano sin uso va primero.
project-owed-line = Debido hasta ahora (hora a hora, la dotación limitada a la demanda del proyecto, como en la página de métricas): <strong>{ $owed }</strong> h GPU; recibido (ejecuciones asignadas): <strong>{ $received }</strong> h GPU ({ $pct }); impacto (lo recibido de lo debido): <strong>{ $impact }</strong>.
project-no-contracts-buy = <a href="/capacity">Vea el calendario de capacidad</a> para comprar uno.
project-budget-field = Presupuesto del periodo ({ $currency }; vacío = el valor de la dotación)
project-cap-field = Límite de gasto mensual ({ $currency }; vacío = ninguno)
project-self-service-field = Límite de autoservicio (h GPU)
project-thresholds-field = Umbrales de alerta (% del presupuesto, p. ej. 50, 75, 90)

## Alerts (notifications and e-mails)

alert-budget-actual = { $project } ha gastado el { $pct } % de su presupuesto de { $month }: { $amount } de { $budget }
alert-budget-forecast = Se prevé que { $project } gaste el { $pct } % de su presupuesto de { $month } al final del periodo: { $amount } de { $budget }
alert-budget-actual-over = { $project } ha gastado más que su presupuesto de { $month }: { $amount } de { $budget }
alert-budget-forecast-over = Se prevé que { $project } gaste más que su presupuesto de { $month } al final del periodo: { $amount } de { $budget }
alert-budget-subject = Alerta de presupuesto de Tranche: { $project } al { $pct } % ({ $kind ->
    [actual] real
   *[other] previsión
})
alert-see-project = Ver el proyecto
alert-use-case-actual = El caso de uso de IA { $name } ha gastado el { $pct } % de su límite de { $month }: { $amount } de { $limit }
alert-use-case-forecast = Se prevé que el caso de uso de IA { $name } gaste el { $pct } % de su límite de { $month } al final del periodo: { $amount } de { $limit }
alert-use-case-actual-over = El caso de uso de IA { $name } ha gastado más que su límite de { $month }: { $amount } de { $limit }
alert-use-case-forecast-over = Se prevé que el caso de uso de IA { $name } gaste más que su límite de { $month } al final del periodo: { $amount } de { $limit }
alert-use-case-subject = Alerta de caso de uso de IA de Tranche: { $name } al { $pct } % ({ $kind ->
    [actual] real
   *[other] previsión
})
alert-see-use-case = Ver el caso de uso
alert-idle = La ejecución { $run } ({ $project }) tiene { $gpus } GPU { $model } ociosas (todas por debajo del { $pct } % de uso) desde { $since }: { $hours } GPU-horas, { $value } hasta ahora
alert-idle-free = La ejecución { $run } ({ $project }) tiene { $gpus } GPU { $model } ociosas (todas por debajo del { $pct } % de uso) desde { $since }: { $hours } GPU-horas hasta ahora (una ejecución gratuita: no se cobra nada, pero otras ejecuciones podrían usarlas)
alert-idle-subject = Tranche: la ejecución { $run } tiene GPU ociosas
alert-see-run = Ver la ejecución
idle-value-free = gratuita (no se cobra nada)

## Run submission: checks and the cost preview

run-preview-free = gratuita, desalojable (tiempo mínimo 0: usa GPU ociosas, y una ejecución asignada que las necesite puede desalojarla, salvo que liberara más de lo que esa ejecución necesita más las GPU de un nodo)
run-preview-cost = { $hours } horas de GPU protegidas, { $cost } del presupuesto del proyecto (saldo: { $balance }), reservados al empezar; se cobra el tiempo que se ejecute
run-preview-contract = ; { $hours } horas de GPU protegidas caen en el contrato de capacidad del proyecto, ya pagadas con él, si empieza allí
run-preview-approval = ; supera el límite de autoservicio del proyecto, { $limit } horas de GPU, así que debe aprobarla un responsable
err-choose-project = elige un proyecto
err-choose-cluster = elige un clúster
err-choose-model = elige un modelo de GPU
err-model-not-in-cluster = el clúster { $cluster } no tiene GPU { $model } instaladas; elige un modelo de GPU que tenga el clúster
err-larger-than-cluster = pide { $gpus } GPU, pero el clúster { $cluster } solo tiene { $installed } GPU { $model } instaladas; no podría arrancar nunca
err-budget-exceeded = al proyecto { $project } le quedan { $balance } en este periodo, pero el tiempo mínimo de ejecución cuesta { $cost }; reduce las GPU o el tiempo mínimo, o envíala con tiempo mínimo 0 para ejecutarla sin asignación (gratuita, desalojable)

## Gráficos

percent = { $n } %

chart-contracts = contratos de capacidad
chart-runs = ejecuciones asignadas
chart-owed = debido (dotación limitada a la demanda)
chart-received = recibido (asignado)
chart-gpu-hours = h GPU
chart-owed-received-title = { $project }: debido frente a recibido en este periodo (h GPU)
chart-spend-by-period = Gasto por periodo
chart-spend-by-model = Gasto por modelo de GPU, { $period }

## La página de un formulario rechazado por la regla del texto

input-error-title = Revise el formulario
input-error-intro = No se ha guardado nada. Lo que has enviado está abajo, con los caracteres de control mostrados como símbolos (␀ para U+0000); corrígelo y vuelve a enviarlo.
input-error-again = Enviar de nuevo
input-error-back = Volver a Tranche
input-control-char = { $field }: contiene el carácter de control U+{ $code } en el carácter { $position }; elimínalo ({ $rule })
input-rule-multiline = aquí solo se admite texto imprimible, tabuladores y saltos de línea
input-rule-line = aquí solo se admite texto imprimible en una línea

## La cronología de una ejecución (src/i18n/said.rs)

event-kind-submitted = enviada
event-kind-approved = aprobada
event-kind-denied = denegada
event-kind-started = iniciada
event-kind-running = en ejecución
event-kind-succeeded = completada
event-kind-failed = fallida
event-kind-requeued = de vuelta en la cola
event-kind-ended = terminada
event-kind-time_limit = límite de tiempo
event-kind-unallocated = sin asignación
event-kind-cancel_requested = cancelación solicitada
event-kind-cancelled = cancelada
event-kind-lost = perdida
event-kind-preempted = desalojada
event-kind-contract = en contrato
event-submitted = enviada por { $by }
event-submitted-approval = enviada por { $by }; espera la aprobación de un responsable ({ $hours } h GPU protegidas, límite de autoservicio { $limit })
event-approved = aprobada por { $by }
event-approved-why = aprobada por { $by }: { $reason }
event-denied = denegada por { $by }: { $reason }
event-cancelled = cancelada por { $by }
event-idle-stopped = detenida por ociosa por { $by }: { $reason }
event-unallocated = el presupuesto del proyecto está agotado: la ejecución continúa sin asignación (gratuita, desalojable)
event-requeued-preempted = vuelve a la cola tras el desalojo; conserva su historial y se ejecutará de nuevo cuando haya GPU libres
event-ended-preempted = terminada como desalojada (no reanudable)
event-cancelled-stopped = cancelada; sus procesos se han detenido
event-cancelled-node-lost = cancelada; se perdió el agente de su nodo antes de ver detenerse sus procesos: se dan por detenidos, y un agente que vuelva detiene los que queden
event-cancelled-before-start = cancelada antes de que sus procesos se vieran arrancar: ninguno estaba en marcha
event-time-limit-node-lost = detenida al llegar a su tiempo límite; se perdió el agente de su nodo antes de ver detenerse sus procesos: se dan por detenidos, y un agente que vuelva detiene los que queden
event-cancelled-job-gone = cancelada; Slurm ya no muestra su trabajo, así que no se sabe cómo terminó y sus procesos se dan por detenidos
event-time-limit-job-gone = detenida al llegar a su tiempo límite; Slurm ya no muestra su trabajo, así que no se sabe cómo terminó y sus procesos se dan por detenidos
event-time-limit-stopped = detenida en su límite de tiempo
event-gang-failed = un proceso del grupo ha fallado; los demás se han detenido
event-requeued-lost = vuelve a la cola tras perderse su nodo
event-requeued-lost-unstarted = vuelve a la cola: su nodo se perdió antes de que arrancaran sus procesos (no se ejecutó nada, así que vuelve a ejecutarse sea o no reanudable)
event-lost = su nodo se ha perdido y la ejecución no es reanudable
event-process-gone = su proceso ha desaparecido y su agente nunca informó de cómo terminó (una base de datos restaurada, o salidas que el agente no pudo notificar)
event-node-fault = su nodo { $node } no pudo ejecutar su proceso y se está vaciando para su reparación: { $fault }
event-requeued-node-fault = vuelve a la cola: su nodo no pudo arrancar sus procesos (no se ejecutó nada, así que vuelve a ejecutarse sea o no reanudable)
event-requeued-gang-fault = vuelve a la cola: uno de sus nodos no pudo arrancar su proceso mientras los demás se ejecutaban
event-lost-gang-fault = perdida: uno de sus nodos no pudo arrancar su proceso mientras los demás se ejecutaban, y la ejecución no es reanudable
event-exited = terminó con { $status }
event-exited-0 = terminó con estado 0
exit-127 = estado 127 (orden no encontrada, o el agente no pudo iniciarla: mira el registro de la ejecución en el nodo)
exit-signal = estado { $code } (terminado por { $signal })
exit-status = estado { $code }
event-running = sus procesos están en marcha
event-on-contract = desde ahora se ejecuta con el contrato de capacidad { $contract } (de su proyecto): protegida mientras dure la ventana y su tiempo en ella ya está pagado
event-time-limit = ha alcanzado su límite de tiempo; deteniéndose
event-node-silent = nodo { $node } perdido: su agente no ha enviado latidos durante { $seconds } s
event-agent-restarted = nodo { $node }: su agente se ha reiniciado, así que los procesos de la ejecución allí ya no existen
event-agent-stopped = nodo { $node }: su agente se ha detenido, así que los procesos de la ejecución allí ya no existen
event-place = { $node }, GPU { $gpus }
event-started-on = iniciada en { $places }
event-started-contract = iniciada en { $places } (con el contrato de capacidad { $contract })
event-started-contract-part = iniciada en { $places } ({ $covered } de sus { $gpus } GPU con el contrato de capacidad { $contract }; las demás se cobran)
preempt-node-draining = el nodo { $node } se está vaciando para su reparación
preempt-node-down = el nodo { $node } está caído
preempt-unallocated = ejecución sin asignación (gratuita): sus GPU han pasado a una ejecución asignada
preempt-fair-share = ha superado su tiempo mínimo de ejecución, y el proyecto { $project } está más por debajo de su cuota equitativa
preempt-entitlement = ha superado su tiempo mínimo de ejecución, y el proyecto { $project } está por debajo de su dotación (su cuota de las GPU) mientras el proyecto de esta ejecución tenía más que la suya
preempt-contract = sus GPU están prometidas al contrato de capacidad { $contract }
preempt-legacy-quota = se ejecutó por encima de la cuota de su equipo; otro equipo ha recuperado su cuota
event-slurm-refused = Slurm ha rechazado el trabajo: { $why }
event-slurm-uneven = Slurm ejecuta un único número de GPU por nodo en cada trabajo; la pasada colocó { $placed }
event-slurm-timeout = el trabajo de Slurm { $job } ha alcanzado su límite de tiempo
event-slurm-cancelled = cancelada fuera de Tranche: el trabajo de Slurm { $job } se canceló en Slurm
event-slurm-node-failed = el trabajo de Slurm { $job } terminó en { $state }: su nodo falló
event-slurm-ended = el trabajo de Slurm { $job } terminó en { $state } ({ $reason })
event-slurm-vanished = Slurm ya no conoce el trabajo { $job }; se desconoce cómo terminó
event-history-submitted = enviada (historial registrado)
event-history-started = iniciada en { $gpus } GPU (historial registrado)
event-history-finished = terminada (historial registrado)
event-history-ends = detenida al terminar el historial registrado
event-history-preempted = desalojada (historial registrado)
event-history-requeued = vuelve a la cola tras el desalojo (historial registrado)

## Comprobaciones de una ejecución (el formulario y la API)

err-run-gpus = el número de GPU debe ser un número entero de 1 a 100.000
err-run-time-limit = el límite de tiempo debe ser mayor que cero y de 30 días como máximo ({ $max } segundos)
err-run-time-limit-partition = el clúster { $cluster } ejecuta los trabajos en una partición de Slurm cuyo límite de tiempo (MaxTime) es de { $max } segundos: pide como máximo eso
err-run-min-runtime = el tiempo mínimo de ejecución debe ser de 0 al máximo del sitio, { $hours } h ({ $seconds } s)
err-run-min-over-limit = el tiempo mínimo de ejecución no puede superar el límite de tiempo
err-run-priority = la prioridad debe ser de -1000 a 1000
err-run-command = la orden debe tener de 1 a 8192 caracteres de texto
err-run-workdir = el directorio de trabajo debe ser una ruta absoluta
err-run-env-twice = { $name } se da dos veces, en el entorno y como secreto
err-run-env-many = como máximo 64 variables de entorno
err-run-env-name = { $name } no es un nombre de variable de entorno (letras, dígitos, _)
err-run-env-reserved = { $name } lo fija Tranche y no se puede dar
err-run-env-value = el valor de { $name } es demasiado largo o no es texto

## El formulario de presupuesto del proyecto y sus miembros

budget-err-too-large = un importe es como máximo 10.000.000.000.000,00
budget-err-negative = un presupuesto del periodo no puede ser negativo
budget-err-cap-negative = un límite de gasto no puede ser negativo
budget-err-self-service = el límite de autoservicio debe estar entre 0 y 100.000 h GPU
budget-err-forbidden = solo un administrador o un responsable por encima de este proyecto puede cambiar su presupuesto
budget-err-threshold-twice = el umbral de alerta { $pct } % se da dos veces; da cada porcentaje una sola vez
budget-err-thresholds = los umbrales de alerta son hasta 10 porcentajes de 1 a 100
budget-err-thresholds-decimal = los umbrales de alerta son porcentajes enteros separados por una coma y un espacio, o por espacios, p. ej. 50, 75, 90 (se ha escrito { $got })
budget-err-over-entitlement = los presupuestos de los proyectos bajo { $node } sumarían { $sum }, más que su dotación de { $entitlement }; reduce este u otro presupuesto de proyecto
project-err-no-user = no hay ningún usuario llamado { $name }
project-err-user-disabled = { $name } está desactivado: active la cuenta antes de añadirla a un proyecto
project-waits-approval = espera la aprobación de un responsable
project-run-since = desde { $at }; { $protection }
project-err-user-empty = escribe el nombre del usuario que quieres añadir o quitar

## Rechazos y registros inexistentes (páginas; la API responde con el texto en inglés)

err-no-project-id = no hay ningún proyecto con el id { $id }
err-no-live-project-id = no hay ningún proyecto sin archivar con el id { $id }
err-no-run = la ejecución { $id } no existe
err-settings-admins = solo la administración puede cambiar los ajustes de la organización
err-members-forbidden = solo la administración o un responsable de este proyecto pueden cambiar sus miembros
err-not-member = no eres miembro del proyecto { $project }
err-cancel-forbidden = solo quien envió la ejecución o un responsable de su proyecto puede cancelarla
err-run-ended = la ejecución { $id } ya ha terminado ({ $state })
err-reports-node-forbidden = los informes de gasto son para finanzas, administración y los responsables del nodo
err-period-format = { $got } no es un periodo; usa AAAA-MM, por ejemplo 2026-11
err-period-range = los informes abarcan los últimos 24 meses y los 2 siguientes; { $got } queda fuera
err-runs-scope = el ámbito es mine, projects o all
err-runs-state = estado desconocido { $got }; uno de active, { $states }
err-runs-before = before es el id de una ejecución, un número entero desde 1, para ver las ejecuciones más antiguas que ella; has indicado { $got }
err-query-unreadable = no se ha podido leer la cadena de consulta: { $why }
err-form-unreadable = no se ha podido leer el formulario: { $why }
err-not-a-form = se esperaba un formulario (Content-Type: application/x-www-form-urlencoded)
err-not-utf8 = { $field }: no es texto UTF-8 válido; envía solo texto
err-too-large = el cuerpo de la petición es demasiado grande (2 MiB como máximo)
err-oidc-off = el inicio de sesión con OpenID Connect no está configurado aquí
err-lang-choose = elige en, es o eu
err-lang-choose-auto = elige en, es, eu o auto
err-db-no-record = ese registro no existe
err-db-taken = ese nombre ya está en uso ({ $constraint })
err-db-sibling-shares = las cuotas de los nodos hermanos sumarían más del 100 %
err-db-out-of-range = un valor está fuera de rango ({ $constraint })
err-db-missing-reference = un registro al que se hace referencia no existe ({ $constraint })
account-err-email = { $email } no es una dirección de correo electrónico
account-err-current-password = la contraseña actual no es correcta
account-err-password-short = una contraseña necesita al menos 10 caracteres (esta tiene { $count })
account-err-password-repetitive = una contraseña necesita al menos { $count } caracteres distintos: los repetidos son fáciles de adivinar
account-err-password-long = una contraseña tiene como máximo 200 caracteres
account-err-passwords-differ = las dos contraseñas nuevas no coinciden
account-err-no-token = no tienes ningún token activo con el id { $id }
account-flash-token-revoked = Token revocado.
account-flash-password-changed = Contraseña cambiada; tus otras sesiones han terminado.
account-flash-email-saved = Dirección de correo electrónico guardada.
project-err-already-member = { $name } ya es miembro
project-err-not-member = { $name } no es miembro
project-member-added = Se ha añadido a { $name } al proyecto.
project-member-removed = Se ha quitado a { $name } del proyecto.
