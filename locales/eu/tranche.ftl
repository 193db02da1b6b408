# Tranche-ren interfazea euskaraz. Domeinuko terminoak: docs/glossary.md.

## Layout

nav-home = Hasiera
nav-runs = Exekuzioak
nav-submit = Bidali
nav-approvals = Onespenak
nav-tree = Programa-zuhaitza
nav-capacity = Edukiera
nav-contracts = Kontratuak
nav-ai = AA erabilera-kasuak
nav-spend = Gastua
nav-metrics = Neurketak
nav-audit = Auditoria-erregistroa
nav-inventory = Inbentarioa
nav-users = Erabiltzaileak
nav-settings = Ezarpenak
nav-account = Kontua
layout-sign-out = Saioa itxi
layout-language = Hizkuntza
layout-language-saved = Hizkuntza aldatu da.

## Error pages

error-heading = { $status ->
    [400] Eskaera okerra
    [403] Debekatuta
    [404] Ez da aurkitu
    [409] Gatazka
    [413] Handiegia
    [422] Ezin da onartu
   *[other] Errorea
}
error-page-title = Errorea
error-back = Itzuli Tranche-ra
error-internal = zerbait gaizki joan da gure aldean; erregistratuta geratu da
error-unavailable = datu-basea ez dago eskuragarri une batez; saiatu berriro segundo batzuk barru
error-csrf = inprimakia iraungi da edo beste gune batetik dator; kargatu berriro orria eta saiatu berriro
error-no-such-page = orri hori ez dago
error-form-only = helbide honek inprimaki bat jasotzen du bidaltzean, ez bisita bat: itzuli inprimakiaren orrira
error-page-only = helbide hau bisitatzeko orri bat da eta ez du formulariorik hartzen: itzuli eta bidali formularioa bere orritik

## Sign in

login-title = Hasi saioa
login-with = Hasi saioa { $provider } bidez
login-or-password = Edo Tranche-ko pasahitz batekin:
login-user = Erabiltzaile-izena
login-password = Pasahitza
login-submit = Hasi saioa
login-wrong = erabiltzaile-izena edo pasahitza okerra da
login-throttled = huts egindako saio-hasiera gehiegi izen honetarako zure helbidetik: saiatu berriro { $seconds } s barru
login-local-off = pasahitzarekin saioa hastea desaktibatuta dago hemen: hasi saioa zure erakundearen kontuarekin
login-directory-down = ezin da erakundearen direktoriora iritsi; saiatu berriro minutu batzuk barru
login-provider-down = ezin da erakundearen identitate-hornitzailera iritsi; saiatu berriro minutu batzuk barru
login-provider-timeout = ezin da erakundearen identitate-hornitzailera iritsi edo ez du garaiz erantzun; saiatu berriro minutu batzuk barru
login-oidc-state = saio-hasiera hau ez dagokio nabigatzailearen saio honi edo dagoeneko erabili da; hasi berriro saioa hasteko botoiarekin
login-oidc-refused = identitate-hornitzaileak saio-hasiera ukatu du: { $why }
login-oidc-invalid = identitate-hornitzailearen erantzunak ez du egiaztapen bat gainditu ({ $why }); ez da inor saioan sartu
login-no-access = zure kontua ez dago Tranchen sarbidea ematen duen talderik batean ere; eskatu administratzaile bati talde batean sartzeko
login-name-taken = { $name } izeneko Tranche kontu bat badago jada, eta ez dago zure erakundeko kontuari lotuta; galdetu administratzaile bati
login-disabled = kontu hau desaktibatuta dago Tranchen
signed-out-title = Saioa itxita
signed-out-heading = Trancheko saioa itxi duzu
signed-out-now = Trancheko saioa itxi duzu. Orain { $provider }-(e)ko saioa ere ixten ari gara…
signed-out-continue = Jarraitu { $provider }-(e)ra

## Home

home-approvals = { $count ->
    [0] Ez dago zure onespenaren zain dagoen exekuziorik.
    [one] { $shown } exekuzio zure onespenaren zain
   *[other] { $shown } exekuzio zure onespenaren zain
}
home-title = Hasiera
home-welcome = Kaixo, { $name }
home-roles = Zure rolak:
home-no-roles = bat ere ez oraindik; eskatu administratzaile bati.
home-period = Aurrekontu-aldia: { $period } ({ $zone }).
home-period-range = { $start } – { $end } ({ $hours } h)
home-notifications = Jakinarazpenak
home-mark-read = Markatu denak irakurritzat
home-ai = AA erabilera-kasuak
home-idle = GPU geldiak (hartuta baina erabili gabe)
home-idle-note = GPU guztiek % { $threshold } baino erabilera txikiagoa adierazten duten exekuzioak.
home-preemptions = Kanporatze-abisuak
home-node-losses = Nodoa galdu duten exekuzioak
home-run = { $id }. exekuzioa
home-active-runs = Zure exekuzio aktiboak
home-no-active = Bat ere ez.
home-submit = Bidali exekuzio bat
home-all-runs = Zure exekuzio guztiak
home-led = Zuk zuzentzen dituzun nodoak
home-led-share = erakundearen % { $share }
home-projects = Zure proiektuak
home-effective-share = Kuota efektiboa
home-entitlement = Aldi honetako zuzkidura
home-see-tree = Ikusi programa-zuhaitza
role-admin = administratzailea
role-finance = finantzak
role-lead = arduraduna
role-researcher = ikertzailea

## Table headings used on several pages

th-what = Zer
th-state = Egoera
th-command = Agindua
th-project = Proiektua
th-cluster = Klusterra
th-model = Modeloa
th-gpu-model = GPU modeloa
th-gpus = GPUak
th-node = Nodoa
th-when = Noiz
th-attempt = Saiakera
th-details = Xehetasunak

## Run states

state-waiting_approval = onespenaren zain
state-denied = ukatua
state-queued = ilaran
state-starting = abiatzen
state-running = exekutatzen
state-stopping = gelditzen
state-completed = amaitua
state-succeeded = osatua
state-failed = huts egina
state-cancelled = bertan behera utzia
state-preempted = kanporatua
state-timeout = denbora agortua
state-lost = galdua

## Runs list

runs-title = Exekuzioak
runs-submit = Bidali exekuzio bat
runs-show = Erakutsi
runs-state = Egoera
runs-project = Proiektua
runs-cluster = Klusterra
runs-filter = Iragazi
runs-none = Ez dago bat datorren exekuziorik.
runs-submitted = Bidalia ({ $zone })
runs-any = edozein
runs-scope-all = ikus dezakedan guztia
runs-scope-mine = nik bidaliak
runs-scope-projects = nire proiektuak
runs-state-active = aktiboak
runs-shown-latest = { $shown ->
    [one] Azken exekuzioa erakusten da; guztira: { $total }.
   *[other] Azken { $shown } exekuzioak erakusten dira; guztira: { $total }.
}
runs-shown-all = { $total ->
    [one] Exekuzio bakarra erakusten da.
   *[other] Exekuzio guztiak erakusten dira: { $total }.
}
runs-shown-older = { $from }–{ $to } bitarteko exekuzioak erakusten dira, berrienetik hasita; guztira: { $total }.
runs-shown-none-older = { $total ->
    [one] Ez dago exekuzio zaharragorik; guztira: { $total }.
   *[other] Ez dago exekuzio zaharragorik; guztira: { $total }.
}
runs-pages = Exekuzioen orriak
runs-newest = Exekuzio berrienak
runs-older = Exekuzio zaharragoak

## Why a run waits (the run page and lists)

run-waiting-estimated = { $reason }; hasiera zenbatetsia: { $at }
run-waiting-no-estimate = { $reason }; oraindik ez dago hasiera zenbatetsirik
run-waiting-next-pass = planifikatzailearen hurrengo pasaldiaren zain
wait-reserved-suffix = ; hasiera erreserbatua { $at } inguruan
wait-fair-share = { $count ->
    [one] { $projects } lehenago doa (bere zuzkiduraren barruan dago edo kuota bidezkoaren azpitik urrunago) eta behar dituen GPUak dauzka edo haien zain dago{ $reserved }
   *[other] { $more ->
        [0] { $projects }
       *[other] { $projects } eta beste { $more }
    } lehenago doaz (beren zuzkiduraren barruan daude edo kuota bidezkoaren azpitik urrunago) eta behar dituen GPUak dauzkate edo haien zain daude{ $reserved }
}
wait-position = { $position }. da bere proiektuaren ilaran
wait-over-share = bere proiektuak { $held } { $model } GPU dauzka, eta haren kuota bidezkoa (zuzkidura) { $entitlement } da; gainerako GPU okupatuak beste proiektu batzuen zuzkiduraren barruan daude, beraz { $gpus } libratu arte itxaroten du{ $reserved }
wait-idle-gpus = esleipenik gabe: bere modeloko { $gpus } GPU gelditu arte itxaroten du (orain { $free } daude geldirik); ez du inoiz inor kanporatzen{ $waiting ->
    [0] {""}
    [one] ; bere modeloko GPUen zain dagoen exekuzio esleitu 1 doa lehenago
   *[other] ; bere modeloko GPUen zain dauden { $waiting } exekuzio esleitu doaz lehenago
}
wait-short-run-headroom = { $gpus } GPUren zain: orain { $free } daude geldirik, eta horietatik { $kept } exekuzio laburretarako gordetzen ditu multzoak (15 minutuko edo gutxiagoko denbora-muga), berehala has daitezen
wait-reserved = { $gpus } { $model } GPUren zain, { $free ->
    [one] orain 1 dago libre
   *[other] orain { $free } daude libre
}; hasiera erreserbatua { $at } inguruan
wait-behind-reservation = GPUak { $run }. exekuziorako erreserbatuta daude { $at } inguruan hasita, eta exekuzio hau ez litzateke lehenago amaituko
wait-protected = har litzakeen GPUak { $until } arte daude babestuta (haietan dauden exekuzioen gutxieneko exekuzio-denbora, edo haiek erabiltzen duten edukiera-kontratua)
wait-gpus = bere modeloko { $gpus } GPUren zain; orain { $free } daude libre
wait-nodes-draining = nodoa husten: { $gpus } GPU behar ditu, eta har litzakeenak konpontzeko husten ari diren nodoetan daude
wait-budget = aurrekontua agortuta: gutxieneko exekuzio-denborak { $needs } balio du, eta proiektuari { $has } geratzen zaizkio aldi honetan (esleipenik gabe exekuta daiteke oraindik, gutxieneko denbora 0 jarrita)
wait-unallocated-cap = proiektuak esleipenik gabeko { $cap } GPUko muga bete du ({ $held } erabiltzen)
wait-contracts = { $held } GPU beste proiektu batzuen edukiera-kontratuetarako gordeta daude (libre, edo esleipenik gabeko exekuzioei utzita kontratu batek berreskuratu arte)
wait-in-line = ilaran: { $count ->
    [one] exekuzio { $count }
   *[other] { $count } exekuzio
} aurretik
wait-gpus-down = eroritako nodoen zain: bere modeloko { $gpus } GPU behar ditu, eta { $up } daude martxan dauden nodoetan
wait-never-fits = { $gpus } GPU eskatzen ditu, baina bere modeloko { $installed } baino ez daude instalatuta; ezin izango da inoiz abiatu
wait-no-live-agent = ez dago agente bizirik: bere klusterreko { $offline } { $model } GPUetako batek ere ez du nodo-agenterik martxan; agenteek bere nodoak zerbitzatzen dituztenean abiatuko da
wait-no-live-agent-enough = ez dago agente bizirik behar adina nodotan: { $gpus } { $model } GPU behar ditu; { $installed } nodo-agentea martxan duten nodoetan daude eta { $offline } agenterik gabekoetan
wait-gpus-some-offline = { $gpus } { $model } GPUren zain: { $free } libre nodo-agentea martxan duten nodoetan; beste { $offline } agenterik gabeko nodoetan daude
wait-draining-or-outside = { $gpus } GPUren zain: libreak husten ari diren nodoetan daude edo Tranche-tik kanpoko Slurm lanek betetzen dituzte; Tranche-tik kanpo, { $outside }
wait-with-outside = { $reason }; Tranche-tik kanpo, { $outside }
wait-executor-down = { $cluster } klusterreko Slurm kontrolatzaileak ez du erantzuten { $since }(e)tik ({ $error }); abiatze berriak zain daude, eta martxan dauden exekuzioek beren egoera gordetzen dute
runs-ahead = { $count ->
    [one] exekuzio { $count } aurretik
   *[other] { $count } exekuzio aurretik
}

## The run page

run-title = { $id }. exekuzioa
run-back = ← Exekuzioak
run-why-waits = Zergatik dagoen zain:
run-waits-approval = Arduradun baten onespenaren zain:
run-waits-approval-why = bere kontratu babestuak ({ $hours } GPU-ordu) proiektuaren autozerbitzu-muga gainditzen du.
run-decision = Erabakia:
run-preempted = { $count ->
    [one] Behin
   *[other] { $count } aldiz
} kanporatu dute: ikusi kronologiako sarrera nabarmenduak.
run-lost = Bere nodoa { $count ->
    [one] behin
   *[other] { $count } aldiz
} galdu da (nodoaren agentea gelditu edo isildu egin da): ez da kanporatzea; ikusi kronologiako sarrera nabarmenduak.
run-project = Proiektua
run-gpus = GPUak
run-gpus-on = { $gpus } × { $model }, { $cluster } klusterrean
run-min-runtime = Gutxieneko exekuzio-denbora
run-min-runtime-free = 0 (doakoa, kanpora daitekeena)
run-protected-hours = ({ $hours } GPU-ordu babestu)
run-time-limit = Denbora-muga
run-priority = Lehentasuna
run-within-project = (proiektuaren barruan)
run-charges = Kobrantzak
run-charges-none = oraindik ez (exekuzio bat exekutatzen den bitartean kobratzen da; gutxieneko denboraren kostua erreserbatu baino ez da egiten)
run-charges-never-ran = bat ere ez: ez da inoiz exekutatu
run-charges-ended-none = bat ere ez
run-charges-paid = { $money } proiektuaren aurrekontutik { $hours } GPU-ordurengatik
run-charges-prepaid = { $hours } GPU-ordu proiektuaren edukiera-kontratuan, harekin ordainduta
run-charges-free = { $hours } GPU-ordu doan (esleipenik gabe, edo aurrekontutik haratago)
run-resumable = Berrabiagarria
run-resumable-yes = bai, ilarara itzultzen da kanporatu ondoren edo bere nodoa galtzean
run-resumable-no = ez, kanporatzeak edo bere nodoa galtzeak amaitzen du
run-submitted = Bidalia
run-submitted-by = { $name }(e)k, { $at }
run-started = Hasia
run-started-attempt = { $at } ({ $attempt }. saiakera)
run-ended = Amaitua
run-exit = irteera: { $code }
run-decision-reason = Erabakiaren arrazoia
run-command = Agindua
run-workdir = Lan-direktorioa
run-env = Ingurunea
run-cancel = Utzi bertan behera { $id }. exekuzioa
run-approve-or-deny = Onetsi edo ukatu
run-approve-reason = Arrazoia (aukerakoa)
run-approve = Onetsi
run-deny-reason = Arrazoia (derrigorrezkoa; ikertzaileak ikusiko du)
run-deny = Ukatu
run-timeline = Kronologia
run-nothing-yet = Ezer ez oraindik.
run-made-room = tokia egin dio:
run-link = { $id }. exekuzioa
run-placements = Kokapenak
run-not-placed = Oraindik ez da inongo nodotan kokatu.
run-no-placement = Ez da exekuzio honen kokapenik erregistratu.
run-gpu-indices = GPU indizeak
run-executor-job = Exekutatzailearen lana
run-process = Prozesua
proc-assigned = esleitua, oraindik abiatu gabe
proc-running = exekutatzen
proc-exited = amaitua
proc-held = atxikita taldeko nodo guztiek batera abiarazi arte (beste exekuzio baten prozesuak oraindik haietako baten GPUak erabiltzen ditu)
proc-never-started = ez da inoiz abiatu (bere prozesua abiatu aurretik gelditu zen)
run-slurm-job = Slurm lana { $job }
run-exit-code = Irteera-kodea
run-utilization = GPU erabilera
run-submitted-queued = { $id }. exekuzioa bidali da eta ilaran dago: { $preview }.
run-submitted-approval = { $id }. exekuzioa bidali da; arduradun baten onespenaren zain dago.
run-already-submitted = Inprimaki hau bidalita zegoen jada: { $id }. exekuzioa da.
run-form-resent = Inprimaki hau beste balio batzuekin bidali zen jada, { $id }. exekuzio gisa. Egiaztatu balioak eta bidali berriro exekuzio berri bat sortzeko.
run-cancelled = { $id }. exekuzioa bertan behera utzi da.
run-cancel-requested = { $id }. exekuzioa bertan behera uzteko eskatu da; bere prozesuak gelditzen ari dira.

## The run form

form-title = Bidali exekuzio bat
form-intro = Exekuzio bat multzo bat da: bere GPU guztiak batera abiatzen dira edo bat ere ez. Bere <strong>gutxieneko exekuzio-denbora</strong> bere denbora-tarteko kontratua da: denbora horretan kanporatzetik babestuta dago, eta bere kostua proiektuaren aurrekontuari kargatzen zaio. Gutxieneko denbora 0 bada, doakoa eta kanpora daitekeena da: GPU geldiak erabiltzen ditu, eta esleitutako edozein exekuziok berreskura ditzake. Iraupenak minututan (90) edo ordu eta minututan (1:30) idazten dira; guneak gutxieneko exekuzio-denborarako duen gehienekoa { $max } da.
form-fix-field = Zuzendu behean markatutako eremua.
form-preview = Kostuaren aurrebista
form-needs-approval-tag = onespena behar du
form-needs-approval = Bidaltzean arduradun baten onespen-ontzira joango da; onetsi ondoren baino ez da abiatuko.
form-nothing-yet = Oraindik ez da ezer bidali: sakatu Bidali ilaran jartzeko.
form-where = Non
form-project = Proiektua
form-no-projects = Oraindik ez zara inongo proiektutako kide; eskatu arduradun bati zu gehitzeko.
form-cluster = Klusterra
form-gpu-model = GPU modeloa
form-gpus = GPUak
form-how-long = Zenbat denbora
form-min-runtime = Gutxieneko exekuzio-denbora
form-min-runtime-example = 0 edo 1:30
form-time-limit = Denbora-muga
form-time-limit-example = 60 edo 24:00
form-priority = Lehentasuna proiektuaren barruan
form-resumable = Berrabiagarria (kanporatu ondoren ilarara itzultzen da, amaitu beharrean)
form-what = Zer
form-command = Agindua
form-workdir = Lan-direktorioa (aukerakoa)
form-workdir-example = /home/ni/proiektua
form-env = Ingurunea (aukerakoa, IZENA=balioa bat lerro bakoitzeko)
form-secret-env = Ingurune sekretua (aukerakoa, IZENA=balioa bat lerro bakoitzeko)
form-secret-note = Balio sekretuak zifratuta gordetzen dira, •••• gisa erakusten zaizkie guztiei (zuri ere bai), eta lana exekutatzen duen nodoko agenteari baino ez zaizkio ematen. Izenean TOKEN, SECRET, KEY edo PASSWORD duten aldagaiak (<code>HF_TOKEN</code> adibidez) sekretu gordetzen dira goiko ingurunean idatzita ere.
form-secret-reenter = Balio sekretuak ez dira inoiz berriro erakusten: izenak gordetzen dira; idatzi berriro haien balioak bidali aurretik.
form-preview-button = Ikusi kostua
form-submit = Bidali
err-gpus-whole = GPU kopuruak zenbaki oso bat izan behar du ({ $got } idatzi da)
err-min-runtime-format = gutxieneko exekuzio-denbora minutu osotan (90) edo ordu eta minututan (1:30) idatzi behar da; { $got } idatzi da
err-time-limit-format = denbora-muga minutu osotan (90) edo ordu eta minututan (1:30) idatzi behar da; { $got } idatzi da
err-priority-whole = lehentasunak −1.000 eta 1.000 arteko zenbaki oso bat izan behar du ({ $got } idatzi da)
err-env-line = { $line }. lerroa: idatzi IZENA=balioa ({ $got } idatzi da)
err-env-twice = { $line }. lerroa: { $name } bi aldiz dago

## Account

account-never = inoiz ez
account-label-too-long = etiketa batek gehienez 100 karaktere ditu
account-title = Zure kontua
account-language = Hizkuntza
account-language-note = Zuretzako interfazearen hizkuntza. Zuk bat aukeratzen ez baduzu, Tranche-k nabigatzailearen hizkuntza erabiltzen du, eta, bestela, erakundearen lehenetsia.
account-language-auto = Nabigatzailearena edo erakundearena
account-save = Gorde
account-tokens = API tokenak
account-tokens-use = Erabili token bat <code>Authorization: Bearer TOKEN</code> gisa <a href="/api/v1/openapi.json">JSON APIrako</a>.
account-token-created = Zure token berria, behin bakarrik erakusten da; kopiatu orain:
account-token-label = Etiketa
account-token-create = Sortu token bat
account-token-created-at = Sortua
account-token-used = Azken erabilera
account-token-revoked = baliogabetua { $at }
account-token-revoke = baliogabetu
account-email = Posta elektronikoa
account-email-note = Aurrekontu-alertak hona ere bidaltzen dira guneak posta konfiguratuta duenean.
account-email-address = Helbidea
account-password = Pasahitza
account-password-current = Uneko pasahitza
account-password-new = Pasahitz berria (gutxienez 10 karaktere)
account-password-repeat = Pasahitz berria berriro
account-password-change = Aldatu pasahitza

## Organisation settings (admins)

settings-title = Erakundearen ezarpenak
settings-default-language = Hizkuntza lehenetsia
settings-default-language-note = Nabigatzaileak ez ingelesa, ez gaztelania, ez euskara eskatzen ez dien bisitarientzat, eta hizkuntzarik aukeratu ez duten erabiltzaileentzat.
settings-save = Gorde
settings-saved = Ezarpenak gorde dira.

## Spend reports

reports-title = Gastu-txostenak
reports-err-role = gastu-txostenak finantzetarako, administratzaileentzat eta arduradunentzat dira
reports-all-models = guztiak
reports-archived = artxibatua
reports-period = Aldia
reports-node = Nodoa
reports-cluster = Klusterra
reports-all-clusters = kluster guztiak
reports-show = Erakutsi
reports-export = Esportatu CSV
reports-ai-csv = AA erabilera-kasuen CSVa
reports-note = Zenbatekoak { $currency }-tan. Kontratuak: erosketak ken itzulketak, indarrean dauden kontratuen GPU-orduak. Exekuzioak: aurrekontuei kargatutako exekuzio esleituen denbora. Doakoak: esleipenik gabeko GPU-orduak (kargurik gabe). Aurreikuspena: kontratuak erosi ziren bezala, eta exekuzioetako gastua aldiaren amaierara proiektatuta, orain arteko erritmoan. CSV esportazioak ingelesezko zutabe-izenak eta formaturik gabeko zenbakiak (1234.56) gordetzen ditu hizkuntza guztietan, kalkulu-orri eta scriptentzat.
reports-contracts = Kontratuak
reports-contract-hours = Kontratuen GPU-orduak
reports-runs = Exekuzioak
reports-run-hours = Exekuzioen GPU-orduak
reports-free-hours = GPU-ordu doakoak
reports-total = Gastua guztira
reports-entitlement-hours = Zuzkiduraren GPU-orduak
reports-entitlement-value = Zuzkiduraren balioa
reports-budget = Aurrekontua
reports-cap = Gastu-muga
reports-forecast = Aurreikuspena

## Program tree

tree-title = Programa-zuhaitza
tree-intro = { $period } aurrekontu-aldiko zuzkidurak, { $zone } ordu-eremuan: kuota efektiboa × instalatutako GPUak × orduak; dirua, modelo bakoitzaren fakturazio-pisuan eta prezioan.
tree-share-of-parent = Gurasoarekiko kuota
tree-gpu-hours = GPU-orduak
tree-entitlement = Zuzkidura ({ $currency })
tree-project-tag = proiektua

## Project page

project-back = ← Programa-zuhaitza
project-tag = proiektua
project-admin-link = Proiektu hau berrizendatu, mugitu edo artxibatu
project-share = Gurasoarekiko kuota
project-effective = erakundearen % { $share }
project-period = Aldia
project-entitlement = Zuzkidura
project-balance = Aldi honetako saldoa
project-balance-held = (horietatik { $held } martxan dauden exekuzio babestuen gutxieneko denborarako gordeta daude: { $free } geratzen dira exekuzio eta kontratu berrietarako)
project-balance-later = Saldoa: { $month }
project-balance-later-note = (orduan hasten diren kontratuak handik ordaintzen dira)
project-budget = Aldiko aurrekontua
project-budget-default = (zuzkiduraren balioa aldia ireki zenean; kuoten, prezioen edo GPUen aldaketak hurrengo alditik aurrera aplikatzen dira)
project-cap = Hileko gastu-muga
project-alerts = Aurrekontu-alertak
project-alerts-at = aldiko aurrekontuaren { $thresholds } iristean, benetakoa eta aurreikusia
project-self-service = Autozerbitzu-muga
project-self-service-value = { $hours } GPU-ordu exekuzio babestu bakoitzeko (GPUak × gutxieneko exekuzio-denbora); hortik gora, arduradun batek onesten du
project-runs-now = Orain dauden exekuzioak
project-no-runs = Ez dago exekuziorik martxan edo zain.
project-running = Exekutatzen ({ $count })
project-waiting = Zain ({ $count })
project-th-run = Exekuzioa
project-th-submitter = Bidaltzailea
project-th-why = Zergatik dagoen zain
project-fair-share = Kuota bidezkoa
project-siblings-rank = Postua
project-siblings-share = Kuota
project-siblings-usage = Erabilera (GPU-orduak)
project-siblings-part = Erabileraren zatia
project-sibling-hidden = beste proiektu bat (ezin duzu ikusi)
project-owed = Zor zaiona eta jasoa aldi honetan
project-by-day = Egunez egun
project-day = Eguna
project-owed-to-date = Gaur arte zor zaiona
project-received-to-date = Gaur arte jasoa
project-spend = Aldi honetako gastua
project-spend-contracts = Edukiera-kontratuak
project-spend-runs = Exekuzio esleituak
project-spend-total = Guztira
project-spend-forecast = Aldiaren amaierarako aurreikuspena
project-spend-forecast-note = (kontratuak behin; exekuzioen gastua orain arteko erritmoan)
project-entitlements = Zuzkidura klusterka eta GPU modeloka
project-money = Dirua
project-contracts = Edukiera-kontratuak
project-no-contracts = Bat ere ez.
project-window = Tartea
project-price = Prezioa
project-members = Kideak
project-no-members = Oraindik ez dago kiderik.
project-remove = kendu
project-add-member = Gehitu kidea (erabiltzaile-izena)
project-add = Gehitu
project-budget-settings = Aurrekontuaren ezarpenak
project-save-budget = Gorde aurrekontua
project-budget-saved = Aurrekontua gorde da.
project-noun-threshold = alerta-atalase batek
project-noun-self-service = autozerbitzu-mugak
project-none = bat ere ez
project-rank = <strong>{ $count }etik { $rank }.</strong> postua bere anai-arreben artean; { $usage } GPU-ordu (fakturazio-pisuarekin, esleituak) azken 7 egunetan, planifikatzailearen kuota bidezkoaren leihoa. Anai-arrebak kuota eta erabileraren arteko zatiduraren arabera zerbitzatzen dira; erabilerarik gabekoa lehenengo.
project-owed-line = Orain arte zor zaiona (orduz ordu, zuzkidura proiektuaren eskariak mugatuta, metriken orrian bezala): <strong>{ $owed }</strong> GPU-ordu; jasoa (esleitutako exekuzioak): <strong>{ $received }</strong> GPU-ordu ({ $pct }); eragina (zor zitzaionetik jasoa): <strong>{ $impact }</strong>.
project-no-contracts-buy = <a href="/capacity">Ikusi edukiera-egutegia</a> bat erosteko.
project-budget-field = Aldiko aurrekontua ({ $currency }; hutsik = zuzkiduraren balioa)
project-cap-field = Hileko gastu-muga ({ $currency }; hutsik = mugarik ez)
project-self-service-field = Autozerbitzu-muga (GPU-orduak)
project-thresholds-field = Alerta-atalaseak (aurrekontuaren %, adib. 50, 75, 90)

## Alerts (notifications and e-mails)

alert-budget-actual = { $project } proiektuak aurrekontuaren % { $pct } gastatu du ({ $month }): { $amount } / { $budget }
alert-budget-forecast = { $project } proiektuak aldiaren amaierarako aurrekontuaren % { $pct } gastatuko duela aurreikusten da ({ $month }): { $amount } / { $budget }
alert-budget-actual-over = { $project } proiektuak aurrekontua baino gehiago gastatu du ({ $month }): { $amount } / { $budget }
alert-budget-forecast-over = { $project } proiektuak aldiaren amaierarako aurrekontua baino gehiago gastatuko duela aurreikusten da ({ $month }): { $amount } / { $budget }
alert-budget-subject = Tranche aurrekontu-alerta: { $project }, % { $pct } ({ $kind ->
    [actual] benetakoa
   *[other] aurreikuspena
})
alert-see-project = Ikusi proiektua
alert-use-case-actual = { $name } AA erabilera-kasuak bere mugaren % { $pct } gastatu du ({ $month }): { $amount } / { $limit }
alert-use-case-forecast = { $name } AA erabilera-kasuak aldiaren amaierarako bere mugaren % { $pct } gastatuko duela aurreikusten da ({ $month }): { $amount } / { $limit }
alert-use-case-actual-over = { $name } AA erabilera-kasuak bere muga baino gehiago gastatu du ({ $month }): { $amount } / { $limit }
alert-use-case-forecast-over = { $name } AA erabilera-kasuak aldiaren amaierarako bere muga baino gehiago gastatuko duela aurreikusten da ({ $month }): { $amount } / { $limit }
alert-use-case-subject = Tranche AA erabilera-kasuaren alerta: { $name }, % { $pct } ({ $kind ->
    [actual] benetakoa
   *[other] aurreikuspena
})
alert-see-use-case = Ikusi erabilera-kasua
alert-idle = { $run } exekuzioak ({ $project }) { $gpus } { $model } GPU ditu geldirik (guztiak % { $pct } erabileratik behera) { $since } geroztik: { $hours } GPU-ordu, { $value } orain arte
alert-idle-free = { $run } exekuzioak ({ $project }) { $gpus } { $model } GPU ditu geldirik (guztiak % { $pct } erabileratik behera) { $since } geroztik: { $hours } GPU-ordu orain arte (doako exekuzioa: ez zaio ezer kobratzen, baina beste exekuzio batzuek erabil litzakete)
alert-idle-subject = Tranche: { $run } exekuzioak GPU geldiak ditu
alert-see-run = Ikusi exekuzioa
idle-value-free = doakoa (ez da ezer kobratzen)

## Run submission: checks and the cost preview

run-preview-free = doakoa, kanpora daitekeena (gutxieneko denbora 0: GPU geldiak erabiltzen ditu, eta haiek behar dituen esleitutako exekuzio batek kanpora dezake, exekuzio horrek behar duena gehi nodo bateko GPUak baino gehiago askatuko ez balitu)
run-preview-cost = { $hours } GPU-ordu babestu, { $cost } proiektuaren aurrekontutik (saldoa: { $balance }), hastean erreserbatuta; exekutatzen den denbora kobratzen da
run-preview-contract = ; { $hours } GPU-ordu babestu proiektuaren edukiera-kontratuan daude, harekin ordainduta, bertan hasten bada
run-preview-approval = ; proiektuaren autozerbitzu-muga ({ $limit } GPU-ordu) gainditzen du, beraz arduradun batek onetsi behar du
err-choose-project = aukeratu proiektu bat
err-choose-cluster = aukeratu kluster bat
err-choose-model = aukeratu GPU modelo bat
err-model-not-in-cluster = { $cluster } klusterrak ez du { $model } GPUrik instalatuta; aukeratu klusterrak duen GPU eredu bat
err-larger-than-cluster = { $gpus } GPU eskatzen { $gpus ->
    [one] du
   *[other] ditu
 }, baina { $cluster } klusterrak { $installed } { $model } GPU baino ez ditu instalatuta; ezin izango litzateke inoiz abiatu
err-budget-exceeded = { $project } proiektuari { $balance } geratzen zaizkio aldi honetan, baina gutxieneko exekuzio-denborak { $cost } balio du; jaitsi GPUak edo gutxieneko denbora, edo bidali gutxieneko denbora 0 jarrita, esleipenik gabe exekutatzeko (doakoa, kanpora daitekeena)

## Grafikoak

percent = % { $n }

chart-contracts = edukiera-kontratuak
chart-runs = esleitutako exekuzioak
chart-owed = zor zaiona (zuzkidura eskariak mugatuta)
chart-received = jasoa (esleitua)
chart-gpu-hours = GPU-orduak
chart-owed-received-title = { $project }: zor zaiona eta jasoa aldi honetan (GPU-orduak)
chart-spend-by-period = Gastua aldika
chart-spend-by-model = Gastua GPU modeloka, { $period }

## Testuaren arauak ukatutako inprimakiaren orria

input-error-title = Egiaztatu inprimakia
input-error-intro = Ez da ezer gorde. Bidali duzuna behean dago, kontrol-karaktereak ikur gisa erakutsita (␀ U+0000rako); zuzendu eta bidali berriro.
input-error-again = Bidali berriro
input-error-back = Itzuli Tranchera
input-control-char = { $field }: U+{ $code } kontrol-karakterea du { $position }. karakterean; kendu ({ $rule })
input-rule-multiline = hemen testu inprimagarria, tabulazioak eta lerro-jauziak baino ez dira onartzen
input-rule-line = hemen lerro bateko testu inprimagarria baino ez da onartzen

## Exekuzio baten kronologia (src/i18n/said.rs)

event-kind-submitted = bidalia
event-kind-approved = onetsia
event-kind-denied = ukatua
event-kind-started = abiarazia
event-kind-running = exekutatzen
event-kind-succeeded = osatua
event-kind-failed = huts egina
event-kind-requeued = ilarara itzulia
event-kind-ended = amaitua
event-kind-time_limit = denbora-muga
event-kind-unallocated = esleipenik gabe
event-kind-cancel_requested = bertan behera uztea eskatua
event-kind-cancelled = bertan behera utzia
event-kind-lost = galdua
event-kind-preempted = kanporatua
event-kind-contract = kontratuan
event-submitted = { $by } erabiltzaileak bidalia
event-submitted-approval = { $by } erabiltzaileak bidalia; arduradun baten onespenaren zain ({ $hours } GPU-ordu babestu, autozerbitzu-muga: { $limit })
event-approved = { $by } erabiltzaileak onetsia
event-approved-why = { $by } erabiltzaileak onetsia: { $reason }
event-denied = { $by } erabiltzaileak ukatua: { $reason }
event-cancelled = { $by } erabiltzaileak bertan behera utzia
event-idle-stopped = { $by } erabiltzaileak gelditua, geldirik zegoelako: { $reason }
event-unallocated = proiektuaren aurrekontua agortu da: exekuzioak esleipenik gabe jarraitzen du (doan, kanporagarria)
event-requeued-preempted = ilarara itzuli da kanporatu ondoren; bere historia gordetzen du eta berriro exekutatuko da GPUak libre daudenean
event-ended-preempted = kanporatuta amaitua (ez da berrabiagarria)
event-cancelled-stopped = bertan behera utzia; bere prozesuak gelditu dira
event-cancelled-node-lost = bertan behera utzita; bere nodoko agentea galdu zen prozesuak gelditzen ikusi aurretik: geldituta daudela jotzen da, eta itzultzen den agente batek geratzen direnak geldiarazten ditu
event-cancelled-before-start = bertan behera utzia bere prozesuak abiatzen ikusi aurretik: bat ere ez zegoen martxan
event-time-limit-node-lost = muga-denboran geldituta; bere nodoko agentea galdu zen prozesuak gelditzen ikusi aurretik: geldituta daudela jotzen da, eta itzultzen den agente batek geratzen direnak geldiarazten ditu
event-cancelled-job-gone = bertan behera utzita; Slurm-ek ez du bere lana erakusten, beraz ez dakigu nola amaitu zen eta prozesuak geldituta daudela jotzen da
event-time-limit-job-gone = muga-denboran geldituta; Slurm-ek ez du bere lana erakusten, beraz ez dakigu nola amaitu zen eta prozesuak geldituta daudela jotzen da
event-time-limit-stopped = denbora-mugan gelditua
event-gang-failed = taldeko prozesu batek huts egin du; besteak gelditu dira
event-requeued-lost = ilarara itzuli da bere nodoa galdu ondoren
event-requeued-lost-unstarted = ilarara itzuli da: bere nodoa galdu zen prozesuak bertan abiatu aurretik (ez zen ezer exekutatu, beraz berriro exekutatuko da, berrekingarria izan ala ez)
event-lost = bere nodoa galdu da eta exekuzioa ez da berrabiagarria
event-process-gone = bere prozesua desagertu da eta bere agenteak ez du inoiz jakinarazi nola amaitu zen (leheneratutako datu-base bat, edo agenteak jakinarazi ezin izan zituen irteerak)
event-node-fault = bere { $node } nodoak ezin izan du bere prozesua exekutatu, eta konpontzeko husten ari da: { $fault }
event-requeued-node-fault = ilarara itzuli da: bere nodoak ezin izan ditu bere prozesuak abiarazi (ez zen ezer exekutatu, beraz berriro exekutatuko da, berrekingarria izan ala ez)
event-requeued-gang-fault = ilarara itzuli da: bere nodoetako batek ezin izan du bere prozesua abiarazi besteak exekutatzen ari ziren bitartean
event-lost-gang-fault = galdua: bere nodoetako batek ezin izan du bere prozesua abiarazi besteak exekutatzen ari ziren bitartean, eta exekuzioa ez da berrabiagarria
event-exited = amaitu da: { $status }
event-exited-0 = amaitu da: 0 egoera
exit-127 = 127 egoera (ez da agindua aurkitu, edo agenteak ezin izan du abiarazi: ikusi exekuzioaren erregistroa nodoan)
exit-signal = { $code } egoera ({ $signal } seinaleak hila)
exit-status = { $code } egoera
event-running = bere prozesuak exekutatzen ari dira
event-on-contract = hemendik aurrera { $contract } edukiera-kontratuan exekutatzen da (bere proiektuarena): leihoak irauten duen bitartean babestuta dago, eta bertan emandako denbora aurrez ordainduta dago
event-time-limit = bere denbora-mugara iritsi da; gelditzen
event-node-silent = { $node } nodoa galdu da: bere agenteak ez du bihotz-taupadarik bidali { $seconds } s-tan
event-agent-restarted = { $node } nodoa: bere agentea berrabiarazi da, beraz exekuzioaren prozesuak ez daude jada han
event-agent-stopped = { $node } nodoa: bere agentea gelditu da, beraz exekuzioaren prozesuak ez daude jada han
event-place = { $node }, GPUak: { $gpus }
event-started-on = abiarazia hemen: { $places }
event-started-contract = abiarazia hemen: { $places } (edukiera-kontratua: { $contract })
event-started-contract-part = abiarazia hemen: { $places } (bere { $gpus } GPUetatik { $covered } edukiera-kontratuan: { $contract }; besteak kobratzen dira)
preempt-node-draining = { $node } nodoa husten ari da konpontzeko
preempt-node-down = { $node } nodoa erorita dago
preempt-unallocated = esleipenik gabeko exekuzioa (doan): bere GPUak esleitutako exekuzio batera joan dira
preempt-fair-share = bere gutxieneko exekuzio-denbora igaro du, eta { $project } proiektua bere kuota bidezkoaren azpitik urrunago dago
preempt-entitlement = bere gutxieneko exekuzio-denbora igaro du, eta { $project } proiektua bere zuzkiduraren azpitik dago (GPUen bere kuota), exekuzio honen proiektuak berea baino gehiago zuen bitartean
preempt-contract = bere GPUak edukiera-kontratu bati hitzemanda daude: { $contract }
preempt-legacy-quota = bere taldearen kuotatik gora exekutatu da; beste talde batek bere kuota berreskuratu du
event-slurm-refused = Slurmek lana ukatu du: { $why }
event-slurm-uneven = Slurmek GPU kopuru bakarra exekutatzen du nodoko lan bakoitzean; pasaldiak hau jarri zuen: { $placed }
event-slurm-timeout = { $job } Slurm lana bere denbora-mugara iritsi da
event-slurm-cancelled = Tranchetik kanpo bertan behera utzia: { $job } Slurm lana Slurmen bertan behera utzi zen
event-slurm-node-failed = { $job } Slurm lana { $state } egoeran amaitu da: bere nodoak huts egin du
event-slurm-ended = { $job } Slurm lana { $state } egoeran amaitu da ({ $reason })
event-slurm-vanished = Slurmek ez du jada { $job } lana ezagutzen; ez dakigu nola amaitu zen
event-history-submitted = bidalia (erregistratutako historia)
event-history-started = { $gpus } GPUtan abiarazia (erregistratutako historia)
event-history-finished = amaitua (erregistratutako historia)
event-history-ends = gelditua erregistratutako historia amaitzean
event-history-preempted = kanporatua (erregistratutako historia)
event-history-requeued = ilarara itzulia kanporatu ondoren (erregistratutako historia)

## Exekuzio baten egiaztapenak (inprimakia eta APIa)

err-run-gpus = GPU kopuruak 1etik 100.000rako zenbaki oso bat izan behar du
err-run-time-limit = denbora-mugak zero baino handiagoa izan behar du, eta gehienez 30 egun ({ $max } segundo)
err-run-time-limit-partition = { $cluster } klusterrak Slurm partizio batean exekutatzen ditu lanak, eta haren denbora-muga (MaxTime) { $max } segundokoa da: eskatu gehienez hori
err-run-min-runtime = gutxieneko exekuzio-denborak 0tik gunearen gehienezkora bitartekoa izan behar du: { $hours } h ({ $seconds } s)
err-run-min-over-limit = gutxieneko exekuzio-denbora ezin da denbora-muga baino luzeagoa izan
err-run-priority = lehentasunak −1.000tik 1.000ra bitartekoa izan behar du
err-run-command = aginduak 1etik 8.192ra bitarteko testu-karaktere izan behar ditu
err-run-workdir = lan-direktorioak bide-izen absolutua izan behar du
err-run-env-twice = { $name } bi aldiz eman da, ingurunean eta sekretu gisa
err-run-env-many = gehienez 64 ingurune-aldagai
err-run-env-name = { $name } ez da ingurune-aldagai baten izena (letrak, digituak, _)
err-run-env-reserved = { $name } Tranchek ezartzen du eta ezin da eman
err-run-env-value = { $name } aldagaiaren balioa luzeegia da edo ez da testua

## Proiektuaren aurrekontu-inprimakia eta kideak

budget-err-too-large = zenbateko bat gehienez 10.000.000.000.000,00 da
budget-err-negative = aldiko aurrekontua ezin da negatiboa izan
budget-err-cap-negative = gastu-muga ezin da negatiboa izan
budget-err-self-service = autozerbitzu-mugak 0 eta 100.000 GPU-ordu artekoa izan behar du
budget-err-forbidden = administratzaile batek edo proiektu honen gaineko arduradun batek bakarrik alda dezake bere aurrekontua
budget-err-threshold-twice = % { $pct } alerta-atalasea bi aldiz eman da; eman ehuneko bakoitza behin
budget-err-thresholds = alerta-atalaseak gehienez 10 ehuneko dira, 1etik 100era
budget-err-thresholds-decimal = alerta-atalaseak ehuneko osoak dira, koma eta zuriune batez edo zuriunez bereiziak, adib. 50, 75, 90 ({ $got } idatzi da)
budget-err-over-entitlement = { $node } nodoaren azpiko proiektuen aurrekontuek { $sum } batuko lukete, bere { $entitlement } zuzkidura baino gehiago; jaitsi hau edo beste proiektu baten aurrekontua
project-err-no-user = ez dago { $name } izeneko erabiltzailerik
project-err-user-disabled = { $name } desgaituta dago: gaitu kontua proiektu bati gehitu aurretik
project-waits-approval = arduradun baten onespenaren zain
project-run-since = { $at }(e)tik; { $protection }
project-err-user-empty = idatzi gehitu edo kendu nahi duzun erabiltzailearen izena

## Ukoak eta aurkitu ez diren erregistroak (orriak; APIak ingelesezko testuarekin erantzuten du)

err-no-project-id = ez dago { $id } id-a duen proiekturik
err-no-live-project-id = ez dago { $id } id-a duen proiektu artxibatu gaberik
err-no-run = { $id } exekuzioa ez dago
err-settings-admins = administratzaileek bakarrik alda ditzakete erakundearen ezarpenak
err-members-forbidden = administratzaile batek edo proiektu honen arduradun batek bakarrik alda ditzake bere kideak
err-not-member = ez zara { $project } proiektuko kidea
err-cancel-forbidden = exekuzioa bidali zuenak edo bere proiektuaren arduradun batek bakarrik utz dezake bertan behera
err-run-ended = { $id } exekuzioa amaitu da jada ({ $state })
err-reports-node-forbidden = gastu-txostenak finantzentzat, administratzaileentzat eta nodoaren arduradunentzat dira
err-period-format = { $got } ez da aldi bat; erabili UUUU-HH, adibidez 2026-11
err-period-range = txostenek azken 24 hilabeteak eta hurrengo 2ak hartzen dituzte; { $got } kanpoan dago
err-runs-scope = esparrua mine, projects edo all da
err-runs-state = { $got } egoera ezezaguna da; hauetako bat: active, { $states }
err-runs-before = before exekuzio baten id-a da, 1etik aurrerako zenbaki osoa, hura baino zaharragoak diren exekuzioak ikusteko; { $got } adierazi duzu
err-query-unreadable = ezin izan da kontsulta-katea irakurri: { $why }
err-form-unreadable = ezin izan da inprimakia irakurri: { $why }
err-not-a-form = inprimaki bat espero zen (Content-Type: application/x-www-form-urlencoded)
err-not-utf8 = { $field }: ez da baliozko UTF-8 testua; bidali testua soilik
err-too-large = eskaeraren gorputza handiegia da (gehienez 2 MiB)
err-oidc-off = OpenID Connect bidezko saio-hasiera ez dago konfiguratuta hemen
err-lang-choose = aukeratu en, es edo eu
err-lang-choose-auto = aukeratu en, es, eu edo auto
err-db-no-record = erregistro hori ez dago
err-db-taken = izen hori hartuta dago jada ({ $constraint })
err-db-sibling-shares = anaia-nodoen kuotek % 100 baino gehiago batuko lukete
err-db-out-of-range = balio bat tartetik kanpo dago ({ $constraint })
err-db-missing-reference = aipatutako erregistro bat ez dago ({ $constraint })
account-err-email = { $email } ez da helbide elektroniko bat
account-err-current-password = egungo pasahitza ez da zuzena
account-err-password-short = pasahitz batek gutxienez 10 karaktere behar ditu (honek { $count } ditu)
account-err-password-repetitive = pasahitz batek gutxienez { $count } karaktere desberdin behar ditu: errepikatuak errazak dira asmatzen
account-err-password-long = pasahitz batek gehienez 200 karaktere ditu
account-err-passwords-differ = bi pasahitz berriak ez datoz bat
account-err-no-token = ez duzu { $id } id-a duen token aktiborik
account-flash-token-revoked = Tokena baliogabetu da.
account-flash-password-changed = Pasahitza aldatu da; zure beste saioak amaitu dira.
account-flash-email-saved = Helbide elektronikoa gorde da.
project-err-already-member = { $name } kidea da jada
project-err-not-member = { $name } ez da kidea
project-member-added = { $name } proiektura gehitu da.
project-member-removed = { $name } proiektutik kendu da.
