# Páginas de operación en español: clúster, nodos, inventario, usuarios, capacidad, panel,
# avisos de GPU ociosas y registro de auditoría. Términos: docs/glossary.md.

## Inventory (admins): GPU models and clusters

inventory-title = Inventario
inventory-models = Modelos de GPU
inventory-models-note = Una hora de GPU de un modelo cuesta su peso de facturación × su precio por hora de GPU ponderada ({ $currency }).
inventory-weight = Peso de facturación
inventory-price-per-hour = Precio por hora de GPU ponderada
inventory-weight-of = Peso de facturación de { $name }
inventory-price-of = Precio de { $name }
inventory-save = Guardar
inventory-add-model = Añadir un modelo de GPU
inventory-name = Nombre
inventory-price = Precio ({ $currency })
inventory-add-model-button = Añadir modelo
inventory-clusters = Clústeres
inventory-nodes = Nodos
inventory-add-cluster = Añadir un clúster
inventory-add-cluster-button = Añadir clúster
inventory-gpus-of-model = { $count } × { $model }
inventory-model-added = Modelo de GPU { $name } añadido.
inventory-model-saved = Modelo de GPU guardado.
inventory-cluster-added = Clúster { $name } añadido.
inventory-admins-only = solo la administración puede abrir esta página
inventory-admins-change = solo la administración puede cambiar el inventario
inventory-price-too-high = el precio por hora de GPU es como máximo 1.000.000,00
inventory-model-exists = ya existe un modelo de GPU llamado { $name }
inventory-model-not-found = no hay ningún modelo de GPU con el id { $id }
inventory-cluster-exists = ya existe un clúster llamado { $name }

## Form checks of names, numbers and amounts (inventory, cluster and users forms)

# $what is one of the inventory-noun-* words.
inventory-name-required = hace falta un nombre de { $what }
inventory-name-too-long = un nombre de { $what } tiene como máximo { $max } caracteres (este tiene { $count })
inventory-name-invalid = { $name } no es un nombre de { $what } válido: usa letras, dígitos, '.', '_' o '-', y empieza por una letra o un dígito
inventory-noun-user = usuario
inventory-noun-cluster = clúster
inventory-noun-gpu-model = modelo de GPU
inventory-noun-node = nodo
inventory-number-whole = { $what } debe ser un número entero (se ha escrito { $got })
inventory-number-range = { $what } debe estar entre { $min } y { $max } (se ha escrito { $got })
inventory-number-positive = { $what } debe ser positivo (se ha escrito { $got })
inventory-number-decimal = { $what } debe ser un número como 1 o 1,5 (se ha escrito { $got })
inventory-number-three-decimals = { $what } tiene como máximo tres decimales (se ha escrito { $got })
inventory-number-at-most-100 = { $what } debe ser como máximo 100 (se ha escrito { $got })
inventory-noun-gpu-count = el número de GPU
inventory-noun-weight = el peso de facturación
inventory-amount-empty = escribe un importe, por ejemplo 1500 o 1500,50
inventory-amount-negative = un importe no puede ser negativo (se ha escrito { $got })
inventory-amount-not-a-number = { $got } no es un importe; escribe cifras como 1500,50
inventory-amount-too-precise = un importe tiene como máximo dos decimales (se ha escrito { $got })
inventory-amount-too-large = { $got } es demasiado grande

## A cluster (admins)

cluster-back = ← Inventario
cluster-title = Clúster { $name }
cluster-gpus-in-nodes = { $gpus }en { $nodes ->
    [one] { $nodes } nodo
   *[other] { $nodes } nodos
}.
cluster-executor = Ejecutor:
cluster-executor-agent = agente
cluster-executor-slurm = Slurm
cluster-slurm-answers = Partición de Slurm { $partition }: el controlador responde.
cluster-slurm-down = Partición de Slurm { $partition }: el controlador no responde desde { $since } ({ $error }); los nuevos arranques esperan.
cluster-outside = Trabajos de Slurm fuera de Tranche
cluster-outside-none = Ningún trabajo enviado directamente a Slurm ocupa GPU de este clúster.
cluster-outside-note = Estos trabajos se enviaron directamente a Slurm, fuera de Tranche; Tranche no coloca ninguna ejecución en las GPU que ocupan.
cluster-th-slurm-job = Trabajo de Slurm
cluster-th-name = Nombre
cluster-th-user = Usuario
cluster-declare = Declarar un nodo
cluster-host-name = Nombre de host
cluster-declare-button = Declarar nodo
cluster-nodes-note =
    Solo pueden servirse los nodos declarados aquí, mediante un agente con el token de este clúster y
    exactamente el modelo y el número de GPU declarados. Un nodo está <strong>perdido</strong> cuando su agente se detuvo
    o no envió latidos durante el plazo de espera; los nodos perdidos no reciben ejecuciones y no cuentan para
    las dotaciones ni para la capacidad contratable. Para vaciar un nodo para su reparación indicando un motivo, ábrelo.
cluster-th-status = Situación
cluster-th-agent = Agente
cluster-th-heartbeat = Último latido
cluster-th-admin-state = Estado fijado
cluster-state-of = Estado de { $name }
cluster-drain-reason = motivo, para un vaciado
cluster-drain-reason-of = Por qué se vacía { $name }
cluster-set = Fijar
cluster-heartbeat = { $at } ({ $ago })
cluster-ago-seconds = hace { $count } s
cluster-ago-minutes = hace { $count } min
cluster-ago-hours = hace { $count } h
cluster-ago-days = { $count ->
    [one] hace { $count } día
   *[other] hace { $count } días
}
cluster-node-added = Nodo { $name } añadido.
cluster-node-state-set = El nodo está ahora { $state }.
cluster-not-found = no hay ningún clúster con el id { $id }
cluster-no-such-model = no hay ningún modelo de GPU llamado { $name }
cluster-node-exists = ya existe un nodo llamado { $name } (los nombres de host son únicos en todos los clústeres)
cluster-bad-state = el estado de un nodo es en servicio (up), en vaciado (draining) o caído (down); se ha escrito { $got }

## A cluster node (admins) and the states of nodes

node-status-up = en servicio
node-status-draining = en vaciado
node-status-down = caído
node-status-lost = perdido
node-status-awaiting-agent = esperando agente
node-title = Nodo { $name }
node-back = ← Clúster { $cluster }
node-status = Situación
node-drain = Vaciado
node-return = Devolver al servicio
node-drain-for-repair = Vaciar para reparación
node-drain-note = El nodo no acepta ejecuciones nuevas; cada una de sus ejecuciones vuelve a la cola cuando ha cumplido su tiempo mínimo de ejecución (las ejecuciones protegidas siguen hasta entonces). La página indica cuándo queda vacío.
node-reason = Motivo
node-drain-button = Vaciar
node-runs = Ejecuciones en él
node-runs-none = Ninguna.
node-th-run = Ejecución
node-th-protection = Protección
node-drains = Vaciados
node-never-drained = Nunca se ha vaciado.
node-th-by = Por
node-th-drained = Vaciado
node-th-empty-since = Vacío desde
node-th-needed-human = Necesitó a una persona
node-th-returned = Devuelto
node-yes = sí
node-no = no
node-drain-empty = vacío, listo para la reparación desde { $since }
node-drain-draining = en vaciado desde { $since }: sus ejecuciones vuelven a la cola a medida que cumplen su tiempo mínimo de ejecución
node-protected-until = protegida hasta { $at }
node-past-min-runtime = ha superado su tiempo mínimo de ejecución
node-unallocated = sin asignación (nunca protegida)
node-system = sistema
node-not-yet = todavía no
node-returned-by = { $at }, por { $by }
node-edit = Corregir las GPU del nodo
node-edit-note = Para un nodo declarado con un modelo o un número equivocado (su agente se rechaza entonces: el inventario no coincide). Solo mientras ningún agente lo atiende y no se ejecuta nada en él.
node-edit-button = Guardar
node-edited = Nodo corregido.
node-drained = El nodo está en vaciado: no acepta ejecuciones nuevas.
node-returned = El nodo vuelve a estar en servicio.
node-edit-served = el nodo { $name } lo atiende un agente en marcha: detén su agente, corrige el nodo y vuelve a iniciar el agente
node-edit-busy = hay ejecuciones con GPU en el nodo { $name }: corrígelo cuando no se ejecute nada en él (vacíalo antes)
node-edit-contracts = con el nodo { $name } cambiado, los contratos de capacidad activos tendrían { $peak } GPU { $model } a la vez, más de las { $limit } que el grupo puede contratar
node-not-found = no hay ningún nodo con el id { $id }
node-reason-too-long = el motivo de un vaciado tiene como máximo 1000 caracteres
node-reason-required = indica por qué se vacía el nodo (qué hay que reparar)

## A node of the program tree: shares and administration

node-tree-back = ← Árbol de programas
node-project-page = Página del proyecto (presupuesto y miembros)
# HTML; $share is a percentage with its sign, $effective a number, $money an amount.
node-facts = Cuota respecto al padre: <strong>{ $share }</strong> · cuota efectiva: <strong>{ $effective } %</strong> de la organización · dotación en este periodo: <strong>{ $money }</strong>
node-percent = { $value } %
node-children-shares = Cuotas de sus hijos
node-no-children = Todavía no tiene hijos.
node-th-child = Hijo
node-th-share-of = Cuota en { $name } (%)
node-th-effective = Cuota efectiva
node-share-of = Cuota de { $name }
node-siblings-sum = Los hermanos pueden sumar como máximo el 100 %; ahora suman el { $sum } %.
node-save-shares = Guardar cuotas
node-administration = Administración
node-add-child = Añadir un hijo
node-name = Nombre
node-kind = Tipo
node-kind-group = programa / equipo
node-kind-project = proyecto
node-share = Cuota (%)
node-add = Añadir
node-rename = Renombrar
node-new-name = Nombre nuevo
node-move = Mover
node-new-parent = Padre nuevo
node-archive = Archivar
node-archive-button = Archivar { $name }
node-shares-saved = Cuotas guardadas.
node-child-added = { $name } añadido.
node-renamed = Renombrado.
node-moved = Movido.
node-archived = Archivado.
node-tree-not-found = no hay ningún nodo del árbol con el id { $id }
node-outside-view = este nodo queda fuera de lo que puedes ver
node-not-a-share-field = { $key } no es un campo de cuota
node-bad-kind = un nodo es un grupo o un proyecto, no { $got }
node-choose-parent = elige el nuevo padre
node-share-empty = escribe una cuota como porcentaje, por ejemplo 25 o 12,5
node-share-not-a-number = { $got } no es un número; escribe un porcentaje como 25 o 12,5
node-share-negative = una cuota no puede ser negativa (se ha escrito { $got })
node-share-over-hundred = una cuota no puede superar el 100 % (se ha escrito { $got })
node-share-too-precise = una cuota tiene como máximo dos decimales (se ha escrito { $got })
node-share-twice = el nodo { $id } aparece más de una vez
node-shares-forbidden = solo la administración o un responsable de este nodo pueden cambiar las cuotas de sus hijos
node-not-a-child = el nodo { $id } no es un hijo activo del nodo { $parent }
node-shares-over-100 = las cuotas de estos hermanos sumarían el { $sum } %; pueden sumar como máximo el 100 %
node-name-taken = ya existe un nodo llamado { $name }; los nombres son únicos en todo el árbol (sin distinguir mayúsculas)
node-name-archived = el nombre { $name } pertenece a un nodo archivado; elige otro nombre
node-no-room = los hermanos ya tienen el { $used } %, así que queda como máximo el { $left } % (se ha pedido el { $asked } %)
node-admins-create = solo la administración puede crear nodos del árbol
node-admins-rename = solo la administración puede renombrar nodos del árbol
node-admins-move = solo la administración puede mover nodos del árbol
node-admins-archive = solo la administración puede archivar nodos del árbol
node-parent-is-project = { $name } es un proyecto; los proyectos no tienen hijos
node-root-move = la raíz no se puede mover
node-move-into-itself = { $name } no puede moverse bajo sí mismo ni bajo su propio subárbol
node-root-archive = la raíz no se puede archivar
node-has-children = { $count ->
    [one] { $name } todavía tiene { $count } hijo activo; archívalo o muévelo antes
   *[other] { $name } todavía tiene { $count } hijos activos; archívalos o muévelos antes
}
node-has-contracts = { $name } todavía tiene { $count } contratos de capacidad sin terminar: cancela los que no han empezado y archívalo cuando terminen los demás
node-has-active-runs = { $name } todavía tiene ejecuciones en curso ({ $running } en marcha, { $waiting } en espera); cancélalas o deja que terminen antes de archivarlo
node-name-required = hace falta un nombre
node-name-too-long = un nombre tiene como máximo 64 caracteres (este tiene { $count })
node-name-invisible = un nombre no puede contener caracteres de control ni caracteres de formato invisibles

## Users and roles (admins)

users-title = Usuarios
users-heading = Usuarios y roles
# HTML; $name and $password are escaped.
users-created = Se ha creado <strong>{ $name }</strong>. Su contraseña, que solo se muestra una vez: <code>{ $password }</code>
users-create = Crear un usuario
users-name = Nombre
users-role = Rol
users-lead-of = Responsable del nodo (solo responsables)
users-create-button = Crear
users-password-sign-in = Inicio de sesión con contraseña
# HTML; $name is escaped.
users-local-off = Desactivado para todos salvo para el administrador de emergencia <strong>{ $name }</strong>; los demás inician sesión mediante el proveedor de identidad de la organización.
users-turn-on = Volver a activar el inicio de sesión con contraseña para todos
users-local-on = Activado para todas las cuentas locales.
users-break-glass = Administrador de emergencia (conserva el inicio de sesión con contraseña)
users-turn-off = Desactivar el inicio de sesión con contraseña para los demás
users-th-user = Usuario
users-th-roles = Roles
users-th-grant = Conceder un rol
# $role is one of the role-* words.
users-role-of = { $role } de { $node }
users-from-idp = (del proveedor de identidad)
users-revoke = Retirar { $role } a { $user }
users-node-placeholder = nodo (responsables)
users-grant = Conceder
users-role-granted = Rol concedido.
users-role-revoked = Rol retirado.
users-disable = Desactivar
users-enable = Activar
users-disable-label = Desactivar a { $user }
users-enable-label = Activar a { $user }
users-disabled-tag = desactivada
users-account-disabled = Cuenta desactivada: sus sesiones han terminado y se rechazan sus tokens de API y su inicio de sesión.
users-account-enabled = Cuenta activada de nuevo.
users-disable-self = no puedes desactivar tu propia cuenta
users-local-off-no-provider = no se puede desactivar el inicio de sesión con contraseña: este servidor no tiene configurado ningún proveedor de identidad (OIDC o LDAP), así que solo el administrador de emergencia podría entrar
users-disable-break-glass = { $name } es el administrador de emergencia mientras el inicio de sesión con contraseña está desactivado; actívalo de nuevo o nombra a otro antes
users-local-turned-on = El inicio de sesión con contraseña está activado para todas las cuentas locales.
users-local-turned-off = El inicio de sesión con contraseña está desactivado salvo para el administrador de emergencia.
users-local-on-or-off = el inicio de sesión local está activado (on) o desactivado (off); se ha recibido { $got }
users-no-such-node = no hay ningún nodo del árbol llamado { $name }
users-lead-needs-node = un responsable necesita el nodo del árbol del que es responsable
users-only-lead-node = solo el rol de responsable va ligado a un nodo del árbol
users-bad-role = un rol es admin, finance, lead o researcher (se ha recibido { $got })
users-exists = ya existe un usuario llamado { $name }
users-not-found = no hay ningún usuario con el id { $id }
users-has-role = { $name } ya tiene ese rol
users-grant-not-found = el usuario { $user } no tiene ninguna concesión { $grant }
users-last-admin = es la última persona con el rol de administración; concede ese rol a otra persona antes
users-break-glass-required = indica el administrador de emergencia que conserva el inicio de sesión con contraseña
users-no-such-user = no hay ningún usuario llamado { $name }
users-disabled = { $name } está desactivado
users-no-local-password = { $name } no tiene contraseña local
users-no-manual-admin = { $name } no tiene ningún rol de administración concedido a mano en Tranche

## Capacity calendar

capacity-title = Calendario de capacidad
capacity-pool = Clúster y modelo de GPU
capacity-show = Mostrar
# HTML of numbers only.
capacity-intro = GPU instaladas: <strong>{ $installed }</strong>; los contratos pueden ocupar <strong>{ $contractable }</strong> a la vez (el { $percent } %).
capacity-times = Horas en { $zone }. Cada celda es una hora: las GPU que aún se pueden contratar en ella.
capacity-th-day = Día
capacity-th-max-contracted = Máx. contratadas
capacity-th-min-contractable = Mín. contratables
capacity-buy = comprar
capacity-none = Todavía no hay GPU instaladas.
capacity-cell-past = pasada o fuera de este día
capacity-cell = { $date } { $time }: contratadas { $contracted }; contratables restantes { $left }
capacity-no-pool = no existe el grupo { $pool }

## Metrics dashboard

dashboard-title = Métricas
dashboard-window = Intervalo
dashboard-window-24h = últimas 24 horas
dashboard-window-7d = últimos 7 días
dashboard-window-30d = últimos 30 días
dashboard-window-period = un periodo presupuestario
dashboard-period = Periodo presupuestario
dashboard-period-current = actual
dashboard-all-clusters = todos los clústeres
dashboard-show = Mostrar
dashboard-export = Exportar CSV
dashboard-from-to = Del { $from } al { $to }.
dashboard-subtree = El impacto, las esperas y los proyectos abarcan los proyectos de los que eres responsable; la disponibilidad, la ocupación, el uso y los desalojos son los de todo el grupo de GPU.
dashboard-th-availability = Disponibilidad
dashboard-th-occupancy = Ocupación
dashboard-th-allocated = asignadas
dashboard-th-unallocated = sin asignación
dashboard-th-impact = Impacto
dashboard-th-served = Proyectos servidos ≥95 %
dashboard-th-utilization = Uso
dashboard-th-debug-wait = Espera de depuración p50 / p90 (ejecuciones)
dashboard-th-protected-wait = Espera protegida p50 / p90 (ejecuciones)
dashboard-th-unallocated-wait = Espera sin asignación p50 / p90 (ejecuciones)
dashboard-th-preemptions = Desalojos (por cada 1000 h GPU)
dashboard-definitions = Disponibilidad: tiempo de GPU sano (nodo en servicio, agente activo) / instalado. Ocupación: tiempo de GPU ocupado por ejecuciones / tiempo de GPU sano. Impacto: hora a hora, Σ mín(recibido, debido) / Σ debido, donde lo debido es la dotación limitada a la demanda del proyecto. Uso: fracción de actividad que informaron los agentes sobre el tiempo de GPU del que informaron. Ejecuciones de depuración: tiempo mínimo de ejecución de 15 minutos como máximo. Definiciones: docs/design.md, sección 5.
dashboard-drains-heading = Vaciados para reparación
dashboard-owed-heading = Debido frente a recibido por proyecto
dashboard-th-owed = h GPU debidas
dashboard-th-received = h GPU recibidas
dashboard-percent = { $value } %
dashboard-no-drains = Ningún nodo se vació para reparación en este intervalo.
# $share is dashboard-drains-human-share or nothing.
dashboard-drains = { $count ->
    [one] En este intervalo empezó { $count } vaciado para reparación
   *[other] En este intervalo empezaron { $count } vaciados para reparación
}: { $emptied ->
    [one] { $emptied } se vació solo
   *[other] { $emptied } se vaciaron solos
}, { $human ->
    [one] { $human } necesitó que la administración detuviera una ejecución protegida
   *[other] { $human } necesitaron que la administración detuviera una ejecución protegida
}{ $share } y { $emptying ->
    [one] { $emptying } sigue vaciándose
   *[other] { $emptying } siguen vaciándose
}.
dashboard-drains-human-share = {" "}(el { $percent } % de los vaciados terminados necesitó a una persona)
dashboard-chart-occupancy = Ocupación por grupo de GPU
dashboard-chart-allocated = asignadas
dashboard-chart-unallocated = sin asignación
dashboard-chart-occupancy-axis = % del tiempo de GPU sano
dashboard-chart-owed = Debido frente a recibido (horas de GPU)
dashboard-chart-owed-series = debido
dashboard-chart-received-series = recibido dentro de lo debido
dashboard-chart-gpu-hours = Horas de GPU
dashboard-forbidden = las métricas son para finanzas, administración y responsables
dashboard-no-such-cluster = no hay ningún clúster llamado { $name }
dashboard-bad-instant = { $got } no es un instante con desfase horario, como 2026-12-01T00:00:00Z
dashboard-from-with-to = indica from junto con to
dashboard-to-after-from = to debe ser posterior a from
dashboard-from-before-now = from debe ser anterior a ahora: después aún no se ha medido nada
dashboard-window-too-long = un intervalo dura como máximo 400 días
dashboard-period-not-begun = ese periodo presupuestario no ha empezado
dashboard-period-needs-window = un periodo presupuestario se muestra con el intervalo «un periodo presupuestario»: elige ese intervalo o deja vacío el periodo
dashboard-bad-window = { $got } no es un intervalo; elige 24h, 7d, 30d o period

## Idle GPUs (home and project pages)

idle-th-run = Ejecución
idle-th-submitter = Remitente
idle-th-since = Ociosa desde
idle-th-gpu-hours = Horas de GPU ociosas
idle-th-value = Valor
idle-reason-for = Motivo para detener la ejecución { $run }
idle-stop = Detener
idle-stopping = La ejecución { $run } se está deteniendo (ociosa).
idle-reason-required = indica un motivo para detener la ejecución (de 1 a 1000 caracteres)
idle-forbidden = solo un responsable del proyecto de la ejecución puede detener una ejecución ociosa
idle-not-found = no existe el aviso de GPU ociosas { $id }
idle-cleared = el aviso de GPU ociosas { $id } ya se ha retirado (las GPU de la ejecución vuelven a estar ocupadas, o el intento terminó); no se ha detenido nada

## Audit log

audit-title = Registro de auditoría
audit-forbidden = el registro de auditoría es para administración, finanzas y responsables
audit-all = Todos los cambios, del más reciente al más antiguo (últimos { $count }).
audit-subtrees = Cambios en los subárboles de los que eres responsable, del más reciente al más antiguo (últimos { $count }).
audit-th-when = Cuándo ({ $zone })
audit-th-who = Quién
audit-th-what = Qué
audit-th-record = Registro
audit-th-before = Antes
audit-th-after = Después
audit-system = sistema
audit-yes = sí
audit-no = no
audit-none = ninguno
audit-empty = (vacío)
audit-pages = Páginas del registro de auditoría
audit-newest = Entradas más recientes
audit-older = Entradas más antiguas
err-audit-before = before es el id de una entrada del registro, un número entero desde 1, para ver las entradas más antiguas que ella; has indicado { $got }

## Registro de auditoría: la acción y el registro de cada entrada en palabras.
audit-action =
    .agent_token-create = Token de agente creado
    .agent_token-revoke = Token de agente revocado
    .api_token-create = Token de API creado
    .api_token-revoke = Token de API revocado
    .agent-refused = Llamada de agente rechazada
    .agent-session_restored = Sesión de agente conservada tras una restauración
    .budget-update = Presupuesto cambiado
    .cluster-create = Clúster creado
    .contract-buy = Contrato de capacidad comprado
    .contract-cancel = Contrato de capacidad cancelado
    .demo-load = Organización de demostración cargada
    .demo-load_use_cases = Casos de uso de IA de demostración cargados
    .gpu_model-create = Modelo de GPU creado
    .gpu_model-update = Modelo de GPU cambiado
    .member-add = Miembro añadido
    .member-remove = Miembro retirado
    .node-add = Nodo añadido
    .node-archive = Nodo archivado
    .node-create = Nodo creado
    .node-drain = Nodo en vaciado para reparación
    .node-move = Nodo movido
    .node-remove = Nodo retirado
    .node-rename = Nodo renombrado
    .node-return = Nodo devuelto al servicio
    .node-state = Estado del nodo cambiado
    .node-update = Nodo cambiado
    .run-approve = Ejecución aprobada
    .run-cancel = Ejecución cancelada
    .run-deny = Ejecución denegada
    .run-idle_stop = Ejecución ociosa detenida
    .settings-default_language = Idioma predeterminado cambiado
    .share-update = Cuotas cambiadas
    .site-local_sign_in = Inicio de sesión local cambiado
    .spend-import = Gasto importado
    .spend_rule-create = Regla de asignación creada
    .use_case-create = Caso de uso de IA creado
    .use_case-hours = Horas humanas registradas
    .use_case-review = Revisión mensual registrada
    .use_case-status = Estado del caso de uso cambiado
    .use_case-stop_acknowledge = Regla de parada confirmada
    .use_case-stop_criterion = Regla de parada activada
    .use_case-update = Caso de uso de IA cambiado
    .user-create = Cuenta creada
    .user-email = Dirección de correo cambiada
    .user-grant = Rol concedido
    .user-language = Idioma cambiado
    .user-password = Contraseña cambiada
    .user-revoke = Rol retirado
audit-entity =
    .agent_token = token de agente
    .api_token = token de API
    .ai_mapping_rule = regla de asignación
    .ai_spend_import = importación de gasto
    .ai_use_case = caso de uso de IA
    .cluster = clúster
    .cluster_node = nodo del clúster
    .contract = contrato de capacidad
    .gpu_model = modelo de GPU
    .org_settings = ajustes de la organización
    .project = proyecto
    .run = ejecución
    .site = sitio
    .tree_node = nodo del árbol
    .user = cuenta
