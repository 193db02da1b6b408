# El registro de casos de uso de IA en español. Términos: docs/glossary.md.

## Words used on several pages of the register

ai-title = Casos de uso de IA
ai-use-case = Caso de uso
ai-owner-team = Equipo propietario
ai-bag = Bolsa
ai-status = Estado
ai-monthly-limit = Límite mensual
ai-metric = Métrica
ai-stop-rule = Regla de parada
ai-format = Formato
ai-service = Servicio
ai-scope = Ámbito
ai-scopes = Ámbitos
ai-lines = Líneas
ai-amount = Importe
ai-month = Mes
ai-decision = Decisión
ai-comment = Comentario
ai-by = Por
ai-when = Cuándo
ai-any = cualquiera
ai-none = ninguno
ai-unassigned = sin asignar
ai-percent = { $pct } %
ai-mapping-rules = Reglas de asignación
ai-rule-scope-label = Proyecto, espacio de trabajo, centro de coste o etiqueta
ai-add-rule = Añadir regla
ai-bag-personal = Productividad personal
ai-bag-team = Procesos de equipo
ai-bag-critical = Sistemas críticos
ai-status-proposed = propuesto
ai-status-pilot = piloto
ai-status-active = activo
ai-status-stopped = detenido
ai-decision-continue = continuar
ai-decision-expand = ampliar
ai-decision-stop = detener
ai-activity-data = preparar datos
ai-activity-review = revisar respuestas
ai-activity-exceptions = resolver excepciones
ai-trend-up = al alza
ai-trend-down = a la baja
ai-trend-flat = estable
ai-only-leads-register = solo los responsables y la administración registran casos de uso
ai-not-lead-change = no eres responsable de { $owner }, así que no puedes cambiar sus casos de uso
ai-no-such-use-case = ese caso de uso no existe
ai-no-use-case = el caso de uso { $id } no existe

## The register

ai-list-intro = Cada uso de la IA tiene un equipo propietario, los datos que puede usar, una persona que lo revisa, un límite mensual, una métrica y una regla de parada. Gasto de { $month }: el gasto en el libro mayor de los proyectos de GPU vinculados más el gasto importado de servicios externos.
ai-list-trend-note = Tendencia: lo que va de mes, extrapolado al mes completo, frente al mes anterior (con una diferencia de hasta el 10 % es estable).
ai-list-register = Registrar un caso de uso
ai-list-spend-link = Gasto importado, líneas sin asignar y reglas de asignación
ai-list-export = Exportar CSV
ai-list-none = Todavía no hay casos de uso que puedas ver.
ai-th-spend = Gasto de { $month }
ai-th-used = Usado
ai-th-human-cost = Coste humano
ai-th-last-month = Mes anterior
ai-th-trend = Tendencia
ai-th-last-decision = Última decisión
ai-over-the-limit = por encima del límite
ai-last-decision = { $decision } ({ $month })

## Registering and editing a use case

ai-form-title-new = Registrar un caso de uso
ai-form-title-edit = Editar el caso de uso
ai-form-heading-new = Registrar un caso de uso de IA
ai-form-heading-edit = Editar { $name }
ai-form-intro = Presupuesta el caso de uso, no la herramienta: quién es su propietario, qué datos puede usar, qué hace la IA, dónde lo revisa una persona, cuánto puede gastar al mes y cuándo se detiene.
ai-form-name = Nombre
ai-form-allowed-data = Datos permitidos
ai-form-ai-action = Acción de la IA
ai-form-human-review = Revisión humana
ai-form-monthly-limit = Límite mensual ({ $currency })
ai-form-services = Servicios que puede usar (separados por comas)
ai-form-hourly-rate = Precio por hora del trabajo humano ({ $currency })
ai-form-projects = Proyectos de GPU que le pertenecen (separados por comas)
ai-form-save = Guardar
ai-form-register = Registrar
ai-registered = Caso de uso { $name } registrado.
ai-saved = Caso de uso guardado.
ai-err-owner = equipo propietario: elige el equipo propietario en el árbol de programas
ai-err-monthly-limit = límite mensual: { $problem }
ai-err-limit-zero = límite mensual: escribe lo máximo que el caso de uso puede gastar en un mes, por encima de cero (su línea de parada)
ai-err-hourly-rate-empty = precio por hora: escribe el precio de una hora del trabajo humano que ahorra el caso de uso (0 si esas horas no se valoran)
ai-err-hourly-rate = precio por hora: { $problem }
ai-err-hourly-rate-range = precio por hora: de 0 a { $max }
ai-err-not-gpu-project = proyectos: { $name } no es un proyecto de GPU
ai-err-name = nombre: pon al caso de uso un nombre de 1 a 120 caracteres
ai-err-not-lead-register = no eres responsable de { $node }, así que no puedes registrar casos de uso para ese nodo
ai-err-bag = bolsa: elige productividad personal, procesos de equipo o sistemas críticos
ai-err-too-long = { $field }: como máximo { $max } caracteres
ai-field-allowed_data = datos permitidos
ai-field-ai_action = acción de la IA
ai-field-human_review = revisión humana
ai-field-metric = métrica
ai-field-stop_rule = regla de parada
ai-field-comment = comentario
ai-field-note = nota
ai-err-metric = métrica: indica qué muestra que el caso de uso merece continuar
ai-err-stop-rule = regla de parada: un caso de uso de la bolsa de sistemas críticos necesita una regla de parada
ai-err-services = servicios: como máximo 50 servicios de hasta 200 caracteres cada uno
ai-err-not-live-project = proyectos: { $id } no es un proyecto de GPU vigente
ai-err-not-lead-link = no eres responsable de { $node }, así que no puedes vincularlo a un caso de uso
ai-err-name-taken = nombre: ya existe un caso de uso llamado { $name }
ai-err-period = periodo: { $why }

## Amounts typed in a form


## A use case's page

ai-over-limit = Por encima del límite mensual: { $total } gastados de { $limit } en { $month }.
ai-stop-triggered = Regla de parada activada
ai-stop-banner = ({ $at }): { $reason }. Tranche no puede detener un servicio externo: detenlo tú y después confírmalo abajo.
ai-alert-actual = alcanzado el { $pct } % del límite mensual: { $spent } de { $limit }
ai-alert-forecast = se prevé alcanzar el { $pct } % del límite mensual a final de mes: { $spent } de { $limit }
ai-allowed-data = Datos permitidos
ai-ai-action = Acción de la IA
ai-human-review = Revisión humana
ai-services = Servicios
ai-gpu-projects = Proyectos de GPU
ai-spend-in = Gasto de { $month }
ai-spend-gpu = Proyectos de GPU (libro mayor)
ai-spend-imported = Servicios externos importados
ai-spend-total = Total
ai-limit-used = { $limit } ({ $pct } usado)
ai-human-work = Trabajo humano (aparte del límite)
ai-human-line = { $hours } h × { $rate } = { $cost }
ai-hours = Horas
ai-work = Actividad
ai-note = Nota
ai-record-hours = Registrar horas
ai-edit = Editar
ai-change-status = Cambiar el estado
ai-what-was-done = Qué se ha hecho
ai-what-was-done-example = servicio pausado en el proveedor
ai-acknowledge = Confirmar la regla de parada
ai-criterion-met = Criterio de parada cumplido
ai-what-happened = qué ha pasado
ai-trigger = Activar la regla de parada
ai-acknowledged = confirmada por { $name } el { $at }: { $note }
ai-review = Revisión mensual
ai-new-limit = Nuevo límite mensual (solo al ampliar)
ai-metric-value = Valor de la métrica ({ $metric })
ai-record-decision = Registrar la decisión
ai-no-decision = Todavía no hay ninguna decisión.
ai-th-spend-of-limit = Gasto frente al límite
ai-expand-to = ampliar a { $limit }
ai-spend-of = { $spent } de { $limit }
ai-no-rules = Todavía no hay gasto importado asignado a este caso de uso.
ai-status-now = { $name } está ahora { $status }.
# $count elige la forma de plural; $n es el mismo número escrito.
ai-rule-added = El gasto se asigna ahora a { $name }; { $count ->
    [one] se ha asignado { $n } línea que estaba sin asignar.
   *[other] se han asignado { $n } líneas que estaban sin asignar.
}
ai-decision-recorded = Decisión registrada: { $decision }.
ai-hours-recorded = Registradas { $hours } h.
ai-stop-acknowledged = Regla de parada confirmada.
ai-stop-raised = Regla de parada activada; detén el servicio y después confírmalo.
ai-err-month = mes: { $problem }
ai-err-new-limit = nuevo límite: { $problem }
ai-err-status = estado: { $got } no es ninguno de propuesto, piloto, activo, detenido
ai-err-decision = decisión: elige continuar, ampliar o detener
ai-err-decision-stopped = decisión: el caso de uso está detenido; para continuar, cambia antes su estado a «piloto» o «activo»
ai-err-metric-value = valor de la métrica: indica el valor de la métrica de este mes (como máximo 500 caracteres)
ai-err-future-month = mes: decide sobre este mes o uno anterior
ai-err-hours-future-month = mes: registra horas de este mes o de uno anterior
ai-err-not-lead-decide = no eres responsable de { $owner }, así que no puedes decidir sobre sus casos de uso
ai-err-expand-above = nuevo límite: para ampliar hace falta un límite mayor que el actual, { $current } (se ha escrito { $got })
ai-err-expand-needs = nuevo límite: para ampliar hace falta el nuevo límite mensual
ai-err-only-expand = nuevo límite: solo una ampliación fija un nuevo límite; déjalo vacío
ai-err-hours = horas: { $got } no es un número positivo de horas como 1,5 o 0,25
ai-err-hours-decimals = horas: { $got } tiene más de dos decimales; indica las horas hasta la centésima, como 1,25
ai-err-hours-max = horas: { $got } supera las 74.400 horas, lo máximo que registra una entrada
ai-err-hours-minutes = horas: { $got } no es un número entero de minutos; usa pasos de 0,05 horas (3 minutos), como 0,25
ai-err-activity = actividad: elige datos, revisión o excepciones
ai-err-hours-zero = horas: más de cero
ai-err-note = nota: como máximo 500 caracteres
ai-err-not-lead-hours = no eres responsable de { $owner }, así que no puedes registrar horas de sus casos de uso
ai-err-not-lead-acknowledge = no eres responsable de { $owner }, así que no puedes confirmar por sus casos de uso
ai-err-nothing-to-acknowledge = no hay ninguna regla de parada activada para este caso de uso
ai-err-reason = motivo: explica cómo se ha cumplido el criterio de parada (como máximo 2000 caracteres)
ai-err-not-lead-report = no eres responsable de { $owner }, así que no puedes informar por sus casos de uso
ai-err-not-critical = solo los casos de uso de la bolsa de sistemas críticos tienen una regla de parada que Tranche activa
ai-err-already-triggered = la regla de parada ya está activada este mes

## The stop rule's notification (home page and e-mail)

ai-stop-notice = Regla de parada activada para { $name } (sistemas críticos): { $reason }. Tranche no puede detener un servicio externo: detenlo tú y después confírmalo en la página del caso de uso
ai-stop-subject = Caso de uso de IA de Tranche: regla de parada activada para { $name }
ai-stop-reason-criterion = criterio de parada cumplido: { $text }
ai-stop-reason-limit = ha gastado { $amount }; su límite de { $month } es de { $limit }

## The home page's notes on use cases

ai-home-stop = regla de parada activada: detén el servicio y después confírmalo
ai-home-over = por encima de su límite mensual: { $spent } de { $limit }
ai-home-review = espera tu decisión sobre { $month }

## Imported spend

ai-spend-title = Gasto de IA importado
ai-spend-intro = Exportaciones de costes de servicios externos, en { $currency }. Importar dos veces el mismo archivo no añade nada; las líneas que ninguna regla de asignación atribuye a un caso de uso quedan en la lista de líneas sin asignar. Un archivo en otra moneda necesita el tipo de cambio ({ $currency } por unidad de la moneda del archivo).
ai-spend-preview = Vista previa
ai-spend-already = Este archivo ya se importó: confirmar no añade nada.
ai-spend-currency = Moneda
ai-spend-rate-each = a { $rate } { $currency } cada unidad
ai-spend-covers = Periodo
ai-spend-covers-range = del { $from } al { $to }
ai-spend-lines-in-file = en el archivo: { $lines }; nuevas: { $new }; ya importadas: { $skipped }
ai-spend-new = Gasto nuevo
ai-spend-confirm = Confirmar la importación
ai-spend-start-over = Empezar de nuevo
ai-spend-import-heading = Importar una exportación de costes
ai-spend-file = Archivo
ai-spend-rate = Tipo de cambio ({ $currency } por unidad, solo para otra moneda)
ai-spend-unassigned = Líneas sin asignar
ai-spend-unassigned-count = { $count ->
    [one] { $n } línea
   *[other] { $n } líneas
}, { $total }.
ai-spend-day = Día
ai-spend-description = Descripción
ai-spend-rules-note = Una línea pertenece al caso de uso de la primera regla con la que coincide; las reglas que indican un formato, un servicio y un ámbito van primero.
ai-spend-imports = Importaciones
ai-spend-nothing = Todavía no se ha importado nada.
ai-spend-file-name = Archivo
ai-spend-import-rate = { $currency } a { $rate } { $site }
ai-spend-import-lines = nuevas: { $new }; ya importadas: { $skipped }
ai-spend-only-finance-see = solo finanzas y la administración ven el gasto importado
ai-spend-only-finance = solo finanzas y la administración importan gasto
ai-spend-choose-format = formato: elige el formato de la exportación
ai-spend-choose-file = archivo: elige un archivo para importar
ai-spend-choose-again = { $problem } (vuelve a elegir el archivo: los navegadores no lo reenvían)
ai-spend-not-upload = se esperaba un formulario de subida de archivo: { $error }
ai-spend-unreadable = no se ha podido leer el archivo subido: { $error }
ai-spend-expired = esta vista previa ya se usó o ha caducado; vuelve a subir el archivo
ai-spend-imported-before = Este archivo ya se importó; no se ha añadido nada.
ai-spend-imported-new = { $count ->
    [one] Importada { $n } línea nueva
   *[other] Importadas { $n } líneas nuevas
} ({ $amount }); ya importadas antes: { $skipped }.
ai-err-source = origen: elige any, openai, anthropic, github o focus
ai-err-rule-empty = indica un servicio, un ámbito (proyecto, espacio de trabajo, centro de coste o etiqueta clave=valor) o ambos
ai-err-rule-long = servicio y ámbito: como máximo 200 caracteres cada uno
ai-err-rule-forbidden = solo finanzas, la administración y los responsables del caso de uso le asignan gasto
ai-err-rule-takes = esta regla se quedaría con líneas que el caso de uso { $use_case } (de otro equipo) asigna con una regla menos específica; pide a finanzas o a la administración que las asignen
ai-err-rule-exists = ya existe una regla para este origen, servicio y ámbito
ai-err-rate = tipo de cambio: { $got } no es un número positivo de seis decimales como mucho, como 0,92
ai-err-malformed = { $format }: { $problem }; no se ha importado nada
ai-err-rate-not-needed = tipo de cambio: el archivo ya está en { $currency }; deja vacío el tipo de cambio
ai-err-currency-mismatch = el archivo está en { $file } y la organización cuenta en { $currency }; indica el tipo de cambio ({ $currency } por { $file }) para convertirlo, o expórtalo en { $currency }. No se ha importado nada

## Reading cost exports

ai-import-not-utf8 = el archivo no es texto UTF-8 (byte { $byte })
ai-import-no-lines = el archivo no tiene líneas de coste
ai-import-control-char = la línea de coste { $line } tiene un carácter de control (U+{ $code }) en «{ $text }»: corrija la exportación y envíela de nuevo
ai-import-too-many = el archivo tiene { $count } líneas de coste, más de { $max }; divídelo
ai-import-not-number = { $got } no es un número
ai-import-too-large = { $got } es demasiado grande
ai-import-line-too-large = línea de coste { $line }: { $amount } es demasiado grande una vez convertido al tipo de cambio
ai-import-line-outside = línea de coste { $line }: su periodo de cargo empieza el { $start }, fuera de los meses que cubren los informes ({ $from } a { $to }); no se ha importado nada
ai-import-total-too-large = los importes son demasiado grandes para sumarlos: las líneas importadas pueden sumar como máximo { $max } en total (los abonos también cuentan como importes), incluidas las de este archivo
ai-import-not-instant = { $got } no es una fecha ni un instante como 2026-11-01T00:00:00Z
ai-import-not-currency = { $at }: { $got } no es un código de moneda como USD
ai-import-mixed = { $at }: el archivo mezcla monedas ({ $first } y { $second }); exporta una sola moneda por archivo
ai-import-not-json = el archivo no es JSON válido: { $error }
ai-import-no-data = el archivo no tiene una lista `data` de intervalos; exporta la respuesta JSON de la API tal cual
ai-import-not-text = { $field } falta o no es texto
ai-import-not-list = { $field } falta o no es una lista
ai-import-not-unix = { $field } falta o no es una hora Unix en segundos
ai-import-before = { $at }: { $end } es anterior a { $start }
ai-import-missing = falta { $field }
ai-import-not-number-field = { $field } falta o no es un número
ai-import-not-decimal-string = { $field } falta o no es una cadena decimal
ai-import-not-csv = el archivo no es CSV: { $error }
ai-import-bad-csv-line = línea { $line }: CSV no válido: { $error }
ai-import-bad-csv = CSV no válido: { $error }
ai-import-column-twice = el archivo nombra dos veces la columna { $column }: expórtala una sola vez
ai-import-no-column = el archivo no tiene la columna { $column } (sus columnas: { $columns })
ai-import-no-scope-column = el archivo no tiene ni la columna cost_center_name ni la columna organization
ai-import-line = línea { $line }
ai-import-empty = { $at }: { $field } está vacío
ai-import-tags-example = { $at }: Tags no es un objeto JSON como {"{"}"team":"support"{"}"}
ai-import-tags = { $at }: Tags no es un objeto JSON

ai-format-openai = API de costes de OpenAI (JSON)
ai-format-anthropic = Informe de costes de Anthropic (JSON)
ai-format-github = Informe de uso para facturación de GitHub (CSV)
ai-format-focus = FOCUS 1.x (CSV)
