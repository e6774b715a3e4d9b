use super::answer::code_block;
use super::*;

fn change(prompt: &str) -> Intent {
    read_intent(prompt)
}

/// What `answer` gives for `old`, a file shown as `deploy.yaml`.
fn judged(old: &str, answer: &str, intent: Intent) -> Rewrite {
    read_rewrite(old, answer, intent, "deploy.yaml")
}

#[test]
fn a_first_line_that_only_names_the_file_is_not_part_of_it() {
    let old = "def mean(xs):\n    return sum(xs) / len(xs)\n";
    let document = change("Add a docstring to the function mean in stats.py.");
    let new = "def mean(xs):\n    \"\"\"The mean of xs.\"\"\"\n    return sum(xs) / len(xs)\n";
    for caption in ["stats.py", "# stats.py", "src/stats.py:", "// stats.py"] {
        assert_eq!(
            read_rewrite(
                old,
                &format!("```\n{caption}\n{new}```"),
                document,
                "src/stats.py"
            ),
            Rewrite::New(new.to_owned()),
            "{caption}"
        );
    }
    // A file that opens with its own name keeps it.
    let titled = "# notes.md\n\nTodo.\n";
    let retitled = "# notes.md\n\nTodo: tests.\n";
    assert_eq!(
        read_rewrite(
            titled,
            &format!("```\n{retitled}```"),
            change("Add tests to the todo in notes.md."),
            "notes.md"
        ),
        Rewrite::New(retitled.to_owned())
    );
}

#[test]
fn a_rewrite_that_goes_against_an_addition_or_a_removal_is_not_used() {
    let old = "# tool\n\n## Testing\n\n## License\n\nMIT\n";
    let add = change("Under the Testing heading in README.md, add the line: Run pytest.");
    let dropped = "# tool\n\n## Testing\n\nRun pytest.\n";
    assert_eq!(
        judged(old, &format!("```\n{dropped}```"), add),
        Rewrite::Unusable
    );
    let added = old.replace("## Testing\n", "## Testing\n\nRun pytest.\n");
    assert_eq!(
        judged(old, &format!("```\n{added}```"), add),
        Rewrite::New(added.clone())
    );
    let remove = change("Remove the License section from README.md.");
    assert_eq!(
        judged(old, &format!("```\n{added}```"), remove),
        Rewrite::Unusable
    );
}

#[test]
fn the_first_complete_code_block_is_the_new_text() {
    assert_eq!(
        code_block("Here:\n```yaml\nname: api\nreplicas: 5\n```\nDone."),
        Some("name: api\nreplicas: 5\n")
    );
    assert_eq!(code_block("```\n```"), Some(""));
    // Cut before its closing fence, or no block at all: nothing to write.
    assert_eq!(code_block("```yaml\nname: api\nrepl"), None);
    assert_eq!(code_block("Set replicas to 5."), None);
    assert_eq!(code_block("```"), None);
}

#[test]
fn a_rewrite_is_used_only_when_it_changes_the_file_and_keeps_enough_of_it() {
    let old = "name: api\nreplicas: 2\nimage: api:1.4\n";
    let scale = change("Scale the api to 5 replicas in deploy.yaml.");
    assert_eq!(
        judged(
            old,
            "```yaml\nname: api\nreplicas: 5\nimage: api:1.4\n```",
            scale
        ),
        Rewrite::New("name: api\nreplicas: 5\nimage: api:1.4\n".to_owned())
    );
    // The same text (spacing at the end aside): the request changes nothing in it.
    assert_eq!(
        judged(old, &format!("```\n{old}\n```"), scale),
        Rewrite::Unchanged
    );
    // A fragment of the file, on a request that takes nothing out.
    assert_eq!(
        judged(old, "```\nreplicas: 5\n```", scale),
        Rewrite::Unusable
    );
    // No complete code block: nothing to write.
    assert_eq!(judged(old, "Set replicas to 5.", scale), Rewrite::Unusable);
    // A request to take something out may leave most of it out.
    let remove = change("Remove the image and replicas lines from deploy.yaml.");
    assert_eq!(
        judged(old, "```\nname: api\n```", remove),
        Rewrite::New("name: api\n".to_owned())
    );
    assert_eq!(judged(old, "```\n\n```", remove), Rewrite::Unusable);
}

#[test]
fn a_rename_that_changes_every_line_is_not_a_fragment() {
    let old = "from greetings import greet\n\nprint(greet('Ann'))\n";
    let rename = change("Rename the function greet to welcome, where app.py uses it.");
    let new = "from greetings import welcome\n\nprint(welcome('Ann'))\n";
    assert_eq!(
        judged(old, &format!("```python\n{new}```"), rename),
        Rewrite::New(new.to_owned())
    );
    // Much added to little is still the file, with more.
    let add = change("Add a function sub to calc.py.");
    let old = "def add(a, b):\n    return a + b\n";
    let new = format!(
        "{old}\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
    );
    assert_eq!(
        judged(old, &format!("```\n{new}```"), add),
        Rewrite::New(new)
    );
}

#[test]
fn a_file_without_a_last_line_break_keeps_none() {
    let scale = change("Set LIMIT to 25.");
    assert_eq!(
        judged("LIMIT = 10", "```python\nLIMIT = 25\n```", scale),
        Rewrite::New("LIMIT = 25".to_owned())
    );
}

#[test]
fn the_request_shows_the_file_then_the_persons_words() {
    assert_eq!(
        rewrite_prompt(
            "calc.py",
            "def add(a, b):\n    return a - b",
            "",
            " Fix add. ",
            ""
        ),
        "calc.py:\n```\ndef add(a, b):\n    return a - b\n```\n\nFix add.\nReply with the \
         complete new content of calc.py, all of it, in one code block."
    );
    assert_eq!(
        rewrite_prompt(
            "main.py",
            "import x\n",
            "(The project's files: main.py, lib/x.py.)\n",
            "Fix the import.",
            ""
        ),
        "main.py:\n```\nimport x\n```\n\n(The project's files: main.py, lib/x.py.)\nFix the \
         import.\nReply with the complete new content of main.py, all of it, in one code block."
    );
}

#[test]
fn files_are_named_by_paths_and_by_capitalised_whole_names() {
    assert_eq!(
        named_files("Bump the version to 1.3.0 in package.json and `VERSION`. See Makefile, src/a.py and package.json."),
        vec!["Bump", "1.3.0", "package.json", "VERSION", "See", "Makefile", "src/a.py"]
    );
    // Capitalised words are read as files only where such files exist; lower-case words
    // without a dot are the request's words, not files.
    assert_eq!(
        named_files("rename build to make in setup"),
        Vec::<&str>::new()
    );
}

#[test]
fn a_rewrite_that_breaks_a_json_file_is_not_written() {
    let old = "{\n  \"name\": \"web\",\n  \"version\": \"1.2.0\"\n}\n";
    let bump = change("Bump the version to 1.3.0 in package.json.");
    let broken = "```json\n{\n  \"name\": \"web\"\n  \"version\": \"1.3.0\"\n}\n```";
    assert_eq!(judged(old, broken, bump), Rewrite::Unusable);
    let fixed = "```json\n{\n  \"name\": \"web\",\n  \"version\": \"1.3.0\"\n}\n```";
    assert_eq!(
        judged(old, fixed, bump),
        Rewrite::New("{\n  \"name\": \"web\",\n  \"version\": \"1.3.0\"\n}\n".to_owned())
    );
    // A file that was not valid JSON may be repaired, or not: it is not judged.
    let fix = change("config.json does not parse. Fix it.");
    assert_eq!(
        judged("{\"a\": 1,}\n", "```\n{\"a\": 1}\n```", fix),
        Rewrite::New("{\"a\": 1}\n".to_owned())
    );
}

#[test]
fn a_rewrite_keeps_the_files_format() {
    // A plain file named beside a JSON one does not come back as JSON.
    let bump = change("Bump the version to 1.3.0 in package.json and VERSION.");
    assert_eq!(
        judged(
            "1.2.0\n",
            "```json\n{\n  \"version\": \"1.3.0\"\n}\n```",
            bump
        ),
        Rewrite::Unusable
    );
    assert_eq!(
        judged("1.2.0\n", "```\n1.3.0\n```", bump),
        Rewrite::New("1.3.0\n".to_owned())
    );
    // An empty file may be written as JSON.
    let create = change("Put {\"a\": 1} in data.json.");
    assert_eq!(
        judged("", "```\n{\"a\": 1}\n```", create),
        Rewrite::New("{\"a\": 1}".to_owned())
    );
}

#[test]
fn a_json_rewrite_keeps_every_key_where_it_was_unless_something_is_taken_out() {
    let old = "{\n  \"server\": {\n    \"port\": 8000\n  },\n  \"debug\": false\n}\n";
    let turn_on = change("Turn on debug in settings.json.");
    let moved =
        "```json\n{\n  \"server\": {\n    \"port\": 8000,\n    \"debug\": true\n  }\n}\n```";
    assert_eq!(judged(old, moved, turn_on), Rewrite::Unusable);
    let right = "{\n  \"server\": {\n    \"port\": 8000\n  },\n  \"debug\": true\n}\n";
    assert_eq!(
        judged(old, &format!("```json\n{right}```"), turn_on),
        Rewrite::New(right.to_owned())
    );
    // Keys added, and items of a list, are kept track of by position.
    let list = "{\"users\": [{\"name\": \"a\"}]}";
    let add = change("Add a user b to users.json.");
    let added = "{\"users\": [{\"name\": \"a\"}, {\"name\": \"b\", \"admin\": false}]}";
    assert_eq!(
        judged(list, &format!("```\n{added}\n```"), add),
        Rewrite::New(added.to_owned())
    );
    // A rename or a removal takes keys away on purpose.
    let rename = change("Rename the key debug to verbose in settings.json.");
    let renamed = old.replace("debug", "verbose");
    assert_eq!(
        judged(old, &format!("```\n{renamed}```"), rename),
        Rewrite::New(renamed.clone())
    );
}
