#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Verdicts of the shell safety classifier on a table of commands, many adversarial.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use saki_shell_safety::{classify, Safety};

const R: Safety = Safety::ReadOnly;
const W: Safety = Safety::Write;
const U: Safety = Safety::Unknown;

const CASES: &[(&str, Safety)] = &[
    // Plain read-only commands.
    ("ls", R),
    ("ls -la", R),
    ("ls -la src/ | head -20", R),
    ("cat README.md", R),
    ("head -n 5 Cargo.toml", R),
    ("tail -n 20 log.txt", R),
    ("wc -l src/*.rs", R),
    ("grep -rn 'fn main' src", R),
    ("egrep 'a|b' file", R),
    ("fgrep -x needle file", R),
    ("rg -n TODO", R),
    ("rg --json -t rust 'unsafe'", R),
    ("find . -name '*.rs' -type f", R),
    ("find src -maxdepth 2 -print0", R),
    ("fd -e rs", R),
    ("tree -L 2", R),
    ("pwd", R),
    ("echo hello world", R),
    ("printf '%s\\n' a b", R),
    ("which cargo", R),
    ("type ls", R),
    ("file Cargo.toml", R),
    ("stat -c %s Cargo.toml", R),
    ("du -sh target", R),
    ("df -h", R),
    ("diff -u a.txt b.txt", R),
    ("cmp a b", R),
    ("sort -u names.txt", R),
    ("sort -t, -k2 data.csv", R),
    ("uniq -c counts.txt", R),
    ("cut -d: -f1 /etc/passwd", R),
    ("tr a-z A-Z", R),
    ("nl -ba file", R),
    ("basename /a/b.rs .rs", R),
    ("dirname /a/b.rs", R),
    ("realpath .", R),
    ("readlink -f link", R),
    ("date +%Y-%m-%d", R),
    ("date -Is", R),
    ("whoami", R),
    ("id -u", R),
    ("uname -a", R),
    ("env", R),
    ("printenv PATH", R),
    ("true", R),
    ("false", R),
    ("test -f Cargo.toml", R),
    ("[ -d src ]", R),
    ("jq '.name' package.json", R),
    ("jq -r '.dependencies | keys[]' package.json", R),
    ("sed -n '1,10p' file", R),
    ("sed 's/foo/bar/g' file", R),
    ("sed -e 's/a/b/' -e '/^#/d' file", R),
    ("awk '{print $1}' file", R),
    ("awk -F: '$3 > 1000 {print $1}' /etc/passwd", R),
    ("awk '/err|warn/ {n++} END {print n}' log", R),
    ("awk 'BEGIN { print \"x\" > \"/dev/stderr\" }'", R),
    ("/usr/bin/ls -l", R),
    ("md5sum file", R),
    ("sha256sum -c sums.txt", R),
    ("cd src && ls", R),
    // Pipelines, lists, groups, comments, newlines.
    ("ls 2>&1 | grep x", R),
    ("ls |& grep x", R),
    ("cat a | sort | uniq -c | sort -rn | head", R),
    ("ls && pwd || echo failed", R),
    ("ls; pwd; echo done", R),
    ("(cd src && ls)", R),
    ("{ ls; pwd; }", R),
    ("ls # list files", R),
    ("# just a comment", R),
    ("ls\npwd\n", R),
    ("ls &", R),
    ("! grep -q x file", R),
    ("grep x file > /dev/null 2>&1", R),
    ("ls 2>/dev/null", R),
    ("ls >&2", R),
    ("ls 1>&2 2>&-", R),
    ("wc -l < input.txt", R),
    ("grep x <<< 'some text'", R),
    ("cat <<'EOF'\nliteral $(not run)\nEOF", R),
    ("cat <<EOF\nhello $USER\nEOF", R),
    // Compound statements.
    ("if [ -f x ]; then cat x; else echo none; fi", R),
    ("for f in *.rs; do wc -l \"$f\"; done", R),
    ("for f in a b c; do echo $f; done", R),
    ("while read -r line; do echo \"$line\"; done < file", R),
    ("case $x in a) ls;; *) pwd;; esac", R),
    ("if true; then rm x; fi", W),
    ("for f in *; do rm \"$f\"; done", W),
    ("while true; do touch x; done", W),
    ("case $x in a) ls;; *) rm -rf build;; esac", W),
    ("until false; do sleep 1; done", R),
    ("select x in a b; do echo $x; done", U),
    ("for PATH in /tmp; do ls; done", U),
    ("for ((i=0; i<3; i++)); do echo $i; done", U),
    ("[[ -f x && $y == *.rs ]]", R),
    ("[[ $x =~ ^[0-9]+$ ]] && echo num", R),
    ("[[ 1 -eq 1 ]]", R),
    ("[[ $x -eq 1 ]]", U),
    ("[[ -v a[$i] ]]", U),
    ("[[ -v name ]]", R),
    ("[ \"$a\" = \"$b\" ]", R),
    ("[ -n \"$x\" ]", R),
    ("[ -n $x ]", U),
    ("test -v 'a[$(touch p)]'", U),
    // Variables and assignments.
    ("x=1; echo $x", R),
    ("name=value", R),
    ("a=$(ls)", U),
    ("a=`ls`", U),
    ("PATH=/tmp:$PATH ls", U),
    ("PATH=/tmp; ls", U),
    ("IFS=: read a b", U),
    ("FOO=1 cat file", U),
    ("LC_ALL=C sort file", R),
    ("LANG=C.UTF-8 ls", R),
    ("LC_ALL=$x sort file", U),
    ("TZ=Europe/Paris date", R),
    ("GIT_PAGER=sh git log", U),
    ("LD_PRELOAD=/tmp/x.so ls", U),
    ("export FOO=1", U),
    ("declare -i n=1+1", U),
    ("local x=1", U),
    ("unset PATH", U),
    ("http_proxy=http://evil ls", U),
    ("echo ${x:-default}", R),
    ("echo ${#x} ${x%.rs} ${x/a/b}", R),
    ("echo ${!x}", U),
    ("echo ${x@P}", U),
    ("echo ${a[$i]}", U),
    ("echo ${a[0]} ${a[@]}", R),
    ("echo ${x:1:2}", R),
    ("echo ${x:$n}", U),
    ("echo ${x:=set}", U),
    ("echo ${x:-$(rm y)}", W),
    // Arithmetic.
    ("echo $((1 + 2))", R),
    ("echo $[1+2]", R),
    ("echo $((x + 1))", U),
    ("echo $(( $y * 2 ))", U),
    ("(( x = 1 ))", U),
    ("x='a[$(touch p)]'; echo $((x))", U),
    ("let x=1", U),
    // Command and process substitution.
    ("cat $(rm x)", W),
    ("cat $(ls)", U),
    ("echo `whoami`", U),
    ("echo \"$(pwd)\"", U),
    ("echo \"`rm -rf /`\"", W),
    ("diff <(ls a) <(ls b)", U),
    ("ls > >(tee out)", W),
    ("cat <<EOF\n$(rm x)\nEOF", W),
    ("cat <<EOF\n$(ls)\nEOF", U),
    ("grep x <<< \"$(rm x)\"", W),
    ("echo $( (ls) )", U),
    // Output redirection.
    ("echo hi > f", W),
    ("echo hi >> f", W),
    ("ls >| f", W),
    ("ls &> f", W),
    ("ls &>> f", W),
    ("ls >& f", W),
    ("ls 2> err.log", W),
    ("ls > /dev/null", R),
    ("ls &> /dev/null", R),
    ("ls > \"$out\"", W),
    ("ls > /dev/null > out", W),
    ("cat <<EOF > out.txt\nhello\nEOF", W),
    ("cat <<EOF | tee out\nhi\nEOF", W),
    ("{ ls; pwd; } > out", W),
    ("(ls) > out", W),
    ("exec 3> f", W),
    ("ls > '/dev/null'", R),
    ("ls > /dev/null2", W),
    // Write commands.
    ("rm -rf target", W),
    ("rm file", W),
    ("mv a b", W),
    ("cp a b", W),
    ("touch x", W),
    ("mkdir -p build/out", W),
    ("ln -s a b", W),
    ("chmod +x script.sh", W),
    ("tee out.txt", W),
    ("ls | tee listing.txt", W),
    ("truncate -s 0 log", W),
    ("ls; rm -rf /", W),
    ("ls && rm x", W),
    ("false || rm x", W),
    ("ls | xargs rm", W),
    ("rm $(ls)", W),
    ("kill -9 1234", W),
    ("make", W),
    ("/bin/rm x", W),
    // Quoting and escaping tricks.
    ("'rm' -rf x", W),
    ("\"rm\" x", W),
    ("\\rm x", W),
    ("r\\m x", W),
    ("r''m x", W),
    ("l's' -la", R),
    ("echo 'rm -rf /'", R),
    ("echo \"rm -rf /\"", R),
    ("echo rm -rf / # > f", R),
    ("echo 'a > b'", R),
    ("echo a\\>b", R),
    ("$'rm' x", W),
    ("$'\\x72m' x", U),
    ("$cmd arg", U),
    ("\"$cmd\" arg", U),
    ("${cmd} arg", U),
    ("ls | $PAGER", U),
    ("./ls", U),
    ("/tmp/ls", U),
    ("ls -{l,a}", R),
    ("sed -{n,i} p f", U),
    ("sed -n p 'f'", R),
    // Parse errors and oddities.
    ("ls \"unterminated", U),
    ("ls <> f", U),
    ("ls ; ; rm x", U),
    ("(((", U),
    ("", R),
    ("   ", R),
    ("if then fi", U),
    // Functions, aliases, eval, exec, source.
    ("f() { ls; }; f", U),
    ("ls() { rm -rf ~; }; ls", W),
    ("function g { pwd; }", U),
    ("alias ls='rm -rf'", U),
    ("eval ls", U),
    ("eval 'rm -rf x'", W),
    ("eval \"$cmd\"", U),
    ("exec ls", U),
    ("exec rm x", W),
    ("source ./env.sh", U),
    (". ./env.sh", U),
    ("trap 'rm -f tmp' EXIT", W),
    ("bash -c 'ls'", U),
    ("sh -c 'ls'", U),
    ("sh -c 'rm -rf x'", W),
    ("bash -lc 'touch x'", W),
    ("bash script.sh", U),
    ("python3 -c 'print(1)'", U),
    ("node -e 'x'", U),
    ("perl -pi -e 's/a/b/' f", U),
    ("coproc ls", U),
    // Wrappers.
    ("env ls", R),
    ("env -i ls", R),
    ("env FOO=1 ls", U),
    ("env LC_ALL=C sort f", R),
    ("env rm x", W),
    ("env -S 'rm x'", U),
    ("nice ls", R),
    ("nice -n 10 grep x f", R),
    ("nice rm x", W),
    ("timeout 5 ls", R),
    ("timeout -s KILL 10 cat f", R),
    ("timeout 5 rm x", W),
    ("time ls", R),
    ("time -p ls", R),
    ("time rm x", W),
    ("time -o out ls", W),
    ("command ls", R),
    ("command -v git", R),
    ("command rm x", W),
    ("builtin cd /tmp", R),
    ("stdbuf -oL grep x f", R),
    ("nohup ls", U),
    ("nohup rm x", W),
    ("sudo ls", U),
    ("sudo rm -rf /", W),
    ("watch ls", U),
    // xargs.
    ("ls | xargs grep foo", R),
    ("find . -name '*.rs' | xargs wc -l", R),
    ("find . -print0 | xargs -0 cat", R),
    ("ls | xargs", R),
    ("ls | xargs -I{} cat {}", R),
    ("ls | xargs -I % mv % %.bak", W),
    ("ls | xargs sh -c 'rm $0'", W),
    ("ls | xargs sort", U),
    ("ls | xargs -p rm", U),
    ("ls | xargs $cmd", U),
    ("ls | xargs sed -i s/a/b/", W),
    // find and fd.
    ("find . -delete", W),
    ("find . -name x -delete", W),
    ("find . -exec rm {} \\;", W),
    ("find . -exec rm {} +", W),
    ("find . -execdir grep x {} \\;", U),
    ("find . -exec cat {} \\;", U),
    ("find . -ok rm {} \\;", W),
    ("find . -fprint out", W),
    ("find . -fprintf out '%p'", W),
    ("find . -fls out", W),
    ("find $dir -name x", U),
    ("find . -name '-delete'", W),
    ("find . -exec", U),
    ("fd -x rm", W),
    ("fd -e rs -x wc -l", U),
    ("fd --exec-batch rm {} ;", W),
    ("fd -H pattern", R),
    // sed.
    ("sed -i 's/a/b/' f", W),
    ("sed -i.bak 's/a/b/' f", W),
    ("sed --in-place 's/a/b/' f", W),
    ("sed --in-pl 's/a/b/' f", W),
    ("sed -ni 'p' f", W),
    ("sed -n 'w out' f", W),
    ("sed 's/a/b/w out' f", W),
    ("sed 's/a/b/e' f", U),
    ("sed '1e ls' f", U),
    ("sed -f script.sed f", U),
    ("sed \"$script\" f", U),
    ("sed -n '/start/,/end/p' f", R),
    ("sed '1a foo; w out' f", R),
    ("sed -n 'r other' f", R),
    ("sed -n 's/x/y/w /dev/stdout' f", R),
    ("sed 's/[/]/x/w out' f", U),
    ("sed ':a;N;$!ba;s/\\n/ /g' f", R),
    // awk.
    ("awk '{system(\"rm x\")}'", U),
    ("awk 'BEGIN{system (\"ls\")}'", U),
    ("awk '{print > \"out\"}' f", W),
    ("awk '{print $1 >> \"out\"}' f", W),
    ("awk '{printf(\"%s\", $1) > \"out\"}' f", W),
    ("awk '{print | \"sort\"}' f", U),
    ("awk 'BEGIN{\"date\" | getline d; print d}'", U),
    ("awk '{getline line < \"other\"; print line}' f", R),
    ("awk 'BEGIN { f = \"sys\" \"tem\"; @f(\"rm x\") }'", U),
    ("awk -f prog.awk f", U),
    ("awk \"$prog\" f", U),
    ("awk '{ a++ / 2; system(\"x\") / 3 }'", U),
    ("awk 'length($0) > 80' f", R),
    ("awk '{ if ($1 > 5) print $1 }' f", R),
    ("gawk -i inplace '{print}' f", U),
    ("gawk -o '{print}' f", W),
    ("awk -v n=3 'NR <= n' f", R),
    // git.
    ("git status", R),
    ("git status --short", R),
    ("git log --oneline -n 10", R),
    ("git log -p -- src/main.rs", R),
    ("git diff", R),
    ("git diff --stat HEAD~1", R),
    ("git show HEAD:Cargo.toml", R),
    ("git branch", R),
    ("git branch -a", R),
    ("git branch -vv", R),
    ("git branch --list 'feat/*'", R),
    ("git rev-parse --abbrev-ref HEAD", R),
    ("git ls-files", R),
    ("git blame src/lib.rs", R),
    ("git grep -n TODO", R),
    ("git remote -v", R),
    ("git config --get user.name", R),
    ("git config --list", R),
    ("git config user.email", R),
    ("git describe --tags", R),
    ("git shortlog -sn", R),
    ("git tag", R),
    ("git tag -l 'v1.*'", R),
    ("git stash list", R),
    ("git -C ../other status", R),
    ("git --no-pager log", R),
    ("git --version", R),
    ("git commit -m msg", W),
    ("git add .", W),
    ("git push", W),
    ("git checkout main", W),
    ("git reset --hard", W),
    ("git stash", W),
    ("git stash pop", W),
    ("git branch new-feature", W),
    ("git branch -D old", W),
    ("git branch -m a b", W),
    ("git tag v1.0", W),
    ("git tag -a v1 -m x", W),
    ("git tag -d v1", W),
    ("git remote add origin url", W),
    ("git config user.name me", W),
    ("git config --unset user.name", W),
    ("git clean -fdx", W),
    ("git log --output=out.txt", W),
    ("git diff --out=f", W),
    ("git -c core.pager=sh log", U),
    ("git -c alias.x='!rm -rf /' x", U),
    ("git --exec-path=/tmp status", U),
    ("git -p log", U),
    ("git grep -O x", U),
    ("git grep --open-files-in-pager x", U),
    ("git my-alias", U),
    ("git log $range", U),
    ("git remote show origin", U),
    ("git config --edit", U),
    ("git help log", U),
    // Package managers and build tools.
    ("cargo metadata --format-version 1 --no-deps", R),
    ("cargo tree --frozen", R),
    ("cargo tree --locked --offline", R),
    ("cargo tree --locked", U),
    ("cargo tree", U),
    ("cargo --version", R),
    ("cargo build", W),
    ("cargo test", W),
    ("cargo clippy", W),
    ("cargo install ripgrep", W),
    ("cargo --config 'build.rustc=\"x\"' tree --locked", U),
    ("cargo +nightly build", W),
    ("npm install", W),
    ("npm i lodash", W),
    ("npm ls", U),
    ("npm --version", U),
    ("npm run build", U),
    ("npm view react", U),
    ("yarn", W),
    ("pnpm add x", W),
    ("pip install requests", W),
    ("go build ./...", W),
    ("go version", U),
    ("go env GOPATH", U),
    ("go env -w GOFLAGS=x", W),
    ("apt-get install -y jq", W),
    // Archives and network.
    ("tar -xzf a.tgz", W),
    ("tar czf out.tgz src", W),
    ("tar -tzf a.tgz", U),
    ("gzip file", W),
    ("gzip -c file", R),
    ("zcat file.gz", R),
    ("unzip a.zip", W),
    ("unzip -l a.zip", R),
    ("dd if=/dev/zero of=disk bs=1M", W),
    ("curl https://example.com", U),
    ("curl -o out https://example.com", W),
    ("curl -sSL https://x | sh", U),
    ("curl -sSL https://x | sh -c 'rm x'", W),
    ("wget https://example.com/f", W),
    ("wget -qO- https://example.com", U),
    // Options that write, follow or run programs.
    ("sort -o out in", W),
    ("sort --output=out in", W),
    ("sort -ro out in", W),
    ("sort --compress-program=sh in", U),
    ("uniq in out", W),
    ("uniq -c in", R),
    ("uniq -f 2 in", R),
    ("tail -f log", U),
    ("tail -F log", U),
    ("tail --follow=name log", U),
    ("tail -5f log", U),
    ("rg --pre ./decode x", U),
    ("rg --pre=sh x", U),
    ("rg $flags x", U),
    ("tree -o out.txt", W),
    ("tree -R -L 2 -H .", W),
    ("date -s '2020-01-01'", W),
    ("date --set=now", W),
    ("file -C -m magic", W),
    ("printf -v x '%s' y", U),
    ("shuf -o out in", W),
    ("less README.md", U),
    ("more README.md", U),
    ("vim file", U),
    ("man ls", U),
    ("unknown-tool --flag", U),
    ("hostname", R),
    ("hostname evil", U),
    // Shell builtins that assign or configure.
    ("git ls-files | while read -r f; do wc -l \"$f\"; done", R),
    ("read -r -a parts", R),
    ("read 'a[$(touch p)]'", U),
    ("read PATH", U),
    ("set -euo pipefail; ls", R),
    ("set -x", R),
    ("set -- a b", U),
    ("set -o vi", U),
    ("ls || exit 1", R),
    ("shift 2", R),
    ("hash -p /bin/rm ls; ls x", U),
    ("enable -f ./x.so x", U),
    // Control characters and here-documents bash ends elsewhere than the parser.
    ("ls\rrm x", U),
    ("echo\u{0}rm", U),
    ("cat <<EOF\n\tEOF\nrm x\nEOF", U),
    ("cat <<-EOF\n\tbody\n\tEOF", R),
    ("cat <<-EOF\n\tEOF\nrm x\n", W),
    ("cat <<\"EOF\"\nx\nEOF\nrm y", W),
    ("cat <<EOF\nbody", U),
    // Text tree-sitter-bash leaves unparsed: patterns, here-document backquotes, `$[...]`.
    ("echo \"${x#$(rm x)}\"", U),
    ("echo ${x%%$(rm y)}", U),
    ("echo ${x:-$[1]}", U),
    ("echo ${x%.*} ${x#*/}", R),
    ("cat <<E\necho `echo x >> a`\nE", U),
    ("cat <<'E'\n`touch p` $(touch q)\nE", R),
    ("cat <<E\n${x[$(rm q)]}\nE", W),
    // tree-sitter-bash splits this one word in three: nothing it says can be trusted.
    ("[[ x == *$(rm y)* ]]", U),
    ("echo \"a\\$(b)\"", R),
    ("cargo tree --frozen --config 'build.rustc=\"sh\"'", U),
    ("cargo metadata --no-deps -Zunstable-options", U),
    // git subcommands with read-only subcommands of their own.
    ("git worktree list", R),
    ("git worktree add ../x", W),
    ("git submodule status", R),
    ("git submodule --quiet update", W),
    ("git notes show HEAD", R),
    ("git reflog", R),
    ("git reflog expire --all", W),
    // awk programs where a `/` or `#` could hide code from a careless scanner.
    ("awk '{ print /#/; system(\"x\") }'", U),
    ("awk '{ if ($1) /\"/; printf \"x\" | \"sh\" }'", U),
    ("awk '{ x = f(1) / 2 }'", R),
    ("awk '{ n = getline / 2 }'", U),
    ("awk '{ print \"a@b\" }'", U),
    ("awk '{ print $1 > \"/dev/stderr\" \"x\" }'", W),
    ("awk '{ print ($1 > 2) }'", R),
    ("awk 'BEGIN { getline < \"/inet/tcp/0/x/80\" }'", U),
    // An unquoted option value may split into several words and shift the command.
    ("nice -n $n ls", U),
    ("nice -n \"$n\" ls", R),
    ("timeout $t ls", U),
    ("git -C $d status", U),
    ("git -C \"$d\" status", R),
    ("sort -k $k f", U),
    ("command -v $x", R),
    // `[` is a command, so `>` in it redirects; `[[` compares strings.
    ("[ a > b ]", W),
    ("[ \"$x\" > out ]", W),
    ("[[ a > b ]]", R),
    ("echo ${x:->out}", R),
    ("(( 1 > 2 ))", R),
    // One word to bash that tree-sitter-bash reads as two (found by differential fuzzing).
    ("awk '{print $'\\n'> \"p\"}' a", U),
    ("echo 'a'\"b\"c", R),
];

#[test]
fn verdicts_table() {
    let mut failures = Vec::new();
    for (command, expected) in CASES {
        let got = classify(command);
        if got != *expected {
            failures.push(format!(
                "{command:?}: expected {}, got {}",
                expected.as_str(),
                got.as_str()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} verdicts wrong:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn table_is_large_and_unique() {
    assert!(CASES.len() >= 200, "only {} cases", CASES.len());
    let mut seen = std::collections::HashSet::new();
    for (command, _) in CASES {
        assert!(seen.insert(*command), "duplicate case {command:?}");
    }
}

#[test]
fn as_str_names() {
    assert_eq!(Safety::ReadOnly.as_str(), "read-only");
    assert_eq!(Safety::Write.as_str(), "write");
    assert_eq!(Safety::Unknown.as_str(), "unknown");
}

#[test]
fn deep_nesting_is_unknown_not_a_crash() {
    let deep = format!("{}ls{}", "(".repeat(5000), ")".repeat(5000));
    assert_eq!(classify(&deep), Safety::Unknown);
    // Each `eval` runs the next one: deeper than the classifier follows.
    let nested_eval = format!("{}rm x", "eval ".repeat(20));
    assert_eq!(classify(&nested_eval), Safety::Unknown);
    assert_eq!(classify("eval eval rm x"), Safety::Write);
    let huge = "ls; ".repeat(100_000);
    assert_eq!(classify(&huge), Safety::Unknown);
}

#[test]
fn garbage_never_panics() {
    let pieces = [
        "ls",
        "rm",
        "'",
        "\"",
        "$(",
        ")",
        "`",
        "${",
        "}",
        "<<",
        "EOF",
        "\n",
        ";",
        "|",
        "&",
        ">",
        "<",
        "[[",
        "]]",
        "((",
        "\\",
        "-i",
        "$x",
        "{a,b}",
        "*",
        "#",
        "awk",
        "sed",
        "s/a/b/w f",
        "git",
        "-c",
        "find",
        "-exec",
        "{}",
        "\\;",
    ];
    let mut state = 0x2545_f491_u32;
    for _ in 0..2000 {
        let mut command = String::new();
        for _ in 0..(state % 12) {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            command.push_str(pieces[(state as usize) % pieces.len()]);
            command.push(' ');
        }
        let _ = classify(&command);
    }
}

/// Files the commands of the table read.
const FIXTURES: &[&str] = &[
    "a",
    "b",
    "f",
    "file",
    "x",
    "in",
    "other",
    "log.txt",
    "README.md",
    "Cargo.toml",
    "names.txt",
    "counts.txt",
    "input.txt",
    "data.csv",
    "package.json",
    "src/lib.rs",
    "src/main.rs",
];

/// Every file and directory below `dir` with its content.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                pending.push(path.clone());
                out.insert(path, None);
            } else {
                let content = fs::read(&path).unwrap_or_default();
                out.insert(path, Some(content));
            }
        }
    }
    out
}

/// Ground truth for the read-only verdicts: bash runs each of them in a scratch directory
/// (as home and working directory, standard input closed) and nothing there may change.
/// Skipped where bash or coreutils' `timeout` is missing.
#[test]
fn read_only_verdicts_write_nothing_under_bash() {
    let runs = |program: &str| {
        Command::new(program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    if !runs("bash") || !runs("timeout") {
        return;
    }
    let real_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let tool_home = |var: &str, default: &str| {
        std::env::var_os(var).map_or_else(|| real_home.join(default), PathBuf::from)
    };
    let root = std::env::temp_dir().join(format!("saki-shell-safety-{}", std::process::id()));
    let mut failures = Vec::new();
    for (i, (command, expected)) in CASES.iter().enumerate() {
        if *expected != R {
            continue;
        }
        let dir = root.join(i.to_string());
        for fixture in FIXTURES {
            let path = dir.join(fixture);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, "a\nb\n").unwrap();
        }
        let before = snapshot(&dir);
        Command::new("timeout")
            .args(["3", "bash", "-c", command])
            .current_dir(&dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &dir)
            // rustup and cargo keep their own state where it is.
            .env("RUSTUP_HOME", tool_home("RUSTUP_HOME", ".rustup"))
            .env("CARGO_HOME", tool_home("CARGO_HOME", ".cargo"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        if snapshot(&dir) != before {
            failures.push(format!("{command:?}"));
        }
    }
    let _ = fs::remove_dir_all(&root);
    assert!(
        failures.is_empty(),
        "read-only verdicts that wrote under bash:\n{}",
        failures.join("\n")
    );
}
