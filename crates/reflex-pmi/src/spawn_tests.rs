//! `mcmd=spawn` blocks: MPICH's exact bytes, round trips, and hostile input.

use super::*;
use proptest::prelude::*;

fn cmd(command: &str, args: &[&str], maxprocs: u32, info: &[(&str, &str)]) -> SpawnCommand {
    SpawnCommand {
        command: command.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        maxprocs,
        info: pairs(info),
    }
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Feeds whole blocks line by line; returns the request once complete.
fn assemble(blocks: &[String]) -> Result<Option<SpawnRequest>, SpawnError> {
    let mut assembler = SpawnAssembler::new();
    let mut last = None;
    for block in blocks {
        for line in block.split_inclusive('\n') {
            last = assembler.push_line(line.as_bytes())?;
        }
    }
    Ok(last)
}

#[test]
fn blocks_have_mpichs_exact_bytes() {
    let preput = pairs(&[("PARENT_ROOT_PORT_NAME", "tag#0$port#5$")]);
    let commands = [
        cmd("./child", &["-v", "two words"], 2, &[("wdir", "/tmp")]),
        cmd("other", &[], 1, &[]),
    ];
    let blocks = format_request(&commands, &preput).unwrap();
    assert_eq!(
        blocks[0],
        "mcmd=spawn\nnprocs=2\nexecname=./child\ntotspawns=2\nspawnssofar=1\narg1=-v\n\
         arg2=two words\nargcnt=2\npreput_num=1\npreput_key_0=PARENT_ROOT_PORT_NAME\n\
         preput_val_0=tag#0$port#5$\ninfo_num=1\ninfo_key_0=wdir\ninfo_val_0=/tmp\nendcmd\n"
    );
    assert_eq!(
        blocks[1],
        "mcmd=spawn\nnprocs=1\nexecname=other\ntotspawns=2\nspawnssofar=2\nargcnt=0\n\
         preput_num=1\npreput_key_0=PARENT_ROOT_PORT_NAME\npreput_val_0=tag#0$port#5$\n\
         info_num=0\nendcmd\n"
    );
    let request = assemble(&blocks).unwrap().unwrap();
    assert_eq!(request.commands, commands);
    assert_eq!(request.preput, preput);
    assert_eq!(request.total_procs(), 3);
}

#[test]
fn client_refuses_what_the_server_would_mangle() {
    let ok = cmd("a", &[], 1, &[]);
    let refuse = |commands: &[SpawnCommand], preput: &[(String, String)]| {
        format_request(commands, preput).unwrap_err().to_string()
    };
    assert!(refuse(&[], &[]).contains("1 to 1024 commands"));
    assert!(refuse(&[cmd("a", &[], 0, &[])], &[]).contains("at least one process"));
    assert!(refuse(&[cmd("", &[], 1, &[])], &[]).contains("command 0 is empty"));
    assert!(refuse(&[cmd("a", &["x\ny"], 1, &[])], &[]).contains("arg1 contains the byte 0x0a"));
    assert!(refuse(&[cmd("a", &[], 1, &[("k", "v\0")])], &[]).contains("0x00"));
    assert!(refuse(std::slice::from_ref(&ok), &pairs(&[("a=b", "v")])).contains("forbidden byte"));
    assert!(
        refuse(std::slice::from_ref(&ok), &pairs(&[("k", "has space")])).contains("forbidden byte")
    );
    let long = "x".repeat(MAX_LINE);
    assert!(refuse(&[cmd("a", &[&long], 1, &[])], &[]).contains("at most 1024 fit"));
    let many: Vec<&str> = vec!["y"; MAX_BLOCK_BYTES / 8];
    assert!(refuse(&[cmd("a", &many, 1, &[])], &[]).contains("bytes; at most 65536 fit"));
    assert!(refuse(&vec![ok; MAX_COMMANDS + 1], &[]).contains("not 1025"));
}

#[test]
fn assembler_rejects_malformed_blocks_precisely() {
    let good = format_request(&[cmd("a", &["b"], 1, &[])], &[]).unwrap()[0].clone();
    let cases: &[(&str, &str, &str)] = &[
        (
            "mcmd=spawn\n",
            "cmd=put key=a\n",
            "expected mcmd=spawn, got \"cmd=put key=a\"",
        ),
        ("mcmd=spawn\n", "", "expected mcmd=spawn"),
        (
            "nprocs=1\n",
            "nprocs=1\nnprocs=2\n",
            "\"nprocs\" appears twice",
        ),
        ("nprocs=1\n", "nprocs=-1\n", "nprocs=\"-1\" is not a count"),
        ("nprocs=1\n", "", "missing nprocs"),
        ("execname=a\n", "execname=\n", "empty execname"),
        ("arg1=b\n", "", "missing arg1"),
        ("argcnt=1\n", "argcnt=99999999999999999999\n", "argcnt="),
        (
            "totspawns=1\n",
            "totspawns=0\n",
            "totspawns=0 is inconsistent",
        ),
        (
            "totspawns=1\n",
            "totspawns=5000\n",
            "not a count up to 1024",
        ),
        (
            "spawnssofar=1\n",
            "spawnssofar=2\n",
            "spawnssofar=2 where 1 was expected",
        ),
        (
            "preput_num=0\n",
            "preput_num=1\npreput_key_0=k\n",
            "missing preput_val_0",
        ),
        (
            "preput_num=0\n",
            "preput_num=1\npreput_key_0=k\npreput_val_0=a b\n",
            "forbidden",
        ),
        ("info_num=0\n", "info_num=1\n", "missing info_key_0"),
        (
            "argcnt=1\n",
            "argcnt=1\nnoequals\n",
            "\"noequals\" is not key=value",
        ),
        ("argcnt=1\n", "argcnt=1\n=v\n", "is not key=value"),
        ("argcnt=1\n", "argcnt=1\nx\r=1\n", "0x0d"),
    ];
    for (from, to, want) in cases {
        assert!(good.contains(from), "{from}");
        let bad = good.replacen(from, to, 1);
        let err = assemble(std::slice::from_ref(&bad))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{bad:?}: {err}");
    }
    let mut assembler = SpawnAssembler::new();
    let err = assembler
        .push_line(b"mcmd=spawn\n")
        .and_then(|_| assembler.push_line(b"\xff=1\n"));
    assert!(err.unwrap_err().to_string().contains("not utf-8"));
}

#[test]
fn assembler_bounds_memory() {
    let mut assembler = SpawnAssembler::new();
    assembler.push_line(b"mcmd=spawn\n").unwrap();
    let line = format!("k{}\n", "=".repeat(1000));
    let mut err = None;
    for i in 0..100 {
        let line = line.replacen('k', &format!("k{i}"), 1);
        if let Err(e) = assembler.push_line(line.as_bytes()) {
            err = Some(e);
            break;
        }
    }
    assert!(err.unwrap().to_string().contains("longer than 65536 bytes"));
    // The whole request is bounded too, even when every block is small.
    let block = format_request(&vec![cmd("a", &[&"z".repeat(1000)], 1, &[]); 1024], &[]).unwrap();
    let err = assemble(&block).map(drop).unwrap_err().to_string();
    assert!(err.contains("1048576 in all"), "{err}");
}

#[test]
fn second_block_must_continue_the_first() {
    let commands = [cmd("a", &[], 1, &[]), cmd("b", &[], 1, &[])];
    let blocks = format_request(&commands, &[]).unwrap();
    assert_eq!(assemble(&blocks[..1]).unwrap(), None);
    let err = assemble(&[blocks[0].clone(), blocks[0].clone()]).unwrap_err();
    assert!(err.to_string().contains("spawnssofar=1 where 2"), "{err}");
    let other_total = blocks[1].replace("totspawns=2", "totspawns=3");
    let err = assemble(&[blocks[0].clone(), other_total]).unwrap_err();
    assert!(
        err.to_string().contains("totspawns=3 is inconsistent"),
        "{err}"
    );
}

#[test]
fn result_lines_round_trip() {
    let ok = SpawnResult::success(3);
    assert_eq!(ok.to_reply_line(), "cmd=spawn_result rc=0 errcodes=0,0,0\n");
    assert!(ok.all_started());
    let failed = SpawnResult::failure("no such file: ./x", vec![42, 42]);
    let line = failed.to_reply_line();
    assert_eq!(
        line,
        "cmd=spawn_result rc=-1 msg=no_such_file:_./x errcodes=42,42\n"
    );
    let parsed = SpawnResult::from_reply(&Message::parse(line.as_bytes()).unwrap(), 2).unwrap();
    assert_eq!(parsed.errcodes, [42, 42]);
    assert!(!parsed.all_started());
    // Hydra's reply has no errcodes: all 0; a failure without them: every process failed.
    let hydra = Message::parse(b"cmd=spawn_result rc=0\n").unwrap();
    assert_eq!(
        SpawnResult::from_reply(&hydra, 2).unwrap(),
        SpawnResult::success(2)
    );
    let bare = Message::parse(b"cmd=spawn_result rc=7\n").unwrap();
    assert_eq!(SpawnResult::from_reply(&bare, 2).unwrap().errcodes, [7, 7]);
    for bad in [
        &b"cmd=spawn_result\n"[..],
        b"cmd=spawn_result rc=0 errcodes=0\n",
    ] {
        let reply = Message::parse(bad).unwrap();
        assert!(SpawnResult::from_reply(&reply, 2).is_err(), "{bad:?}");
    }
    // Too many codes for one line: they are left out and rc says it all.
    let big = SpawnResult::failure("x", vec![42; 1000]);
    assert_eq!(big.to_reply_line(), "cmd=spawn_result rc=-1 msg=x\n");
}

proptest! {
    #[test]
    fn format_then_assemble_round_trips(
        args in proptest::collection::vec("[ -~]{0,20}", 0..5),
        maxprocs in 1u32..100,
        info in proptest::collection::vec(("[!-~]{1,10}", "[ -~]{0,20}"), 0..4),
        preput in proptest::collection::vec(("[!-<>-~]{1,10}", "[!-~]{0,20}"), 0..4),
        copies in 1usize..4,
    ) {
        let command = SpawnCommand { command: "prog".into(), args, maxprocs, info };
        let commands = vec![command; copies];
        let blocks = format_request(&commands, &preput).unwrap();
        let request = assemble(&blocks).unwrap().unwrap();
        prop_assert_eq!(request.commands, commands);
        prop_assert_eq!(request.preput, preput);
    }

    #[test]
    fn arbitrary_lines_never_panic(lines in proptest::collection::vec(
        proptest::collection::vec(any::<u8>(), 0..80), 0..40)) {
        let mut assembler = SpawnAssembler::new();
        let _ = assembler.push_line(b"mcmd=spawn\n");
        for line in &lines {
            if assembler.push_line(line).is_err() {
                break;
            }
        }
    }
}
