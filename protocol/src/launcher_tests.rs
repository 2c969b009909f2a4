use super::*;

fn values<'a>(hosts: &'a [&'a str], job_id: Option<&'a str>) -> LaunchValues<'a> {
    LaunchValues {
        hosts,
        nodefile: "/scratch/runs/1.0/hetpilot-nodefile",
        procs: 4,
        job_id,
    }
}

#[test]
fn the_defaults_fill_in_every_placeholder_as_one_word_each() {
    let slurm = LaunchTemplate::slurm()
        .render(&values(&["n2", "n3"], Some("953")))
        .unwrap();
    assert_eq!(
        slurm.join(" "),
        "srun --overlap --jobid=953 --nodes=2 --nodelist=n2,n3 --ntasks=4 \
         --cpus-per-task=1 --distribution=block"
    );
    let mpiexec = LaunchTemplate::mpiexec()
        .render(&values(&["n2", "n3"], None))
        .unwrap();
    assert_eq!(
        mpiexec,
        [
            "mpiexec",
            "-hostfile",
            "/scratch/runs/1.0/hetpilot-nodefile",
            "-n",
            "4"
        ]
    );
    let mca = LaunchTemplate::parse("mpirun --mca ras ^slurm -np {procs}")
        .unwrap()
        .render(&values(&["n2"], None))
        .unwrap();
    assert_eq!(mca, ["mpirun", "--mca", "ras", "^slurm", "-np", "4"]);
    let several = LaunchTemplate::parse("run --at={hosts}:{procs}x{nodes}")
        .unwrap()
        .render(&values(&["a.example", "b"], None))
        .unwrap();
    assert_eq!(several, ["run", "--at=a.example,b:4x2"]);
}

#[test]
fn a_template_with_an_unknown_placeholder_or_shell_text_is_refused_when_read() {
    for (text, problem) in [
        ("", "names no command"),
        ("   ", "names no command"),
        ("srun --nodelist={host}", "\"{host}\" is not a placeholder"),
        ("srun --nodelist={hosts", "\"{hosts\" is not a placeholder"),
        ("srun }", "\"}\" is not a placeholder"),
        ("srun {{hosts}}", "\"{{hosts}\" is not a placeholder"),
        ("srun $(id)", "\"$(id)\" has characters"),
        (
            "mpiexec -n {procs};reboot",
            "\"{procs};reboot\" has characters",
        ),
        ("mpiexec *", "\"*\" has characters"),
        ("mpiexec -f '{nodefile}'", "\"'{nodefile}'\" has characters"),
        ("{hosts} -n 2", "\"{hosts}\" has characters"),
    ] {
        let err = match LaunchTemplate::parse(text) {
            Err(e) => e.to_string(),
            Ok(t) => panic!("{text:?} was accepted as {:?}", t.words()),
        };
        assert!(err.contains(problem), "{text:?}: {err}");
    }
    let long = format!("srun{}", " -v".repeat(70));
    assert_eq!(LaunchTemplate::parse(&long), Err(LaunchError::TooLong));
}

#[test]
fn hostile_host_names_job_ids_and_paths_are_refused_not_rendered() {
    let t = LaunchTemplate::slurm();
    for (hosts, job, what) in [
        (&["n2", "n3 n4"][..], Some("1"), "the host name \"n3 n4\""),
        (&["n2", "*"][..], Some("1"), "the host name \"*\""),
        (
            &["--export=ALL"][..],
            Some("1"),
            "the host name \"--export=ALL\"",
        ),
        (&["n2;id"][..], Some("1"), "the host name \"n2;id\""),
        (&[""][..], Some("1"), "the host name \"\""),
        (
            &["n2"][..],
            Some("12[3].pbs"),
            "the batch job id \"12[3].pbs\"",
        ),
        (
            &["n2"][..],
            Some("1 --uid=0"),
            "the batch job id \"1 --uid=0\"",
        ),
        (&["n2"][..], Some("$(id)"), "the batch job id \"$(id)\""),
        (&["n2^x"][..], Some("1"), "the host name \"n2^x\""),
        (&["n2"][..], Some("1:2"), "the batch job id \"1:2\""),
    ] {
        let err = t.render(&values(hosts, job)).unwrap_err().to_string();
        assert!(err.contains(what), "{hosts:?} {job:?}: {err}");
    }
    assert_eq!(
        t.render(&values(&["n2"], None)),
        Err(LaunchError::NoJobId),
        "Slurm's launcher needs the allocation"
    );
    let spaced = LaunchValues {
        nodefile: "/home/a b/hetpilot-nodefile",
        ..values(&["n2"], Some("1"))
    };
    let err = t.render(&spaced).unwrap_err().to_string();
    assert!(err.contains("the host file's path"), "{err}");
    // A template that came over the network is checked again before it is filled in.
    let sent: LaunchTemplate = serde_json::from_str(r#"["sh", "-c", "id"]"#).unwrap();
    assert!(sent.render(&values(&["n2"], None)).is_ok());
    let sent: LaunchTemplate = serde_json::from_str(r#"["sh -c id"]"#).unwrap();
    assert_eq!(
        sent.render(&values(&["n2"], None)),
        Err(LaunchError::UnsafeText("sh -c id".into()))
    );
}
