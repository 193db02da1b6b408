//! Test support: a real Slurm 22.05 cluster on this host (Debian's `slurmctld`, `slurmd`,
//! `slurm-client` and `munge`, installed by `scripts/test` when missing): two nodes `n1` and
//! `n2` with 8 GPUs each (character devices made with `mknod c 1 3`, as `gres.conf` needs),
//! partition `gpu` (and a partition `cpu` of one node `n3` without GPUs and without a
//! `slurmd`, for bad input), its own configuration, state, spool and log directories under a temporary
//! directory and its own ports. Started once per test process; a watchdog shell stops it (jobs
//! cancelled, daemons stopped, then every process still carrying this cluster's `SLURM_CONF`
//! killed: job steps left behind, daemons that did not stop; directory removed) when the test
//! process exits, however it exits.
//!
//! Slurm tests share the cluster one at a time ([`SlurmCluster::lease`]): each starts from an
//! empty queue, nodes resumed and no reservation.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The shared cluster.
pub struct SlurmCluster {
    /// Its directory (configuration, state, spool, logs, GPU devices).
    pub dir: PathBuf,
    /// Its `slurm.conf`.
    pub conf: PathBuf,
    /// Its partition.
    pub partition: &'static str,
    /// The watchdog shell and any slurmctld restarted by a test (reaped when the process ends).
    children: std::sync::Mutex<Vec<std::process::Child>>,
}

/// Held while a test uses the cluster.
pub struct Lease {
    _guard: tokio::sync::MutexGuard<'static, ()>,
}

static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn ok(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Starts munged (as the `munge` user, with `/run/munge` made) unless a credential can be made.
fn ensure_munge() {
    let works = || {
        let Ok(out) = Command::new("munge")
            .arg("-n")
            .stderr(Stdio::null())
            .output()
        else {
            return false;
        };
        out.status.success()
            && Command::new("unmunge")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .and_then(|mut c| {
                    use std::io::Write;
                    c.stdin.take().unwrap().write_all(&out.stdout)?;
                    c.wait()
                })
                .is_ok_and(|s| s.success())
    };
    if works() {
        return;
    }
    for dir in [
        "/run/munge",
        "/var/log/munge",
        "/var/lib/munge",
        "/etc/munge",
    ] {
        std::fs::create_dir_all(dir).unwrap();
        assert!(
            ok(Command::new("chown").args(["munge:munge", dir])),
            "chown {dir}"
        );
    }
    assert!(
        ok(Command::new("runuser").args(["-u", "munge", "--", "/usr/sbin/munged"])),
        "cannot start munged as the munge user"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while !works() {
        assert!(Instant::now() < deadline, "munged does not answer");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn host() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl SlurmCluster {
    /// The cluster, started on first use.
    pub fn get() -> &'static SlurmCluster {
        static CLUSTER: OnceLock<SlurmCluster> = OnceLock::new();
        CLUSTER.get_or_init(Self::start)
    }

    /// Waits for this test's turn, then resets the cluster: no job, nodes resumed, no
    /// reservation.
    pub async fn lease() -> (Lease, &'static SlurmCluster) {
        let guard = TURN.lock().await;
        let cluster = tokio::task::spawn_blocking(|| {
            let c = Self::get();
            c.reset();
            c
        })
        .await
        .unwrap();
        (Lease { _guard: guard }, cluster)
    }

    fn start() -> SlurmCluster {
        for tool in [
            "/usr/sbin/slurmctld",
            "/usr/sbin/slurmd",
            "/usr/bin/sbatch",
            "/usr/sbin/munged",
        ] {
            assert!(
                Path::new(tool).exists(),
                "Slurm tests need {tool}: install Debian's slurmctld slurmd slurm-client munge (scripts/test does)"
            );
        }
        assert!(
            nix::unistd::geteuid().is_root(),
            "Slurm tests run slurmctld and slurmd, which need root"
        );
        ensure_munge();
        let dir = std::env::temp_dir().join(format!("tranche-slurm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["state", "spool/n1", "spool/n2", "log", "dev"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        for i in 0..8 {
            let dev = dir.join(format!("dev/gpu{i}"));
            assert!(
                ok(Command::new("mknod").arg(&dev).args(["c", "1", "3"])),
                "mknod {}",
                dev.display()
            );
        }
        let (ctl, p1, p2, p3) = (free_port(), free_port(), free_port(), free_port());
        let host = host();
        let d = dir.display();
        let conf = format!(
            "ClusterName=tranche{pid}\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             SlurmctldPort={ctl}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             MpiDefault=none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             GresTypes=gpu\n\
             AccountingStorageType=accounting_storage/none\n\
             JobCompType=jobcomp/none\n\
             MailProg=/bin/true\n\
             SlurmdParameters=config_overrides\n\
             StateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool/%n\n\
             SlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd-%n.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\n\
             SlurmdLogFile={d}/log/slurmd-%n.log\n\
             ReturnToService=2\n\
             MinJobAge=300\n\
             KillWait=2\n\
             SchedulerType=sched/backfill\n\
             EnforcePartLimits=ALL\n\
             SchedulerParameters=sched_interval=1\n\
             SlurmctldTimeout=10\n\
             SlurmdTimeout=30\n\
             NodeName=n1 NodeHostname={host} NodeAddr=127.0.0.1 Port={p1} CPUs=16 RealMemory=4000 Gres=gpu:8 State=UNKNOWN\n\
             NodeName=n2 NodeHostname={host} NodeAddr=127.0.0.1 Port={p2} CPUs=16 RealMemory=4000 Gres=gpu:8 State=UNKNOWN\n\
             NodeName=n3 NodeHostname={host} NodeAddr=127.0.0.1 Port={p3} CPUs=2 RealMemory=1000 State=UNKNOWN\n\
             PartitionName=gpu Nodes=n1,n2 Default=YES MaxTime=60 State=UP\n\
             PartitionName=cpu Nodes=n3 MaxTime=60 State=UP\n",
            pid = std::process::id()
        );
        let conf_path = dir.join("slurm.conf");
        std::fs::write(&conf_path, conf).unwrap();
        std::fs::write(
            dir.join("gres.conf"),
            format!("NodeName=n[1-2] Name=gpu File={d}/dev/gpu[0-7]\n"),
        )
        .unwrap();
        // The daemons run in the foreground under a watchdog shell that stops them once the
        // test process is gone.
        let script = format!(
            "export SLURM_CONF={d}/slurm.conf\n\
             slurmctld -D -c -f $SLURM_CONF >> {d}/log/slurmctld.out 2>&1 &\n\
             CTL=$!\n\
             slurmd -D -N n1 -f $SLURM_CONF >> {d}/log/slurmd-n1.out 2>&1 &\n\
             N1=$!\n\
             slurmd -D -N n2 -f $SLURM_CONF >> {d}/log/slurmd-n2.out 2>&1 &\n\
             N2=$!\n\
             echo $CTL > {d}/ctl.pid\n\
             while kill -0 $1 2>/dev/null; do sleep 1; done\n\
             timeout 10 scancel --full --partition=gpu --signal=KILL >/dev/null 2>&1\n\
             timeout 10 scancel --partition=gpu >/dev/null 2>&1\n\
             CTL=$(cat {d}/ctl.pid)\n\
             kill $CTL $N1 $N2 2>/dev/null\n\
             i=0\n\
             while [ $i -lt 50 ] && {{ kill -0 $CTL || kill -0 $N1 || kill -0 $N2; }} 2>/dev/null; do sleep 0.2; i=$((i+1)); done\n\
             for p in /proc/[0-9]*; do\n\
               pid=${{p#/proc/}}\n\
               [ \"$pid\" = $$ ] && continue\n\
               if tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -qx \"SLURM_CONF={d}/slurm.conf\"; then kill -9 $pid 2>/dev/null; fi\n\
             done\n\
             rm -rf {d}\n"
        );
        std::fs::write(dir.join("run.sh"), script).unwrap();
        let watchdog = {
            use std::os::unix::process::CommandExt;
            Command::new("sh")
                .arg(dir.join("run.sh"))
                .arg(std::process::id().to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .expect("start the Slurm watchdog")
        };
        let cluster = SlurmCluster {
            dir,
            conf: conf_path,
            partition: "gpu",
            children: std::sync::Mutex::new(vec![watchdog]),
        };
        cluster.wait_ready(Duration::from_secs(60));
        cluster
    }

    /// A Slurm command with this cluster's `SLURM_CONF`.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// Runs a Slurm command; returns its standard output (panics when it fails).
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self.command(program).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Whether a Slurm command succeeds.
    pub fn succeeds(&self, program: &str, args: &[&str]) -> bool {
        ok(self.command(program).args(args))
    }

    /// The controller answers and both nodes are idle with 8 GPUs, by `limit`.
    pub fn wait_ready(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let ping = self
                .command("scontrol")
                .arg("ping")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("is UP"))
                .unwrap_or(false);
            let nodes = self
                .command("sinfo")
                .args(["-N", "-h", "-o", "%N %T %G"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            let ready = nodes.lines().filter(|l| l.ends_with(" idle gpu:8")).count() == 2;
            if ping && ready {
                return;
            }
            if nodes.contains("drain") || nodes.contains("inval") {
                let _ = self
                    .command("scontrol")
                    .args(["update", "nodename=n1,n2", "state=resume"])
                    .status();
            }
            assert!(
                Instant::now() < deadline,
                "the test Slurm cluster is not ready (nodes: {nodes:?}); see {}/log",
                self.dir.display()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn reset(&self) {
        let _ = self
            .command("scancel")
            .args(["--full", "--signal=KILL", "--partition", self.partition])
            .status();
        let _ = self
            .command("scancel")
            .args(["--partition", self.partition])
            .status();
        let reservations = self
            .command("scontrol")
            .args(["show", "reservation", "-o"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for line in reservations.lines() {
            if let Some(name) = line
                .strip_prefix("ReservationName=")
                .and_then(|r| r.split_whitespace().next())
            {
                let _ = self
                    .command("scontrol")
                    .args(["delete", &format!("reservation={name}")])
                    .status();
            }
        }
        let _ = self
            .command("scontrol")
            .args(["update", "nodename=n1,n2", "state=resume"])
            .output();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let active = self
                .command("squeue")
                .args(["-h", "-o", "%i"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_else(|_| "?".into());
            if active.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "Slurm jobs do not end: {active}");
            std::thread::sleep(Duration::from_millis(200));
        }
        self.wait_ready(Duration::from_secs(60));
    }

    /// Stops slurmctld (SIGTERM: it saves its state and exits, as in a restart or an
    /// upgrade) and waits until it is gone. (A SIGKILL can lose the jobs submitted in the last
    /// seconds: Slurm saves job state in the background; see docs/slurm.md.)
    pub fn stop_controller(&self) {
        let pid = std::fs::read_to_string(self.dir.join("ctl.pid")).unwrap();
        let pid = pid.trim().to_string();
        assert!(ok(Command::new("kill").arg(&pid)));
        let deadline = Instant::now() + Duration::from_secs(30);
        while Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ")
        {
            assert!(Instant::now() < deadline, "slurmctld does not stop");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts slurmctld again, keeping its state (jobs, reservations).
    pub fn restart_controller(&self) {
        use std::os::unix::process::CommandExt;
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("log/slurmctld.out"))
            .unwrap();
        let child = self
            .command("slurmctld")
            .arg("-D")
            .arg("-f")
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("restart slurmctld");
        std::fs::write(self.dir.join("ctl.pid"), child.id().to_string()).unwrap();
        self.children.lock().unwrap().push(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.succeeds("scontrol", &["ping"])
            || !String::from_utf8_lossy(
                &self
                    .command("scontrol")
                    .arg("ping")
                    .output()
                    .unwrap()
                    .stdout,
            )
            .contains("is UP")
        {
            assert!(Instant::now() < deadline, "slurmctld does not come back");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
