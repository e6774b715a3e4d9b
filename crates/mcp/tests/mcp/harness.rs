//! A minimal test runner: this test binary is also the stdio MCP server the tests
//! start (see `server.rs`), which libtest's harness would not allow (it writes to
//! stdout before any test runs). Runs each test on a fresh runtime, in order, and ends
//! with libtest's summary line.

use std::future::Future;
use std::pin::Pin;

pub type TestFn = fn() -> Pin<Box<dyn Future<Output = ()>>>;

pub fn run(tests: &[(&str, TestFn)]) -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return std::process::ExitCode::SUCCESS;
    }
    // libtest's flags that take a value; their values are not name filters.
    const WITH_VALUE: &[&str] = &["--test-threads", "--format", "--color", "--logfile", "-Z"];
    let (mut filters, mut skips) = (Vec::new(), Vec::new());
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--skip" => skips.extend(rest.next()),
            flag if WITH_VALUE.contains(&flag) => {
                rest.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter),
        }
    }
    let exact = args.iter().any(|a| a == "--exact");
    let matches = |name: &str, pattern: &str| {
        if exact {
            name == pattern
        } else {
            name.contains(pattern)
        }
    };
    let chosen: Vec<_> = tests
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| matches(name, f)))
        .filter(|(name, _)| !skips.iter().any(|s| matches(name, s)))
        .collect();
    println!("\nrunning {} tests", chosen.len());
    let mut failed = Vec::new();
    for (name, test) in &chosen {
        let outcome = std::panic::catch_unwind(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
                .block_on(test())
        });
        let verdict = if outcome.is_ok() { "ok" } else { "FAILED" };
        println!("test {name} ... {verdict}");
        if outcome.is_err() {
            failed.push(*name);
        }
    }
    let passed = chosen.len() - failed.len();
    if !failed.is_empty() {
        println!("\nfailures:");
        for name in &failed {
            println!("    {name}");
        }
    }
    let result = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {result}. {passed} passed; {} failed; 0 ignored; 0 measured; {} filtered out\n",
        failed.len(),
        tests.len() - chosen.len()
    );
    if failed.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
