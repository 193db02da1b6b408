# Eragiketa-orriak euskaraz: klusterra, nodoak, inbentarioa, erabiltzaileak, edukiera, panela,
# GPU geldien abisuak eta auditoria-erregistroa. Terminoak: docs/glossary.md.

## Inventory (admins): GPU models and clusters

inventory-title = Inbentarioa
inventory-models = GPU modeloak
inventory-models-note = Modelo baten GPU-ordu batek bere fakturazio-pisua × GPU-ordu haztatuaren prezioa balio du ({ $currency }).
inventory-weight = Fakturazio-pisua
inventory-price-per-hour = GPU-ordu haztatuaren prezioa
inventory-weight-of = { $name }: fakturazio-pisua
inventory-price-of = { $name }: prezioa
inventory-save = Gorde
inventory-add-model = Gehitu GPU modelo bat
inventory-name = Izena
inventory-price = Prezioa ({ $currency })
inventory-add-model-button = Gehitu modeloa
inventory-clusters = Klusterrak
inventory-nodes = Nodoak
inventory-add-cluster = Gehitu kluster bat
inventory-add-cluster-button = Gehitu klusterra
inventory-gpus-of-model = { $count } × { $model }
inventory-model-added = { $name } GPU modeloa gehitu da.
inventory-model-saved = GPU modeloa gorde da.
inventory-cluster-added = { $name } klusterra gehitu da.
inventory-admins-only = administratzaileek baino ezin dute orri hau ireki
inventory-admins-change = administratzaileek baino ezin dute inbentarioa aldatu
inventory-price-too-high = GPU-ordu baten prezioa gehienez 1.000.000,00 da
inventory-model-exists = { $name } izeneko GPU modelo bat badago jada
inventory-model-not-found = ez dago { $id } id-a duen GPU modelorik
inventory-cluster-exists = { $name } izeneko kluster bat badago jada

## Form checks of names, numbers and amounts (inventory, cluster and users forms)

# $what is one of the inventory-noun-* words (a noun stem: "kluster izena").
inventory-name-required = { $what } izena behar da
inventory-name-too-long = { $what } izenak gehienez { $max } karaktere izan ditzake (honek { $count } ditu)
inventory-name-invalid = { $name } ez da { $what } izen baliozkoa: erabili letrak, digituak, '.', '_' edo '-', eta hasi letra edo digitu batekin
inventory-noun-user = erabiltzaile
inventory-noun-cluster = kluster
inventory-noun-gpu-model = GPU modelo
inventory-noun-node = nodo
# $what is inventory-noun-gpu-count or inventory-noun-weight (ergative: "GPU kopuruak").
inventory-number-whole = { $what } zenbaki oso bat izan behar du ({ $got } idatzi da)
inventory-number-range = { $what } { $min } eta { $max } arteko balio bat izan behar du ({ $got } idatzi da)
inventory-number-positive = { $what } positiboa izan behar du ({ $got } idatzi da)
inventory-number-decimal = { $what } 1 edo 1,5 bezalako zenbaki bat izan behar du ({ $got } idatzi da)
inventory-number-three-decimals = { $what } gehienez hiru hamartar izan ditzake ({ $got } idatzi da)
inventory-number-at-most-100 = { $what } ezin du 100 gainditu ({ $got } idatzi da)
inventory-noun-gpu-count = GPU kopuruak
inventory-noun-weight = fakturazio-pisuak
inventory-amount-empty = idatzi zenbateko bat, adibidez 1500 edo 1500,50
inventory-amount-negative = zenbateko bat ezin da negatiboa izan ({ $got } idatzi da)
inventory-amount-not-a-number = { $got } ez da zenbateko bat; idatzi 1500,50 bezalako zifrak
inventory-amount-too-precise = zenbateko batek gehienez bi hamartar izan ditzake ({ $got } idatzi da)
inventory-amount-too-large = { $got } handiegia da

## A cluster (admins)

cluster-back = ← Inbentarioa
cluster-title = { $name } klusterra
cluster-gpus-in-nodes = { $gpus }{ $nodes ->
    [one] nodo batean
   *[other] { $nodes } nodotan
}.
cluster-executor = Exekutatzailea:
cluster-executor-agent = agentea
cluster-executor-slurm = Slurm
cluster-slurm-answers = { $partition } Slurm partizioa: kontrolatzaileak erantzuten du.
cluster-slurm-down = { $partition } Slurm partizioa: kontrolatzaileak ez du erantzuten { $since }(e)tik ({ $error }); abiatze berriak zain daude.
cluster-outside = Tranche-tik kanpoko Slurm lanak
cluster-outside-none = Ez dago kluster honetako GPUak hartuta dituen lanik, zuzenean Slurm-era bidalita.
cluster-outside-note = Lan hauek zuzenean bidali dira Slurm-era, Tranche-tik kanpo; Tranche-k ez du exekuziorik jartzen haiek hartutako GPUetan.
cluster-th-slurm-job = Slurm lana
cluster-th-name = Izena
cluster-th-user = Erabiltzailea
cluster-declare = Deklaratu nodo bat
cluster-host-name = Ostalari-izena
cluster-declare-button = Deklaratu nodoa
cluster-nodes-note =
    Hemen deklaratutako nodoak baino ezin dira zerbitzatu, kluster honen tokena duen agente batek eta
    deklaratutako GPU modelo eta kopuru zehatzarekin. Nodo bat <strong>galdua</strong> dago bere agentea gelditu denean
    edo denbora-muga igaro arte taupadarik bidali ez duenean; nodo galduek ez dute exekuziorik jasotzen, eta ez dira zenbatzen
    zuzkiduretan ez kontrata daitekeen edukieran. Nodo bat konpontzeko arrazoi batekin husteko, ireki ezazu.
cluster-th-status = Egoera
cluster-th-agent = Agentea
cluster-th-heartbeat = Azken taupada
cluster-th-admin-state = Ezarritako egoera
cluster-state-of = { $name }: egoera
cluster-drain-reason = arrazoia, husteko
cluster-drain-reason-of = Zergatik husten den { $name }
cluster-set = Ezarri
cluster-heartbeat = { $at } ({ $ago })
cluster-ago-seconds = duela { $count } s
cluster-ago-minutes = duela { $count } min
cluster-ago-hours = duela { $count } h
cluster-ago-days = { $count ->
    [one] duela egun { $count }
   *[other] duela { $count } egun
}
cluster-node-added = { $name } nodoa gehitu da.
cluster-node-state-set = Nodoaren egoera orain: { $state }.
cluster-not-found = ez dago { $id } id-a duen klusterrik
cluster-no-such-model = ez dago { $name } izeneko GPU modelorik
cluster-node-exists = { $name } izeneko nodo bat badago jada (ostalari-izenak bakarrak dira kluster guztietan)
cluster-bad-state = nodo baten egoera zerbitzuan (up), husten (draining) edo eroria (down) da; { $got } idatzi da

## A cluster node (admins) and the states of nodes

node-status-up = zerbitzuan
node-status-draining = husten
node-status-down = eroria
node-status-lost = galdua
node-status-awaiting-agent = agentearen zain
node-title = { $name } nodoa
node-back = ← { $cluster } klusterra
node-status = Egoera
node-drain = Hustea
node-return = Itzuli zerbitzura
node-drain-for-repair = Hustu konpontzeko
node-drain-note = Nodoak ez du exekuzio berririk hartzen; bere exekuzio bakoitza ilarara itzultzen da bere gutxieneko exekuzio-denbora bete duenean (exekuzio babestuek orduan arte jarraitzen dute). Orriak adierazten du noiz geratzen den hutsik.
node-reason = Arrazoia
node-drain-button = Hustu
node-runs = Bertako exekuzioak
node-runs-none = Bat ere ez.
node-th-run = Exekuzioa
node-th-protection = Babesa
node-drains = Husteak
node-never-drained = Ez da inoiz hustu.
node-th-by = Nork
node-th-drained = Hustua
node-th-empty-since = Hutsik noiztik
node-th-needed-human = Pertsona bat behar izan zuen
node-th-returned = Itzulia
node-yes = bai
node-no = ez
node-drain-empty = hutsik, konpontzeko prest { $since }(e)tik
node-drain-draining = husten { $since }(e)tik: bere exekuzioak ilarara itzultzen dira bakoitzak bere gutxieneko exekuzio-denbora betetzen duenean
node-protected-until = babestua { $at } arte
node-past-min-runtime = gutxieneko exekuzio-denbora gainditu du
node-unallocated = esleipenik gabe (inoiz ez babestua)
node-system = sistema
node-not-yet = oraindik ez
node-returned-by = { $at }, egilea: { $by }
node-edit = Zuzendu nodoaren GPUak
node-edit-note = Eredu edo kopuru okerrarekin deklaratutako nodo baterako (haren agentea baztertu egiten da orduan: inbentarioa ez dator bat). Agenterik zerbitzatzen ez duen bitartean eta bertan ezer exekutatzen ez denean bakarrik.
node-edit-button = Gorde
node-edited = Nodoa zuzendu da.
node-drained = Nodoa husten ari da: ez du exekuzio berririk hartzen.
node-returned = Nodoa zerbitzura itzuli da.
node-edit-served = { $name } nodoa martxan dagoen agente batek zerbitzatzen du: gelditu agentea, zuzendu nodoa eta abiarazi berriro agentea
node-edit-busy = { $name } nodoan exekuzioek GPUak dituzte: zuzendu ezer exekutatzen ez denean (hustu lehenago)
node-edit-contracts = { $name } nodoa aldatuta, edukiera-kontratu aktiboek { $peak } { $model } GPU izango lituzkete aldi berean, multzoak kontrata ditzakeen { $limit } baino gehiago
node-not-found = ez dago { $id } id-a duen nodorik
node-reason-too-long = husteko arrazoiak gehienez 1.000 karaktere izan ditzake
node-reason-required = esan zergatik husten den nodoa (zer konpondu behar den)

## A node of the program tree: shares and administration

node-tree-back = ← Programa-zuhaitza
node-project-page = Proiektuaren orria (aurrekontua eta kideak)
# HTML; $share is a percentage with its sign, $effective a number, $money an amount.
node-facts = Gurasoarekiko kuota: <strong>{ $share }</strong> · kuota efektiboa: erakundearen <strong>% { $effective }</strong> · aldi honetako zuzkidura: <strong>{ $money }</strong>
node-percent = % { $value }
node-children-shares = Haur-nodoen kuotak
node-no-children = Oraindik ez du haur-nodorik.
node-th-child = Haur-nodoa
node-th-share-of = Kuota: { $name } (%)
node-th-effective = Kuota efektiboa
node-share-of = { $name }: kuota
node-siblings-sum = Anai-arreben batura gehienez % 100 izan daiteke; orain % { $sum } da.
node-save-shares = Gorde kuotak
node-administration = Administrazioa
node-add-child = Gehitu haur-nodo bat
node-name = Izena
node-kind = Mota
node-kind-group = programa / taldea
node-kind-project = proiektua
node-share = Kuota (%)
node-add = Gehitu
node-rename = Berrizendatu
node-new-name = Izen berria
node-move = Mugitu
node-new-parent = Guraso berria
node-archive = Artxibatu
node-archive-button = Artxibatu { $name }
node-shares-saved = Kuotak gorde dira.
node-child-added = { $name } gehitu da.
node-renamed = Berrizendatu da.
node-moved = Mugitu da.
node-archived = Artxibatu da.
node-tree-not-found = ez dago { $id } id-a duen zuhaitz-nodorik
node-outside-view = nodo hau ikus dezakezunetik kanpo dago
node-not-a-share-field = { $key } ez da kuota-eremu bat
node-bad-kind = nodo bat talde bat edo proiektu bat da, ez { $got }
node-choose-parent = aukeratu guraso berria
node-share-empty = idatzi kuota bat ehuneko gisa, adibidez 25 edo 12,5
node-share-not-a-number = { $got } ez da zenbaki bat; idatzi 25 edo 12,5 bezalako ehuneko bat
node-share-negative = kuota bat ezin da negatiboa izan ({ $got } idatzi da)
node-share-over-hundred = kuota batek ezin du % 100 gainditu ({ $got } idatzi da)
node-share-too-precise = kuota batek gehienez bi hamartar izan ditzake ({ $got } idatzi da)
node-share-twice = { $id } nodoa behin baino gehiagotan agertzen da
node-shares-forbidden = administratzaile batek edo nodo honen arduradun batek baino ezin ditu aldatu bere haur-nodoen kuotak
node-not-a-child = { $id } nodoa ez da { $parent } nodoaren haur-nodo aktiboa
node-shares-over-100 = anai-arreba hauen kuoten batura % { $sum } litzateke; gehienez % 100 izan daiteke
node-name-taken = { $name } izeneko nodo bat badago jada; izenak bakarrak dira zuhaitz osoan (maiuskulak eta minuskulak bereizi gabe)
node-name-archived = { $name } izena artxibatutako nodo batena da; aukeratu beste izen bat
node-no-room = anai-arrebek % { $used } dute jada, beraz gehienez % { $left } geratzen da (% { $asked } eskatu da)
node-admins-create = administratzaileek baino ezin dituzte zuhaitz-nodoak sortu
node-admins-rename = administratzaileek baino ezin dituzte zuhaitz-nodoak berrizendatu
node-admins-move = administratzaileek baino ezin dituzte zuhaitz-nodoak mugitu
node-admins-archive = administratzaileek baino ezin dituzte zuhaitz-nodoak artxibatu
node-parent-is-project = { $name } proiektu bat da; proiektuek ez dute haur-nodorik
node-root-move = erroa ezin da mugitu
node-move-into-itself = { $name } ezin da bere azpira edo bere azpizuhaitzera mugitu
node-root-archive = erroa ezin da artxibatu
node-has-children = { $name }: { $count ->
    [one] haur-nodo aktibo bat du oraindik; artxibatu edo mugitu lehenago
   *[other] { $count } haur-nodo aktibo ditu oraindik; artxibatu edo mugitu lehenago
}
node-has-contracts = { $name } nodoak amaitu gabeko { $count } edukiera-kontratu ditu oraindik: utzi bertan behera hasi gabeak, eta artxibatu besteak amaitzen direnean
node-has-active-runs = { $name } nodoak exekuzioak ditu oraindik abian ({ $running } martxan, { $waiting } zain); utzi bertan behera edo itxaron amaitu arte artxibatu aurretik
node-name-required = izen bat behar da
node-name-too-long = izen batek gehienez 64 karaktere izan ditzake (honek { $count } ditu)
node-name-invisible = izen batek ezin du kontrol-karaktererik edo formatu-karaktere ikusezinik izan

## Users and roles (admins)

users-title = Erabiltzaileak
users-heading = Erabiltzaileak eta rolak
# HTML; $name and $password are escaped.
users-created = <strong>{ $name }</strong> sortu da. Bere pasahitza, behin bakarrik erakusten da: <code>{ $password }</code>
users-create = Sortu erabiltzaile bat
users-name = Izena
users-role = Rola
users-lead-of = Zein nodoren arduraduna (arduradunentzat bakarrik)
users-create-button = Sortu
users-password-sign-in = Pasahitzarekin saioa hastea
# HTML; $name is escaped.
users-local-off = Desaktibatuta dago guztientzat, larrialdiko administratzailearentzat izan ezik (<strong>{ $name }</strong>); gainerakoek erakundearen identitate-hornitzailearen bidez hasten dute saioa.
users-turn-on = Aktibatu berriro pasahitzarekin saioa hastea guztientzat
users-local-on = Aktibatuta dago kontu lokal guztientzat.
users-break-glass = Larrialdiko administratzailea (pasahitzarekin saioa hasten jarraitzen du)
users-turn-off = Desaktibatu pasahitzarekin saioa hastea gainerako guztientzat
users-th-user = Erabiltzailea
users-th-roles = Rolak
users-th-grant = Eman rol bat
# $role is one of the role-* words.
users-role-of = { $node } nodoaren { $role }
users-from-idp = (identitate-hornitzailetik)
users-revoke = Kendu { $role } rola: { $user }
users-node-placeholder = nodoa (arduradunak)
users-grant = Eman
users-role-granted = Rola eman da.
users-role-revoked = Rola kendu da.
users-disable = Desgaitu
users-enable = Gaitu
users-disable-label = Desgaitu { $user }
users-enable-label = Gaitu { $user }
users-disabled-tag = desgaitua
users-account-disabled = Kontua desgaitu da: bere saioak amaitu dira, eta bere API tokenak eta saio-hasiera baztertzen dira.
users-account-enabled = Kontua berriro gaitu da.
users-disable-self = ezin duzu zure kontua desgaitu
users-local-off-no-provider = ezin da pasahitz bidezko saio-hasiera itzali: zerbitzari honek ez du identitate-hornitzailerik konfiguratuta (OIDC edo LDAP), beraz larrialdiko administratzaileak bakarrik hasi ahal izango luke saioa
users-disable-break-glass = { $name } larrialdiko administratzailea da pasahitz bidezko saio-hasiera itzalita dagoen bitartean; piztu berriro edo izendatu beste bat lehenago
users-local-turned-on = Pasahitzarekin saioa hastea aktibatuta dago kontu lokal guztientzat.
users-local-turned-off = Pasahitzarekin saioa hastea desaktibatuta dago, larrialdiko administratzailearentzat izan ezik.
users-local-on-or-off = saio-hasiera lokala aktibatuta (on) edo desaktibatuta (off) dago; { $got } jaso da
users-no-such-node = ez dago { $name } izeneko zuhaitz-nodorik
users-lead-needs-node = arduradun batek zuzentzen duen zuhaitz-nodoa behar du
users-only-lead-node = arduradun-rola baino ez dago zuhaitz-nodo bati lotuta
users-bad-role = rola admin, finance, lead edo researcher da ({ $got } jaso da)
users-exists = { $name } izeneko erabiltzaile bat badago jada
users-not-found = ez dago { $id } id-a duen erabiltzailerik
users-has-role = { $name }: rol hori badu jada
users-grant-not-found = { $user } erabiltzaileak ez du { $grant } emakidarik
users-last-admin = hau da azken administratzailea; eman administratzaile-rola beste norbaiti lehenago
users-break-glass-required = adierazi pasahitzarekin saioa hasten jarraituko duen larrialdiko administratzailea
users-no-such-user = ez dago { $name } izeneko erabiltzailerik
users-disabled = { $name } desaktibatuta dago
users-no-local-password = { $name }: ez du pasahitz lokalik
users-no-manual-admin = { $name }: ez du Tranche-n eskuz emandako administratzaile-rolik

## Capacity calendar

capacity-title = Edukiera-egutegia
capacity-pool = Klusterra eta GPU modeloa
capacity-show = Erakutsi
# HTML of numbers only.
capacity-intro = Instalatutako GPUak: <strong>{ $installed }</strong>; kontratuek horietatik <strong>{ $contractable }</strong> har ditzakete aldi berean (% { $percent }).
capacity-times = Orduak { $zone } ordu-eremuan. Gelaxka bakoitza ordu bat da: oraindik kontrata daitezkeen GPUak.
capacity-th-day = Eguna
capacity-th-max-contracted = Gehienez kontratatuak
capacity-th-min-contractable = Gutxienez kontratagarriak
capacity-buy = erosi
capacity-none = Oraindik ez dago GPUrik instalatuta.
capacity-cell-past = iragana edo egun honetatik kanpo
capacity-cell = { $date } { $time }: kontratatuak { $contracted }; kontratagarri geratzen direnak { $left }
capacity-no-pool = ez dago { $pool } multzorik

## Metrics dashboard

dashboard-title = Neurketak
dashboard-window = Tartea
dashboard-window-24h = azken 24 orduak
dashboard-window-7d = azken 7 egunak
dashboard-window-30d = azken 30 egunak
dashboard-window-period = aurrekontu-aldi bat
dashboard-period = Aurrekontu-aldia
dashboard-period-current = unekoa
dashboard-all-clusters = kluster guztiak
dashboard-show = Erakutsi
dashboard-export = Esportatu CSV
dashboard-from-to = Tartea: { $from } – { $to }.
dashboard-subtree = Eragina, itxaronaldiak eta proiektuak zuk zuzentzen dituzun proiektuei dagozkie; erabilgarritasuna, okupazioa, erabilera eta kanporatzeak GPU multzo osoarenak dira.
dashboard-th-availability = Erabilgarritasuna
dashboard-th-occupancy = Okupazioa
dashboard-th-allocated = esleituak
dashboard-th-unallocated = esleipenik gabeak
dashboard-th-impact = Eragina
dashboard-th-served = Zerbitzatutako proiektuak ≥% 95
dashboard-th-utilization = Erabilera
dashboard-th-debug-wait = Arazketa-itxaronaldia p50 / p90 (exekuzioak)
dashboard-th-protected-wait = Itxaronaldi babestua p50 / p90 (exekuzioak)
dashboard-th-unallocated-wait = Esleipenik gabeko itxaronaldia p50 / p90 (exekuzioak)
dashboard-th-preemptions = Kanporatzeak (1.000 GPU-orduko)
dashboard-definitions = Erabilgarritasuna: GPU-denbora osasuntsua (nodoa zerbitzuan, agentea bizirik) / instalatua. Okupazioa: exekuzioek hartutako GPU-denbora / GPU-denbora osasuntsua. Eragina: orduz ordu, Σ min(jasoa, zor zaiona) / Σ zor zaiona, non zor zaiona proiektuaren eskariak mugatutako zuzkidura den. Erabilera: agenteek adierazitako jarduera-zatia, adierazi duten GPU-denboraren gainean. Arazketa-exekuzioak: gehienez 15 minutuko gutxieneko exekuzio-denbora. Definizioak: docs/design.md, 5. atala.
dashboard-drains-heading = Husteak konpontzeko
dashboard-owed-heading = Zor zaiona eta jasoa, proiektuka
dashboard-th-owed = Zor zaizkion GPU-orduak
dashboard-th-received = Jasotako GPU-orduak
dashboard-percent = % { $value }
dashboard-no-drains = Tarte honetan ez da nodorik hustu konpontzeko.
# $share is dashboard-drains-human-share or nothing.
dashboard-drains = { $count ->
    [one] Tarte honetan konpontzeko huste bat hasi da
   *[other] Tarte honetan konpontzeko { $count } huste hasi dira
}: berez hustuak, { $emptied }; exekuzio babestu bat gelditzeko administratzaile bat behar izan dutenak, { $human }{ $share }; oraindik husten, { $emptying }.
dashboard-drains-human-share = {" "}(pertsona bat behar izan duten amaitutako husteak: % { $percent })
dashboard-chart-occupancy = Okupazioa GPU multzoka
dashboard-chart-allocated = esleituak
dashboard-chart-unallocated = esleipenik gabeak
dashboard-chart-occupancy-axis = GPU-denbora osasuntsuaren %
dashboard-chart-owed = Zor zaiona eta jasoa (GPU-orduak)
dashboard-chart-owed-series = zor zaiona
dashboard-chart-received-series = zor zaionaren barruan jasoa
dashboard-chart-gpu-hours = GPU-orduak
dashboard-forbidden = neurketak finantzentzat, administratzaileentzat eta arduradunentzat dira
dashboard-no-such-cluster = ez dago { $name } izeneko klusterrik
dashboard-bad-instant = { $got } ez da desfasea duen une bat, 2026-12-01T00:00:00Z bezalakoa
dashboard-from-with-to = eman from eta to batera
dashboard-to-after-from = to-k from baino geroagokoa izan behar du
dashboard-from-before-now = from oraingo unea baino lehenagokoa izan behar du: ondoren ez da ezer neurtu oraindik
dashboard-window-too-long = tarte batek gehienez 400 egun iraun ditzake
dashboard-period-not-begun = aurrekontu-aldi hori ez da hasi
dashboard-period-needs-window = aurrekontu-aldi bat «aurrekontu-aldi bat» tartearekin erakusten da: aukeratu tarte hori, edo utzi aldia hutsik
dashboard-bad-window = { $got } ez da tarte bat; aukeratu 24h, 7d, 30d edo period

## Idle GPUs (home and project pages)

idle-th-run = Exekuzioa
idle-th-submitter = Bidaltzailea
idle-th-since = Geldirik noiztik
idle-th-gpu-hours = GPU-ordu geldiak
idle-th-value = Balioa
idle-reason-for = { $run }. exekuzioa gelditzeko arrazoia
idle-stop = Gelditu
idle-stopping = { $run }. exekuzioa gelditzen ari da (geldirik zegoen).
idle-reason-required = eman exekuzioa gelditzeko arrazoi bat (1 eta 1000 karaktere artean)
idle-forbidden = exekuzioaren proiektuko arduradun batek baino ezin du gelditu exekuzio geldi bat
idle-not-found = ez dago { $id } zenbakiko GPU geldien abisurik
idle-cleared = GPU geldien { $id } abisua kendu da (exekuzioaren GPUak berriro lanpetuta daude, edo saiakera amaitu da); ez da ezer gelditu

## Audit log

audit-title = Auditoria-erregistroa
audit-forbidden = auditoria-erregistroa administratzaileentzat, finantzentzat eta arduradunentzat da
audit-all = Aldaketa guztiak, berrienetik hasita (azkenak: { $count }).
audit-subtrees = Zuk zuzentzen dituzun azpizuhaitzetako aldaketak, berrienetik hasita (azkenak: { $count }).
audit-th-when = Noiz ({ $zone })
audit-th-who = Nor
audit-th-what = Zer
audit-th-record = Erregistroa
audit-th-before = Lehen
audit-th-after = Ondoren
audit-system = sistema
audit-yes = bai
audit-no = ez
audit-none = bat ere ez
audit-empty = (hutsik)
audit-pages = Auditoria-erregistroaren orriak
audit-newest = Sarrera berrienak
audit-older = Sarrera zaharragoak
err-audit-before = before erregistroko sarrera baten id-a da, 1etik aurrerako zenbaki osoa, hura baino zaharragoak diren sarrerak ikusteko; { $got } adierazi duzu

## Auditoria-erregistroa: sarrera bakoitzaren ekintza eta erregistroa hitzez.
audit-action =
    .agent_token-create = Agente-tokena sortua
    .agent_token-revoke = Agente-tokena baliogabetua
    .api_token-create = API tokena sortua
    .api_token-revoke = API tokena baliogabetua
    .agent-refused = Agentearen deia baztertua
    .agent-session_restored = Agentearen saioa mantendu da leheneratze baten ondoren
    .budget-update = Aurrekontua aldatua
    .cluster-create = Klusterra sortua
    .contract-buy = Edukiera-kontratua erosia
    .contract-cancel = Edukiera-kontratua bertan behera utzia
    .demo-load = Demo-erakundea kargatua
    .demo-load_use_cases = Demoko AA erabilera-kasuak kargatuak
    .gpu_model-create = GPU eredua sortua
    .gpu_model-update = GPU eredua aldatua
    .member-add = Kidea gehitua
    .member-remove = Kidea kendua
    .node-add = Nodoa gehitua
    .node-archive = Nodoa artxibatua
    .node-create = Nodoa sortua
    .node-drain = Nodoa konpontzeko husten
    .node-move = Nodoa lekuz aldatua
    .node-remove = Nodoa kendua
    .node-rename = Nodoari izena aldatu zaio
    .node-return = Nodoa zerbitzura itzuli da
    .node-state = Nodoaren egoera aldatua
    .node-update = Nodoa aldatua
    .run-approve = Exekuzioa onartua
    .run-cancel = Exekuzioa bertan behera utzia
    .run-deny = Exekuzioa ukatua
    .run-idle_stop = Exekuzio geldia gelditua
    .settings-default_language = Hizkuntza lehenetsia aldatua
    .share-update = Kuotak aldatuak
    .site-local_sign_in = Saio-hasiera lokala aldatua
    .spend-import = Gastua inportatua
    .spend_rule-create = Esleipen-araua sortua
    .use_case-create = AA erabilera-kasua sortua
    .use_case-hours = Giza orduak erregistratuak
    .use_case-review = Hileko berrikuspena erregistratua
    .use_case-status = Erabilera-kasuaren egoera aldatua
    .use_case-stop_acknowledge = Gelditze-araua berretsia
    .use_case-stop_criterion = Gelditze-araua aktibatua
    .use_case-update = AA erabilera-kasua aldatua
    .user-create = Kontua sortua
    .user-email = Helbide elektronikoa aldatua
    .user-grant = Rola emana
    .user-language = Hizkuntza aldatua
    .user-password = Pasahitza aldatua
    .user-revoke = Rola kendua
audit-entity =
    .agent_token = agente-tokena
    .api_token = API tokena
    .ai_mapping_rule = esleipen-araua
    .ai_spend_import = gastu-inportazioa
    .ai_use_case = AA erabilera-kasua
    .cluster = klusterra
    .cluster_node = klusterreko nodoa
    .contract = edukiera-kontratua
    .gpu_model = GPU eredua
    .org_settings = erakundearen ezarpenak
    .project = proiektua
    .run = exekuzioa
    .site = gunea
    .tree_node = zuhaitzeko nodoa
    .user = kontua
