use super::*;
use std::collections::HashMap;
use std::path::Path;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

fn parse(text: &str) -> FileConfig {
    toml::from_str(text).unwrap()
}

#[test]
fn no_provider_explains_how_to_configure_one() {
    let err = resolve(&FileConfig::default(), &Overrides::default(), &env_of(&[])).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("ANTHROPIC_API_KEY")
            && msg.contains("--provider")
            && msg.contains("config.toml"),
        "{msg}"
    );
}

#[test]
fn a_single_api_key_picks_its_provider() {
    let r = resolve(
        &FileConfig::default(),
        &Overrides::default(),
        &env_of(&[("GEMINI_API_KEY", "g")]),
    )
    .unwrap();
    assert_eq!(
        (r.provider.as_str(), r.wire_api, r.api_key.as_deref()),
        ("gemini", WireApi::Gemini, Some("g"))
    );
    assert_eq!(r.base_url, "https://generativelanguage.googleapis.com");
    let err = resolve(
        &FileConfig::default(),
        &Overrides::default(),
        &env_of(&[("GEMINI_API_KEY", "g"), ("OPENAI_API_KEY", "o")]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("several"), "{err}");
}

#[test]
fn flags_beat_environment_beat_files() {
    let file = parse("provider = \"anthropic\"\nmodel = \"claude-x\"\n");
    let env = env_of(&[("ANTHROPIC_API_KEY", "a"), ("SAKI_MODEL", "claude-env")]);
    let r = resolve(&file, &Overrides::default(), &env).unwrap();
    assert_eq!(r.model, "claude-env");
    let r = resolve(
        &file,
        &Overrides {
            model: Some("claude-flag".into()),
            ..Default::default()
        },
        &env,
    )
    .unwrap();
    assert_eq!(r.model, "claude-flag");
    let r = resolve(
        &file,
        &Overrides::default(),
        &env_of(&[("ANTHROPIC_API_KEY", "a")]),
    )
    .unwrap();
    assert_eq!(r.model, "claude-x");
    assert_eq!(r.limits.context_window, Some(200_000));
}

#[test]
fn cloud_providers_need_their_key_local_ones_do_not() {
    let err = resolve(
        &FileConfig::default(),
        &Overrides {
            provider: Some("openai".into()),
            ..Default::default()
        },
        &env_of(&[]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    let r = resolve(
        &FileConfig::default(),
        &Overrides {
            provider: Some("ollama".into()),
            model: Some("qwen".into()),
            ..Default::default()
        },
        &env_of(&[]),
    )
    .unwrap();
    assert_eq!(r.base_url, "http://localhost:11434/v1");
    assert_eq!(r.api_key, None);
}

#[test]
fn base_url_alone_means_openai_compatible_and_compatible_needs_a_model() {
    // A public host is never asked which model it serves: one must be named.
    let public = Overrides {
        base_url: Some("https://llm.example.com/v1".into()),
        ..Default::default()
    };
    let err = resolve(&FileConfig::default(), &public, &env_of(&[])).unwrap_err();
    assert!(matches!(err, ConfigError::MissingModel { .. }), "{err}");
    // A server on this machine is: the model stays empty until it answers.
    let o = Overrides {
        base_url: Some("http://127.0.0.1:9/v1".into()),
        ..Default::default()
    };
    assert_eq!(
        resolve(&FileConfig::default(), &o, &env_of(&[]))
            .unwrap()
            .model,
        ""
    );
    let named = Overrides {
        provider: Some("openai-compatible".into()),
        ..o.clone()
    };
    let err = resolve(&FileConfig::default(), &named, &env_of(&[])).unwrap_err();
    assert!(matches!(err, ConfigError::MissingModel { .. }), "{err}");
    let o = Overrides {
        model: Some("m".into()),
        ..o
    };
    let r = resolve(&FileConfig::default(), &o, &env_of(&[])).unwrap();
    assert_eq!(
        (r.provider.as_str(), r.wire_api),
        ("openai-compatible", WireApi::Chat)
    );
    let err = resolve(
        &FileConfig::default(),
        &Overrides {
            provider: Some("openai-compatible".into()),
            model: Some("m".into()),
            ..Default::default()
        },
        &env_of(&[]),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::MissingBaseUrl { .. }));
}

#[test]
fn named_providers_and_models_from_config() {
    let file = parse(
        r#"
provider = "proxy"
[providers.proxy]
wire_api = "anthropic"
base_url = "https://proxy.example"
env_key = "PROXY_KEY"
requires_key = true
model = "claude-proxy"
headers = { "x-team" = "core" }

[models.claude-proxy]
context_window = 50000
"#,
    );
    let r = resolve(&file, &Overrides::default(), &env_of(&[("PROXY_KEY", "k")])).unwrap();
    assert_eq!(r.wire_api, WireApi::Anthropic);
    assert_eq!(r.api_key.as_deref(), Some("k"));
    assert_eq!(r.headers, vec![("x-team".to_string(), "core".to_string())]);
    assert_eq!(r.limits.context_window, Some(50_000));
    assert_eq!(
        r.limits.max_output_tokens,
        Some(32_000),
        "unset fields keep the built-in"
    );
    let err = resolve(&file, &Overrides::default(), &env_of(&[])).unwrap_err();
    assert!(err.to_string().contains("PROXY_KEY"));
}

#[test]
fn unknown_provider_and_bad_files_are_named() {
    let err = resolve(
        &FileConfig::default(),
        &Overrides {
            provider: Some("nope".into()),
            ..Default::default()
        },
        &env_of(&[]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("nope") && err.to_string().contains("llamacpp"));
    assert!(toml::from_str::<FileConfig>("[providers.x]\nwire_api = \"smoke-signals\"\n").is_err());
    assert!(
        toml::from_str::<FileConfig>("provder = \"typo\"\n").is_err(),
        "unknown keys are errors"
    );
}

#[test]
fn workspace_file_overrides_global_file() {
    let dir = tempfile::tempdir().unwrap();
    let global = dir.path().join("global.toml");
    let local = dir.path().join("local.toml");
    std::fs::write(&global, "provider = \"anthropic\"\n[providers.anthropic]\nmodel = \"claude-a\"\nheaders = { a = \"1\" }\n").unwrap();
    std::fs::write(
        &local,
        "[providers.anthropic]\nmodel = \"claude-b\"\nheaders = { b = \"2\" }\n",
    )
    .unwrap();
    let paths = [global, local, dir.path().join("missing.toml")];
    let env = env_of(&[("ANTHROPIC_API_KEY", "k")]);
    let file = load_files(&paths, 1).unwrap();
    let r = resolve(&file, &Overrides::default(), &env).unwrap();
    assert_eq!(r.model, "claude-b");
    assert_eq!(r.headers.len(), 1, "an untrusted file sends no headers");
    assert_eq!(r.ignored.len(), 1);
    assert!(r.ignored[0].ends_with("local.toml: providers.anthropic.headers"));
    let trusted = load_files(&paths, 2).unwrap();
    let r = resolve(&trusted, &Overrides::default(), &env).unwrap();
    assert_eq!(r.headers.len(), 2);
    assert!(r.ignored.is_empty());

    std::fs::write(dir.path().join("bad.toml"), "provider = [").unwrap();
    let err = load_files(&[dir.path().join("bad.toml")], 0).unwrap_err();
    assert!(err.to_string().contains("bad.toml"));
}

#[test]
fn config_paths_follow_xdg() {
    let paths = config_paths(
        Path::new("/ws"),
        &env_of(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]),
    );
    assert_eq!(
        paths,
        [
            PathBuf::from("/x/saki/config.toml"),
            PathBuf::from("/ws/.saki/config.toml")
        ]
    );
    let paths = config_paths(Path::new("/ws"), &env_of(&[("HOME", "/h")]));
    assert_eq!(paths[0], PathBuf::from("/h/.config/saki/config.toml"));
}

#[test]
fn hooks_come_from_the_global_file_only() {
    let dir = tempfile::tempdir().unwrap();
    let global = dir.path().join("global.toml");
    let local = dir.path().join("local.toml");
    let hook = "[[hooks.PreToolUse]]\ncommand = \"true\"\nmatcher = \"shell\"\n";
    std::fs::write(&global, hook).unwrap();
    std::fs::write(&local, hook.replace("true", "rm -rf ~")).unwrap();
    let file = load_files(&[global, local], 1).unwrap();
    let hooks = &file.hooks[&HookEvent::PreToolUse];
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0].command, "true");
    assert!(toml::from_str::<FileConfig>("[[hooks.OnWhatever]]\ncommand = \"x\"\n").is_err());
}

#[test]
fn the_readme_config_example_parses() {
    let readme = include_str!("../../../README.md");
    // Every toml example parses; the full one (with `fast_model`) is checked field by field.
    let blocks: Vec<&str> = readme
        .split("```toml\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("```").unwrap()])
        .collect();
    for block in &blocks {
        if let Err(e) = toml::from_str::<FileConfig>(block) {
            panic!("a README example does not parse: {e}\n{block}");
        }
    }
    let full = blocks.iter().find(|b| b.contains("fast_model")).unwrap();
    let file: FileConfig = toml::from_str(full).unwrap();
    assert_eq!(file.fast_model.as_deref(), Some("claude-haiku-4-5"));
    assert_eq!(file.compaction.threshold, Some(0.85));
    assert_eq!(file.compaction.auto, Some(true));
    assert_eq!(file.compaction.prune, Some(true));
}

#[test]
fn compaction_tables_layer_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let global = dir.path().join("global.toml");
    let local = dir.path().join("local.toml");
    std::fs::write(
        &global,
        "[compaction]\nauto = false\nthreshold = 0.7\nprune = false\n",
    )
    .unwrap();
    std::fs::write(&local, "[compaction]\nthreshold = 0.9\n").unwrap();
    let file = load_files(&[global, local], 1).unwrap();
    assert_eq!(file.compaction.auto, Some(false));
    assert_eq!(file.compaction.threshold, Some(0.9));
    assert_eq!(file.compaction.prune, Some(false));
}

#[test]
fn saki_suggestions_0_turns_suggestions_off_over_config_and_flag() {
    let base = [
        ("SAKI_BASE_URL", "http://127.0.0.1:1/v1"),
        ("SAKI_MODEL", "m"),
    ];
    let on_file = parse("suggestions = true\n");
    let off_file = parse("suggestions = false\n");
    let resolved = |file: &FileConfig, value: Option<&str>| {
        let mut pairs = base.to_vec();
        if let Some(v) = value {
            pairs.push(("SAKI_SUGGESTIONS", v));
        }
        resolve(file, &Overrides::default(), &env_of(&pairs))
    };
    // Off: the environment wins over the config file, with or without the flag.
    for value in ["0", "false", "off", "no", " OFF "] {
        let r = resolved(&on_file, Some(value)).unwrap();
        assert!(!suggestions_on(&r, false), "{value}");
        assert!(!suggestions_on(&r, true), "{value}");
    }
    // On: the environment wins over `suggestions = false`; the flag still turns it off.
    let r = resolved(&off_file, Some("1")).unwrap();
    assert!(suggestions_on(&r, false));
    assert!(!suggestions_on(&r, true));
    // Unset (or empty): the config file, then the default.
    assert!(!suggestions_on(&resolved(&off_file, None).unwrap(), false));
    assert!(suggestions_on(
        &resolved(&FileConfig::default(), Some("")).unwrap(),
        false
    ));
    // Anything else is an error naming the variable.
    let err = resolved(&on_file, Some("maybe")).unwrap_err().to_string();
    assert!(
        err.contains("SAKI_SUGGESTIONS") && err.contains("maybe"),
        "{err}"
    );
}

#[test]
fn compaction_prune_false_turns_pruning_off() {
    let settings = |file: &str| {
        let overrides = Overrides {
            provider: Some("anthropic".into()),
            ..Default::default()
        };
        let r = resolve(
            &parse(file),
            &overrides,
            &env_of(&[("ANTHROPIC_API_KEY", "k")]),
        )
        .unwrap();
        crate::setup::compaction_settings(&r)
    };
    assert!(settings("").prune, "on by default");
    let off = settings("[compaction]\nprune = false\n");
    assert!(!off.prune);
    assert!(off.auto, "summaries stay automatic");
}

#[test]
fn built_in_cloud_providers_read_ahead_with_their_small_model_unless_told_otherwise() {
    let resolved = |provider: &str, key: &str, file: &str, flag: Option<&str>| {
        let overrides = Overrides {
            provider: Some(provider.into()),
            fast_model: flag.map(str::to_owned),
            base_url: (provider == "llamacpp").then(|| "http://127.0.0.1:8080/v1".into()),
            ..Default::default()
        };
        resolve(&parse(file), &overrides, &env_of(&[(key, "k")])).unwrap()
    };
    for (provider, key, fast) in [
        ("anthropic", "ANTHROPIC_API_KEY", "claude-haiku-4-5"),
        ("openai", "OPENAI_API_KEY", "gpt-5-mini"),
        ("gemini", "GEMINI_API_KEY", "gemini-2.5-flash"),
    ] {
        let r = resolved(provider, key, "", None);
        assert_eq!(r.fast_model, fast, "{provider}");
        // Compaction summaries stay on the session's model (the snapshot is worth it).
        assert_eq!(r.fast_model_set, None);
        assert_eq!(crate::setup::compaction_settings(&r).summary_model, r.model);
        // `fast_model = ""` reads ahead with the session's model; a name is used as is.
        let r = resolved(provider, key, "fast_model = \"\"\n", None);
        assert_eq!(r.fast_model, r.model, "{provider}");
        let r = resolved(provider, key, "", Some("tiny"));
        assert_eq!(
            (r.fast_model.as_str(), r.fast_model_set.as_deref()),
            ("tiny", Some("tiny"))
        );
    }
    // A local server serves one model.
    let r = resolved("llamacpp", "X", "", None);
    assert_eq!(r.fast_model, r.model);
    // A user's provider named like a built-in but speaking another protocol gets none.
    let file = "[providers.openai]\nwire_api = \"chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let r = resolved("openai", "OPENAI_API_KEY", file, None);
    assert_eq!(r.fast_model, r.model);
}

#[test]
fn first_tool_call_is_off_unless_asked_for_and_the_model_wins() {
    let overrides = Overrides {
        provider: Some("llamacpp".into()),
        model: Some("local".into()),
        ..Overrides::default()
    };
    let env = env_of(&[]);
    let r = resolve(&FileConfig::default(), &overrides, &env).unwrap();
    assert!(!r.first_tool_call_required);
    let file = parse("[providers.llamacpp]\nfirst_tool_call = \"required\"\n");
    assert!(
        resolve(&file, &overrides, &env)
            .unwrap()
            .first_tool_call_required
    );
    let file = parse(
        "[providers.llamacpp]\nfirst_tool_call = \"required\"\n\
         [models.local]\nfirst_tool_call = \"auto\"\n",
    );
    assert!(
        !resolve(&file, &overrides, &env)
            .unwrap()
            .first_tool_call_required
    );
    assert!(toml::from_str::<FileConfig>("[models.x]\nfirst_tool_call = \"always\"\n").is_err());
}

#[test]
fn local_servers_get_the_lean_tool_set_unless_config_says_otherwise() {
    let env = env_of(&[("OPENAI_API_KEY", "k")]);
    let local = Overrides {
        provider: Some("llamacpp".into()),
        model: Some("local".into()),
        ..Overrides::default()
    };
    let cloud = Overrides {
        provider: Some("openai".into()),
        model: Some("gpt-5".into()),
        ..Overrides::default()
    };
    assert!(
        resolve(&FileConfig::default(), &local, &env)
            .unwrap()
            .lean_tools
    );
    assert!(
        !resolve(&FileConfig::default(), &cloud, &env)
            .unwrap()
            .lean_tools
    );
    let file =
        parse("[providers.llamacpp]\nlean_tools = false\n[models.gpt-5]\nlean_tools = true\n");
    assert!(!resolve(&file, &local, &env).unwrap().lean_tools);
    assert!(resolve(&file, &cloud, &env).unwrap().lean_tools);
}

#[test]
fn small_local_models_get_prompted_tools_unless_config_says_otherwise() {
    use saki_llm_client::server_info::{ServerInfo, ServerKind};
    use saki_llm_client::ToolCalling;
    let overrides = Overrides {
        provider: Some("llamacpp".into()),
        model: Some("local".into()),
        ..Overrides::default()
    };
    let env = env_of(&[]);
    let server = |parameters, template_tools| ServerInfo {
        kind: ServerKind::LlamaCpp,
        context_window: Some(8192),
        vision: None,
        parameters,
        template_tools,
    };
    let mut r = resolve(&FileConfig::default(), &overrides, &env).unwrap();
    assert_eq!(r.tool_calling(), ToolCalling::Native, "no server facts");
    r.server = Some(server(Some(630_167_424), Some(true)));
    assert_eq!(r.tool_calling(), ToolCalling::Prompted, "a 0.6B model");
    r.server = Some(server(Some(7_615_616_512), Some(true)));
    assert_eq!(r.tool_calling(), ToolCalling::Native, "a 7B model");
    r.server = Some(server(Some(7_615_616_512), Some(false)));
    assert_eq!(
        r.tool_calling(),
        ToolCalling::Prompted,
        "a template without tools"
    );
    r.server = Some(server(None, None));
    assert_eq!(
        r.tool_calling(),
        ToolCalling::Native,
        "a server that says nothing"
    );

    let file = parse("[providers.llamacpp]\ntool_calling = \"native\"\n");
    let mut r = resolve(&file, &overrides, &env).unwrap();
    r.server = Some(server(Some(630_167_424), Some(false)));
    assert_eq!(r.tool_calling(), ToolCalling::Native);
    let file = parse(
        "[providers.llamacpp]\ntool_calling = \"native\"\n\
         [models.local]\ntool_calling = \"prompted\"\n",
    );
    assert_eq!(
        resolve(&file, &overrides, &env).unwrap().tool_calling(),
        ToolCalling::Prompted,
        "the model wins, and needs no server facts"
    );
    assert!(toml::from_str::<FileConfig>("[models.x]\ntool_calling = \"json\"\n").is_err());
}

#[test]
fn sandbox_unix_sockets_take_a_switch_or_a_list_and_later_files_win() {
    let table = |text: &str| match parse(text).sandbox {
        Some(SandboxConfig::Table(t)) => t,
        other => panic!("{other:?}"),
    };
    assert_eq!(table("[sandbox]\nnetwork = true\n").unix_sockets, None);
    assert_eq!(
        table("[sandbox]\nunix_sockets = true\n").unix_sockets,
        Some(saki_sandbox::UnixSockets::All(true))
    );
    assert_eq!(
        table("[sandbox]\nunix_sockets = [\"/run/user/1/bus\"]\n").unix_sockets,
        Some(saki_sandbox::UnixSockets::Paths(vec![
            "/run/user/1/bus".into()
        ]))
    );
    assert!(toml::from_str::<FileConfig>("[sandbox]\nunix_sockets = \"yes\"\n").is_err());
    let mut merged = parse("[sandbox]\nunix_sockets = true\n");
    merged.overlay(parse("[sandbox]\nunix_sockets = false\n"));
    match merged.sandbox {
        Some(SandboxConfig::Table(t)) => {
            assert_eq!(t.unix_sockets, Some(saki_sandbox::UnixSockets::All(false)))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn tool_output_max_bytes_is_clamped_whatever_a_file_says() {
    let dir = tempfile::tempdir().unwrap();
    let global = dir.path().join("global.toml");
    let workspace = dir.path().join("workspace.toml");
    std::fs::write(&global, "tool_output_max_bytes = 2048\n").unwrap();
    let env = env_of(&[("ANTHROPIC_API_KEY", "a")]);
    let loaded = load_files(&[global.clone(), workspace.clone()], 1).unwrap();
    let r = resolve(&loaded, &Overrides::default(), &env).unwrap();
    assert_eq!(r.tool_output_max_bytes, 2048);
    // An untrusted workspace asking for 100 GB gets the hard maximum.
    std::fs::write(&workspace, "tool_output_max_bytes = 100000000000\n").unwrap();
    let loaded = load_files(&[global, workspace], 1).unwrap();
    let r = resolve(&loaded, &Overrides::default(), &env).unwrap();
    assert_eq!(
        r.tool_output_max_bytes,
        saki_tools::common::TOOL_OUTPUT_HARD_MAX_BYTES
    );
    assert_eq!(r.tool_output_max_bytes, 1 << 20);
}
