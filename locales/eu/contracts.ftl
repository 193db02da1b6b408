# Edukiera-kontratuak, exekuzio babestuen onarpenak eta liburu nagusiaren mezuak euskaraz.
# Terminoak: docs/glossary.md.

## The contract list

contract-list-title = Kontratuak
contract-list-heading = Edukiera-kontratuak
contract-calendar = Edukiera-egutegia
contract-buy-link = Erosi kontratu bat
contract-none = Oraindik ez dago kontraturik.
contract-th-window = Tartea ({ $zone })
contract-th-price = Prezioa
contract-state-active = aktiboa
contract-state-scheduled = programatua
contract-state-ended = amaitua
contract-state-cancelled = bertan behera utzia
contract-state-refunded = bertan behera utzia, { $refund } itzulita
contract-cancel = utzi bertan behera ({ $refund } itzuliko dira)
contract-window = { $start } → { $end } ({ $hours } h)
contract-cancelled = { $id }. kontratua bertan behera utzi da; { $refund } itzuli dira.

## Buying a contract

contract-form-title = Erosi edukiera-kontratu bat
contract-form-intro = Erreserbatu GPUak tarte baterako: tartearen barruan, zure proiektuak GPU horietan dituen exekuzioak babestuta daude; erabiltzen ez diren GPU erreserbatuak kanpora daitekeen lanari bakarrik uzten zaizkio, eta berehala berreskuratzen dira. Aldez aurretik ordaintzen da, proiektuaren aurrekontutik. Orduak { $zone } ordu-eremuko erloju-orduak dira (edo RFC 3339, desplazamenduarekin).
contract-preview = Prezioaren aurrebista
contract-project = Proiektua
contract-gpus = GPUak
contract-window-label = Tartea
contract-window-utc = UTC { $start } → { $end }
contract-gpu-hours = GPU-orduak
contract-price = Prezioa
contract-price-formula = = { $gpus } GPU × { $length } × { $weight } pisua × { $unit }
contract-unit-price = { $price } GPU-ordu haztatu bakoitzeko
contract-budget = Aurrekontua
contract-budget-now-after = { $now } orain, { $after } ondoren
contract-capacity = Edukiera
contract-capacity-value = { $contractable } GPU kontratagarrietatik { $peak } kontratatuta daude jada une okupatuenean
contract-confirm = Berretsi erosketa
contract-start-over = Hasi berriro
contract-cluster = Klusterra
contract-gpu-model = GPU modeloa
contract-start = Hasiera
contract-end = Amaiera
contract-preview-button = Ikusi prezioa
contract-only-leads = arduradunek eta administratzaileek bakarrik erosten dituzte edukiera-kontratuak
contract-err-start = hasiera: { $problem }
contract-err-end = amaiera: { $problem }
contract-expired = aurrebista hau erabilita dago edo iraungi da; ikusi berriro prezioa berretsi aurretik
contract-bought = { $id }. kontratua erosi da, { $price }.

## Dates and times typed in a form

contract-when-empty = idatzi data eta ordu bat, adibidez 2026-12-01 09:00
contract-when-not-a-time = { $got } ez da data eta ordu bat; erabili 2026-12-01 09:00 (tokiko ordua) edo RFC 3339, desplazamenduarekin
contract-when-skipped = { $time } ez dago { $zone } ordu-eremuan: erlojuek ordu hori saltatzen dute; aukeratu lehenagoko edo geroagoko ordu bat
contract-when-out-of-range = { $got }: data onartutako tartetik kanpo dago; idatzi 1. urtetik 9998. urtera arteko data bat

## The ledger's checks of a purchase and a cancellation

contract-err-no-project = ez dago { $name } izeneko proiekturik
contract-err-not-lead = administratzaile batek edo { $project } proiektuaren arduradun batek bakarrik eros ditzake harentzako kontratuak
contract-err-no-cluster = ez dago { $name } izeneko klusterrik
contract-err-no-model = ez dago { $name } izeneko GPU modelorik
contract-err-no-gpus = { $cluster } klusterrak ez du { $model } GPUrik
contract-err-gpus-not-counted = { $cluster } klusterreko { $declared } { $model } GPUetako bat ere ez da kontuan hartzen orain (haien nodoak galduta daude: haiek zerbitzatzen zituen agentea gelditu zen): ezin da ahalmenik kontratatu itzuli arte
contract-err-gpu-count = GPU kopuruak 1 eta { $installed } artekoa izan behar du ({ $cluster } klusterrean instalatutako { $model } GPUak); { $got } idatzi da
contract-err-past = tartea iraganean hasten da ({ $start }); orain ondoren hasi behar da
contract-err-order = tartea hasi ondoren amaitu behar da (hasiera: { $start }; amaiera: { $end })
contract-err-minute = kontratu batek gutxienez minutu bat irauten du
contract-err-horizon = kontratuak 8 aste aurrera arte eros daitezke, muga: { $until }
contract-err-capacity = ez dago edukiera kontratagarri nahikorik: { $cluster } klusterreko { $installed } { $model } GPUetatik { $contractable } kontrata daitezke (% { $percent }), { $peak } kontratatuta daude jada ({ $at }), beraz { $left } gehiago baino ezin dira kontratatu; { $gpus } eskatu dira
contract-err-budget = ez dago aurrekontu nahikorik: kontratuak { $hours } { $model } GPU-ordu behar ditu ({ $price }), eta { $project } proiektuari { $left } GPU-ordu geratzen zaizkio aurrekontuan ({ $month }; { $balance })
contract-err-price-changed = prezioa aldatu egin da aurrebistaz geroztik: { $then } orduan, { $now } orain; ikusi berriro prezioa
contract-err-not-found = ez dago { $id } IDa duen kontraturik
contract-err-not-lead-cancel = administratzaile batek edo proiektuaren arduradun batek bakarrik utz ditzake bertan behera haren kontratuak
contract-err-already-cancelled = kontratu hau bertan behera utzita dago jada
contract-err-started = kontratu hau hasita dago; hasitako kontratu bat ezin da bertan behera utzi

## Approvals

approvals-intro = Proiektuaren autozerbitzu-muga (GPUak × gutxieneko exekuzio-denbora) gainditzen duten exekuzio babestuak hemen daude, proiektuaren edo goragoko nodo baten arduradun baten zain. Ukatzeko arrazoi bat behar da: ikertzaileak exekuzioaren orrian ikusiko du.
approvals-none = Ez dago zure onespenaren zain dagoen exekuziorik.
approvals-not-lead = Ez zara programa-zuhaitzeko inongo atalen arduraduna; beraz, ez dago zure zain dagoen exekuziorik.
approvals-run = { $id }. exekuzioa
approvals-run-what = : { $gpus } × { $model }, { $cluster } klusterrean, { $project } proiekturako
run-what-on = { $gpus } × { $model }, { $cluster } klusterrean
run-what = { $gpus } × { $model }, { $cluster } klusterrean, { $project } proiekturako
approvals-protected = Babestua
approvals-protected-hours = { $hours } GPU-ordu
approvals-deny-reason = Arrazoia (derrigorrezkoa)
approvals-error-on-run = { $id }. exekuzioa: { $problem }
approvals-approved = { $id }. exekuzioa onetsi da.
approvals-denied = { $id }. exekuzioa ukatu da.
approvals-err-reason = esan zergatik ukatzen den exekuzioa; ikertzaileak ikusiko du
approvals-err-reason-long = arrazoiak gehienez 2000 karaktere izan behar ditu
approvals-err-not-lead = exekuzioaren proiektuaren (edo goragoko nodo baten) arduradun batek bakarrik onets edo uka dezake
approvals-err-not-waiting = { $id }. exekuzioa ez dago onespenaren zain (egoera: { $state })
approvals-err-budget = proiektuari { $balance } geratzen zaizkio aldi honetan, baina exekuzioaren gutxieneko exekuzio-denborak { $cost } balio du
