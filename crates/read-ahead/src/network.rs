//! Which shell commands need the network: a speculated command runs with none (its
//! namespace has only a loopback device that is down), so one that needs it is a
//! boundary before it runs rather than a failure after. A command missed here still
//! cannot reach the network; it fails, and the failure is the boundary
//! (`sandbox_denied`).

/// Programs that are network clients whatever their arguments.
const CLIENTS: &[&str] = &[
    "curl", "wget", "ssh", "scp", "sftp", "ftp", "telnet", "nc", "ncat", "netcat", "socat",
    "rsync", "ping", "dig", "nslookup", "host", "apt", "apt-get", "brew", "dnf", "yum", "apk",
    "pacman", "snap", "http", "https", "aria2c",
];

/// `program subcommand` pairs that download or upload.
const SUBCOMMANDS: &[(&str, &[&str])] = &[
    (
        "git",
        &[
            "push",
            "pull",
            "fetch",
            "clone",
            "ls-remote",
            "remote",
            "submodule",
        ],
    ),
    ("pip", &["install", "download", "wheel"]),
    ("pip3", &["install", "download", "wheel"]),
    ("uv", &["pip", "add", "sync", "lock", "run", "tool"]),
    ("poetry", &["install", "add", "update", "lock"]),
    (
        "npm",
        &[
            "install", "i", "ci", "add", "update", "publish", "exec", "x",
        ],
    ),
    ("npx", &[]),
    ("pnpm", &["install", "i", "add", "update", "dlx"]),
    ("yarn", &["install", "add", "upgrade", "dlx"]),
    (
        "cargo",
        &["install", "fetch", "update", "publish", "search", "add"],
    ),
    ("go", &["get", "install", "mod"]),
    ("gem", &["install", "update", "fetch"]),
    ("bundle", &["install", "update"]),
    ("docker", &["pull", "push", "run", "build", "login"]),
    ("podman", &["pull", "push", "run", "build", "login"]),
    ("gh", &[]),
];

/// What in `command` needs the network (`curl`, `git fetch`, ...), if anything. Words
/// are split at blanks and shell operators; an assignment before a program is skipped.
pub(crate) fn needs_network(command: &str) -> Option<String> {
    for simple in command.split(['\n', ';', '|', '&', '(', ')', '`']) {
        let mut words = simple
            .split_whitespace()
            .map(|w| w.trim_matches(['"', '\'']))
            .skip_while(|w| w.contains('=') && !w.starts_with('-'));
        let Some(program) = words.next() else {
            continue;
        };
        let program = program.rsplit('/').next().unwrap_or(program);
        let program = match program {
            "sudo" | "env" | "time" | "nice" | "exec" | "command" => match words.next() {
                Some(p) => p.rsplit('/').next().unwrap_or(p),
                None => continue,
            },
            p => p,
        };
        if CLIENTS.contains(&program) {
            return Some(program.to_owned());
        }
        let subcommand = words.find(|w| !w.starts_with('-'));
        for (name, subcommands) in SUBCOMMANDS {
            if program != *name {
                continue;
            }
            if subcommands.is_empty() {
                return Some(program.to_owned());
            }
            if let Some(sub) = subcommand.filter(|s| subcommands.contains(s)) {
                return Some(format!("{program} {sub}"));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downloads_and_uploads_are_named() {
        for (command, what) in [
            ("curl -s https://x", "curl"),
            ("git fetch origin", "git fetch"),
            ("cd sub && git pull", "git pull"),
            ("pip install -r requirements.txt", "pip install"),
            ("FOO=1 npm ci", "npm ci"),
            ("sudo apt-get install x", "apt-get"),
            ("/usr/bin/wget x", "wget"),
            ("cargo install ripgrep", "cargo install"),
        ] {
            assert_eq!(needs_network(command).as_deref(), Some(what), "{command}");
        }
    }

    #[test]
    fn local_work_is_not() {
        for command in [
            "python3 -m pytest -q",
            "cargo test",
            "npm test",
            "git status && git diff",
            "make -j2",
            "go test ./...",
            "echo curl",
        ] {
            assert_eq!(needs_network(command), None, "{command}");
        }
    }
}
