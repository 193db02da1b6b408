# AA erabilera-kasuen erregistroa euskaraz. Terminoak: docs/glossary.md.

## Words used on several pages of the register

ai-title = AA erabilera-kasuak
ai-use-case = Erabilera-kasua
ai-owner-team = Jabe-taldea
ai-bag = Poltsa
ai-status = Egoera
ai-monthly-limit = Hileko muga
ai-metric = Metrika
ai-stop-rule = Gelditze-araua
ai-format = Formatua
ai-service = Zerbitzua
ai-scope = Esparrua
ai-scopes = Esparruak
ai-lines = Lerroak
ai-amount = Zenbatekoa
ai-month = Hilabetea
ai-decision = Erabakia
ai-comment = Iruzkina
ai-by = Nork
ai-when = Noiz
ai-any = edozein
ai-none = bat ere ez
ai-unassigned = esleitu gabe
ai-percent = % { $pct }
ai-mapping-rules = Esleipen-arauak
ai-rule-scope-label = Proiektua, lan-eremua, kostu-zentroa edo etiketa
ai-add-rule = Gehitu araua
ai-bag-personal = Produktibitate pertsonala
ai-bag-team = Taldeko prozesuak
ai-bag-critical = Sistema kritikoak
ai-status-proposed = proposatua
ai-status-pilot = pilotua
ai-status-active = aktiboa
ai-status-stopped = geldituta
ai-decision-continue = jarraitu
ai-decision-expand = zabaldu
ai-decision-stop = gelditu
ai-activity-data = datuak prestatzea
ai-activity-review = erantzunak berrikustea
ai-activity-exceptions = salbuespenak kudeatzea
ai-trend-up = gora
ai-trend-down = behera
ai-trend-flat = egonkor
ai-only-leads-register = arduradunek eta administratzaileek bakarrik erregistratzen dituzte erabilera-kasuak
ai-not-lead-change = ez zara { $owner } nodoaren arduraduna; beraz, ezin dituzu haren erabilera-kasuak aldatu
ai-no-such-use-case = erabilera-kasu hori ez dago
ai-no-use-case = { $id } erabilera-kasua ez dago

## The register

ai-list-intro = AA erabilera bakoitzak jabe-talde bat du, erabil ditzakeen datuak, berrikusten duen pertsona bat, hileko muga bat, metrika bat eta gelditze-arau bat. Gastua ({ $month }): lotutako GPU proiektuen liburu nagusiko gastua gehi kanpoko zerbitzuen gastu inportatua.
ai-list-trend-note = Joera: hilabete honetan orain artekoa, hilabete osora eskalatuta, aurreko hilabetearekin alderatuta (% 10eko aldearen barruan, egonkor).
ai-list-register = Erregistratu erabilera-kasu bat
ai-list-spend-link = Gastu inportatua, esleitu gabeko lerroak eta esleipen-arauak
ai-list-export = Esportatu CSV
ai-list-none = Oraindik ez dago ikus dezakezun erabilera-kasurik.
ai-th-spend = Gastua ({ $month })
ai-th-used = Erabilia
ai-th-human-cost = Giza kostua
ai-th-last-month = Aurreko hilabetea
ai-th-trend = Joera
ai-th-last-decision = Azken erabakia
ai-over-the-limit = mugaz gain
ai-last-decision = { $decision } ({ $month })

## Registering and editing a use case

ai-form-title-new = Erregistratu erabilera-kasu bat
ai-form-title-edit = Editatu erabilera-kasua
ai-form-heading-new = Erregistratu AA erabilera-kasu bat
ai-form-heading-edit = Editatu: { $name }
ai-form-intro = Eman aurrekontua erabilera-kasuari, ez tresnari: nor den jabea, zer datu erabil ditzakeen, zer egiten duen AAk, non berrikusten duen pertsona batek, hilean zenbat gasta dezakeen eta noiz gelditzen den.
ai-form-name = Izena
ai-form-allowed-data = Baimendutako datuak
ai-form-ai-action = AAren ekintza
ai-form-human-review = Giza berrikuspena
ai-form-monthly-limit = Hileko muga ({ $currency })
ai-form-services = Erabil ditzakeen zerbitzuak (komaz bereizita)
ai-form-hourly-rate = Giza lanaren orduko prezioa ({ $currency })
ai-form-projects = Bereak diren GPU proiektuak (komaz bereizita)
ai-form-save = Gorde
ai-form-register = Erregistratu
ai-registered = { $name } erabilera-kasua erregistratu da.
ai-saved = Erabilera-kasua gorde da.
ai-err-owner = jabe-taldea: aukeratu jabe-taldea programa-zuhaitzean
ai-err-monthly-limit = hileko muga: { $problem }
ai-err-limit-zero = hileko muga: idatzi erabilera-kasuak hilabetean gasta dezakeen gehienekoa, zero baino handiagoa (bere gelditze-marra)
ai-err-hourly-rate-empty = orduko prezioa: idatzi erabilera-kasuak aurrezten duen giza lanaren ordu baten prezioa (0 ordu horiek baloratzen ez badira)
ai-err-hourly-rate = orduko prezioa: { $problem }
ai-err-hourly-rate-range = orduko prezioa: 0 eta { $max } artean
ai-err-not-gpu-project = proiektuak: { $name } ez da GPU proiektu bat
ai-err-name = izena: eman erabilera-kasuari 1 eta 120 karaktere arteko izen bat
ai-err-not-lead-register = ez zara { $node } nodoaren arduraduna; beraz, ezin duzu harentzat erabilera-kasurik erregistratu
ai-err-bag = poltsa: aukeratu produktibitate pertsonala, taldeko prozesuak edo sistema kritikoak
ai-err-too-long = { $field }: gehienez { $max } karaktere
ai-field-allowed_data = baimendutako datuak
ai-field-ai_action = AAren ekintza
ai-field-human_review = giza berrikuspena
ai-field-metric = metrika
ai-field-stop_rule = gelditze-araua
ai-field-comment = iruzkina
ai-field-note = oharra
ai-err-metric = metrika: esan zerk erakusten duen erabilera-kasuak jarraitzea merezi duela
ai-err-stop-rule = gelditze-araua: sistema kritikoen poltsako erabilera-kasu batek gelditze-araua behar du
ai-err-services = zerbitzuak: gehienez 50 zerbitzu, bakoitza gehienez 200 karakterekoa
ai-err-not-live-project = proiektuak: { $id } ez da GPU proiektu bizi bat
ai-err-not-lead-link = ez zara { $node } nodoaren arduraduna; beraz, ezin duzu erabilera-kasu bati lotu
ai-err-name-taken = izena: badago jada { $name } izeneko erabilera-kasu bat
ai-err-period = aldia: { $why }

## Amounts typed in a form


## A use case's page

ai-over-limit = Hileko muga gainditu da: { $total } gastatu dira, muga { $limit } izanik ({ $month }).
ai-stop-triggered = Gelditze-araua aktibatu da
ai-stop-banner = ({ $at }): { $reason }. Tranche-k ezin du kanpoko zerbitzu bat gelditu: gelditu zuk, eta gero berretsi behean.
ai-alert-actual = hileko mugaren % { $pct } iritsi da: { $spent } / { $limit }
ai-alert-forecast = hilabetearen amaierarako hileko mugaren % { $pct } iristea aurreikusten da: { $spent } / { $limit }
ai-allowed-data = Baimendutako datuak
ai-ai-action = AAren ekintza
ai-human-review = Giza berrikuspena
ai-services = Zerbitzuak
ai-gpu-projects = GPU proiektuak
ai-spend-in = Gastua: { $month }
ai-spend-gpu = GPU proiektuak (liburu nagusia)
ai-spend-imported = Kanpoko zerbitzu inportatuak
ai-spend-total = Guztira
ai-limit-used = { $limit } ({ $pct } erabilita)
ai-human-work = Giza lana (mugaz kanpo)
ai-human-line = { $hours } h × { $rate } = { $cost }
ai-hours = Orduak
ai-work = Jarduera
ai-note = Oharra
ai-record-hours = Erregistratu orduak
ai-edit = Editatu
ai-change-status = Aldatu egoera
ai-what-was-done = Zer egin den
ai-what-was-done-example = zerbitzua hornitzailearen aldean etenda
ai-acknowledge = Berretsi gelditze-araua
ai-criterion-met = Gelditze-irizpidea bete da
ai-what-happened = zer gertatu den
ai-trigger = Aktibatu gelditze-araua
ai-acknowledged = { $name } erabiltzaileak berretsia, { $at }: { $note }
ai-review = Hileko berrikuspena
ai-new-limit = Hileko muga berria (zabaltzeko bakarrik)
ai-metric-value = Metrikaren balioa ({ $metric })
ai-record-decision = Erregistratu erabakia
ai-no-decision = Oraindik ez dago erabakirik.
ai-th-spend-of-limit = Gastua / muga
ai-expand-to = zabaldu: { $limit }
ai-spend-of = { $spent } / { $limit }
ai-no-rules = Oraindik ez dago erabilera-kasu honi esleitutako gastu inportaturik.
ai-status-now = { $name }: egoera berria, { $status }.
# $count-ek plural-forma aukeratzen du; $n zenbaki bera da, idatzita.
ai-rule-added = Gastua { $name } erabilera-kasuari esleitzen zaio orain; { $count ->
    [one] esleitu gabeko lerro { $n } esleitu da.
   *[other] esleitu gabeko { $n } lerro esleitu dira.
}
ai-decision-recorded = Erabakia erregistratu da: { $decision }.
ai-hours-recorded = { $hours } h erregistratu dira.
ai-stop-acknowledged = Gelditze-araua berretsi da.
ai-stop-raised = Gelditze-araua aktibatu da; gelditu zerbitzua, eta gero berretsi.
ai-err-month = hilabetea: { $problem }
ai-err-new-limit = muga berria: { $problem }
ai-err-status = egoera: { $got } ez da hauetako bat: proposatua, pilotua, aktiboa, geldituta
ai-err-decision = erabakia: aukeratu jarraitu, zabaldu edo gelditu
ai-err-decision-stopped = erabakia: erabilera-kasua geldituta dago; jarraitzeko, jarri lehenik bere egoera «pilotua» edo «aktiboa»
ai-err-metric-value = metrikaren balioa: eman metrikak hilabete honetan duen balioa (gehienez 500 karaktere)
ai-err-future-month = hilabetea: erabaki hilabete honi edo aurreko bati buruz
ai-err-hours-future-month = hilabetea: erregistratu hilabete honetako edo aurreko baten orduak
ai-err-not-lead-decide = ez zara { $owner } nodoaren arduraduna; beraz, ezin duzu haren erabilera-kasuei buruz erabaki
ai-err-expand-above = muga berria: zabaltzeko, uneko muga ({ $current }) baino handiagoa behar da ({ $got } idatzi da)
ai-err-expand-needs = muga berria: zabaltzeko, hileko muga berria behar da
ai-err-only-expand = muga berria: zabaltzeak bakarrik ezartzen du muga berri bat; utzi hutsik
ai-err-hours = orduak: { $got } ez da ordu kopuru positibo bat, adibidez 1,5 edo 0,25
ai-err-hours-decimals = orduak: { $got } zenbakiak bi hamartar baino gehiago ditu; eman orduak ehunenera arte, adibidez 1,25
ai-err-hours-max = orduak: { $got } 74.400 ordu baino gehiago da, sarrera batek erregistra dezakeen gehiena
ai-err-hours-minutes = orduak: { $got } ez da minutu kopuru oso bat; erabili 0,05 orduko urratsak (3 minutu), adibidez 0,25
ai-err-activity = jarduera: aukeratu datuak, berrikuspena edo salbuespenak
ai-err-hours-zero = orduak: zero baino gehiago
ai-err-note = oharra: gehienez 500 karaktere
ai-err-not-lead-hours = ez zara { $owner } nodoaren arduraduna; beraz, ezin duzu haren erabilera-kasuen ordurik erregistratu
ai-err-not-lead-acknowledge = ez zara { $owner } nodoaren arduraduna; beraz, ezin duzu haren erabilera-kasuen izenean berretsi
ai-err-nothing-to-acknowledge = erabilera-kasu honek ez du gelditze-araurik aktibatuta
ai-err-reason = arrazoia: esan nola bete den gelditze-irizpidea (gehienez 2000 karaktere)
ai-err-not-lead-report = ez zara { $owner } nodoaren arduraduna; beraz, ezin duzu haren erabilera-kasuen berri eman
ai-err-not-critical = sistema kritikoen poltsako erabilera-kasuek bakarrik dute Tranche-k aktibatzen duen gelditze-araua
ai-err-already-triggered = gelditze-araua aktibatuta dago jada hilabete honetan

## The stop rule's notification (home page and e-mail)

ai-stop-notice = { $name } erabilera-kasuaren gelditze-araua aktibatu da (sistema kritikoak): { $reason }. Tranche-k ezin du kanpoko zerbitzu bat gelditu: gelditu zuk, eta gero berretsi erabilera-kasuaren orrian
ai-stop-subject = Tranche AA erabilera-kasua: { $name } erabilera-kasuaren gelditze-araua aktibatu da
ai-stop-reason-criterion = gelditze-irizpidea bete da: { $text }
ai-stop-reason-limit = { $amount } gastatu ditu; muga: { $limit } ({ $month })

## The home page's notes on use cases

ai-home-stop = gelditze-araua aktibatu da: gelditu zerbitzua, eta gero berretsi
ai-home-over = hileko muga gainditu du: { $spent } / { $limit }
ai-home-review = zure erabakiaren zain dago: { $month }

## Imported spend

ai-spend-title = AA gastu inportatua
ai-spend-intro = Kanpoko zerbitzuen kostu-esportazioak, { $currency } monetan. Fitxategi bera bi aldiz inportatzeak ez du ezer gehitzen; esleipen-arau batek erabilera-kasu bati esleitzen ez dizkion lerroak esleitu gabeko gisa zerrendatuta geratzen dira. Beste moneta bateko fitxategi batek truke-tasa behar du ({ $currency } fitxategiaren monetaren unitate bakoitzeko).
ai-spend-preview = Aurrebista
ai-spend-already = Fitxategi hau lehendik inportatu zen: berresteak ez du ezer gehitzen.
ai-spend-currency = Moneta
ai-spend-rate-each = unitateko { $rate } { $currency }
ai-spend-covers = Aldia
ai-spend-covers-range = { $from } – { $to }
ai-spend-lines-in-file = fitxategian: { $lines }; berriak: { $new }; lehendik inportatuak: { $skipped }
ai-spend-new = Gastu berria
ai-spend-confirm = Berretsi inportazioa
ai-spend-start-over = Hasi berriro
ai-spend-import-heading = Inportatu kostu-esportazio bat
ai-spend-file = Fitxategia
ai-spend-rate = Truke-tasa ({ $currency } unitateko, beste moneta baterako bakarrik)
ai-spend-unassigned = Esleitu gabeko lerroak
ai-spend-unassigned-count = { $count ->
    [one] lerro { $n }
   *[other] { $n } lerro
}, { $total }.
ai-spend-day = Eguna
ai-spend-description = Deskribapena
ai-spend-rules-note = Lerro bat bat datorren lehen arauaren erabilera-kasuarena da; formatua, zerbitzua eta esparrua zehazten dituzten arauak lehenago doaz.
ai-spend-imports = Inportazioak
ai-spend-nothing = Oraindik ez da ezer inportatu.
ai-spend-file-name = Fitxategia
ai-spend-import-rate = { $currency }, unitateko { $rate } { $site }
ai-spend-import-lines = berriak: { $new }; lehendik inportatuak: { $skipped }
ai-spend-only-finance-see = finantzek eta administratzaileek bakarrik ikusten dute gastu inportatua
ai-spend-only-finance = finantzek eta administratzaileek bakarrik inportatzen dute gastua
ai-spend-choose-format = formatua: aukeratu esportazioaren formatua
ai-spend-choose-file = fitxategia: aukeratu inportatzeko fitxategi bat
ai-spend-choose-again = { $problem } (aukeratu berriro fitxategia: nabigatzaileek ez dute berriro bidaltzen)
ai-spend-not-upload = fitxategia igotzeko inprimaki bat espero zen: { $error }
ai-spend-unreadable = ezin izan da igotako fitxategia irakurri: { $error }
ai-spend-expired = aurrebista hau erabilita dago edo iraungi da; igo berriro fitxategia
ai-spend-imported-before = Fitxategi hau lehendik inportatu zen; ez da ezer gehitu.
ai-spend-imported-new = { $count ->
    [one] Lerro berri { $n } inportatu da
   *[other] { $n } lerro berri inportatu dira
} ({ $amount }); lehendik inportatuak: { $skipped }.
ai-err-source = jatorria: aukeratu any, openai, anthropic, github edo focus
ai-err-rule-empty = eman zerbitzu bat, esparru bat (proiektua, lan-eremua, kostu-zentroa edo etiketa gakoa=balioa) edo biak
ai-err-rule-long = zerbitzua eta esparrua: gehienez 200 karaktere bakoitza
ai-err-rule-forbidden = finantzek, administratzaileek eta erabilera-kasuaren arduradunek bakarrik esleitzen diote gastua
ai-err-rule-takes = arau honek { $use_case } erabilera-kasuak (beste talde batenak) arau ez hain zehatz batekin esleitzen dituen lerroak hartuko lituzke; eskatu finantzei edo administratzaile bati esleitzeko
ai-err-rule-exists = badago jada arau bat jatorri, zerbitzu eta esparru honetarako
ai-err-rate = truke-tasa: { $got } ez da gehienez sei hamartar dituen zenbaki positibo bat, adibidez 0,92
ai-err-malformed = { $format }: { $problem }; ez da ezer inportatu
ai-err-rate-not-needed = truke-tasa: fitxategia { $currency } monetan dago jada; utzi truke-tasa hutsik
ai-err-currency-mismatch = fitxategia { $file } monetan dago, eta erakundeak { $currency } monetan kontatzen du; eman truke-tasa ({ $currency } { $file } bakoitzeko) bihurtzeko, edo esportatu { $currency } monetan. Ez da ezer inportatu

## Reading cost exports

ai-import-not-utf8 = fitxategia ez da UTF-8 testua ({ $byte }. bytea)
ai-import-no-lines = fitxategiak ez du kostu-lerrorik
ai-import-control-char = { $line }. kostu-lerroak kontrol-karaktere bat du (U+{ $code }) «{ $text }» testuan: zuzendu esportazioa eta bidali berriro
ai-import-too-many = fitxategiak { $count } kostu-lerro ditu, { $max } baino gehiago; zatitu
ai-import-not-number = { $got } ez da zenbaki bat
ai-import-too-large = { $got } handiegia da
ai-import-line-too-large = { $line }. kostu-lerroa: { $amount } handiegia da truke-tasaren arabera bihurtu ondoren
ai-import-line-outside = { $line }. kostu-lerroa: kargu-aldia { $start } hasten da, txostenek hartzen dituzten hilabeteetatik kanpo ({ $from } eta { $to } artean); ez da ezer inportatu
ai-import-total-too-large = zenbatekoak handiegiak dira batzeko: inportatutako lerroek guztira gehienez { $max } egin dezakete (abonuak ere zenbateko gisa kontatzen dira), fitxategi honetakoak barne
ai-import-not-instant = { $got } ez da data bat, ezta 2026-11-01T00:00:00Z bezalako une bat ere
ai-import-not-currency = { $at }: { $got } ez da USD bezalako moneta-kode bat
ai-import-mixed = { $at }: fitxategiak monetak nahasten ditu ({ $first } eta { $second }); esportatu moneta bakarra fitxategi bakoitzeko
ai-import-not-json = fitxategia ez da baliozko JSON: { $error }
ai-import-no-data = fitxategiak ez du tarteen `data` zerrendarik; esportatu APIaren JSON erantzuna dagoen bezala
ai-import-not-text = { $field } falta da edo ez da testua
ai-import-not-list = { $field } falta da edo ez da zerrenda bat
ai-import-not-unix = { $field } falta da edo ez da segundotako Unix ordu bat
ai-import-before = { $at }: { $end } eremua { $start } eremua baino lehenagokoa da
ai-import-missing = { $field } falta da
ai-import-not-number-field = { $field } falta da edo ez da zenbaki bat
ai-import-not-decimal-string = { $field } falta da edo ez da kate hamartar bat
ai-import-not-csv = fitxategia ez da CSV: { $error }
ai-import-bad-csv-line = { $line }. lerroa: CSV baliogabea: { $error }
ai-import-bad-csv = CSV baliogabea: { $error }
ai-import-column-twice = fitxategiak bi aldiz izendatzen du { $column } zutabea: esportatu behin bakarrik
ai-import-no-column = fitxategiak ez du { $column } zutaberik (bere zutabeak: { $columns })
ai-import-no-scope-column = fitxategiak ez du ez cost_center_name zutaberik, ez organization zutaberik
ai-import-line = { $line }. lerroa
ai-import-empty = { $at }: { $field } hutsik dago
ai-import-tags-example = { $at }: Tags ez da {"{"}"team":"support"{"}"} bezalako JSON objektu bat
ai-import-tags = { $at }: Tags ez da JSON objektu bat

ai-format-openai = OpenAIren kostuen APIa (JSON)
ai-format-anthropic = Anthropicen kostu-txostena (JSON)
ai-format-github = GitHuben fakturazio-erabileraren txostena (CSV)
ai-format-focus = FOCUS 1.x (CSV)
