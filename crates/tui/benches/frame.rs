#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Frame-time benchmark: `cargo bench -p saki-tui`. Prints per-frame figures for
//! transcripts of growing length (the target: under 16 ms, no growth with length), for
//! keypress-to-frame while a long answer streams, and for showing an accepted
//! speculation. It draws through ratatui's TestBackend, i.e. everything but the bytes
//! written to the terminal.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use saki_engine::{Item, ToolExecutionContext, ToolResultStatus};
use saki_tui::{App, EngineEvent, Status, Theme};
use std::time::{Duration, Instant};

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;

const ANSWER: &str = "## Plan\n\nThe **parser** keeps a `Vec<Token>` and walks it once:\n\n\
1. read the header\n2. read each record, with `next_record()`\n   - skipping blank lines\n\n\
```rust\nfn parse(input: &str) -> Result<Tree, Error> {\n    let tokens = lex(input)?;\n    build(&tokens)\n}\n```\n\n";

fn ctx(batch: usize, call: usize) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: format!("c{batch}-{call}"),
        batch_id: format!("b{batch}"),
        call_index: call,
    }
}

/// `n` transcript items, a realistic mix: prompts, answers, tool groups with diffs.
fn filled(n: usize) -> App {
    let status = Status {
        provider: "openai".into(),
        model: "gpt".into(),
        context_window: Some(128_000),
        ..Status::default()
    };
    let mut app = App::new(status, Theme::colored(), std::env::temp_dir(), true);
    let now = Instant::now();
    let mut i = 0;
    while app.transcript.len() < n {
        let items = match i % 3 {
            0 => vec![Item::User {
                text: format!("step {i}: look at the parser"),
            }],
            1 => vec![Item::AssistantText {
                text: ANSWER.repeat(2),
            }],
            _ => {
                let args =
                    serde_json::json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b"});
                vec![
                    Item::ToolCall {
                        name: "edit".into(),
                        arguments: args.to_string(),
                        signature: None,
                        ctx: ctx(i, 0),
                    },
                    Item::ToolResult {
                        name: "edit".into(),
                        content: "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n fn a() {\n-    old();\n+    new();\n }\n".into(),
                        status: ToolResultStatus::Success,
                        ctx: ctx(i, 0),
                    },
                ]
            }
        };
        for item in items {
            app.apply(EngineEvent::committed(item), now);
        }
        i += 1;
    }
    app
}

struct Figures(Vec<Duration>);

impl Figures {
    fn line(&mut self, label: &str) {
        self.0.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let n = self.0.len();
        let p50 = self.0[n / 2];
        let p99 = self.0[(n * 99 / 100).min(n - 1)];
        let max = self.0[n - 1];
        println!(
            "{label:<48} median {:>7.3} ms   p99 {:>7.3} ms   max {:>7.3} ms",
            ms(p50),
            ms(p99),
            ms(max)
        );
    }
}

/// Frames while an answer streams into a transcript of `n` items: one delta per frame.
fn streaming_frames(n: usize, frames: usize) -> Figures {
    let mut app = filled(n);
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    terminal.draw(|f| app.draw(f)).expect("draw");
    let words: Vec<&str> = ANSWER.split_inclusive(' ').collect();
    let mut times = Vec::with_capacity(frames);
    for k in 0..frames {
        let started = Instant::now();
        app.apply(
            EngineEvent::text_delta(words[k % words.len()].to_owned()),
            now,
        );
        terminal.draw(|f| app.draw(f)).expect("draw");
        times.push(started.elapsed());
    }
    Figures(times)
}

/// Keypress to frame while a long answer (≈`answer_kb` KiB so far) keeps streaming.
fn keypress_frames(answer_kb: usize, frames: usize) -> Figures {
    let mut app = filled(200);
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    let now = Instant::now();
    app.apply(EngineEvent::TurnStarted, now);
    while app
        .transcript
        .kinds()
        .last()
        .map_or(0, |k| format!("{k:?}").len())
        < answer_kb * 1024
    {
        app.apply(EngineEvent::text_delta(ANSWER.to_owned()), now);
    }
    terminal.draw(|f| app.draw(f)).expect("draw");
    let mut times = Vec::with_capacity(frames);
    for k in 0..frames {
        app.apply(EngineEvent::text_delta("word "), now);
        let started = Instant::now();
        let c = char::from(b'a' + (k % 26) as u8);
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE), now);
        terminal.draw(|f| app.draw(f)).expect("draw");
        times.push(started.elapsed());
    }
    Figures(times)
}

/// Enter on a completed speculation: the Accepted event applied and drawn.
fn accept_frames(rounds: usize) -> Figures {
    let mut times = Vec::with_capacity(rounds);
    let mut app = filled(2_000);
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    terminal.draw(|f| app.draw(f)).expect("draw");
    for r in 0..rounds {
        let items = vec![
            Item::User {
                text: "run the tests".into(),
            },
            Item::ToolCall {
                name: "shell".into(),
                arguments: r#"{"command":"cargo test"}"#.into(),
                signature: None,
                ctx: ctx(100_000 + r, 0),
            },
            Item::ToolResult {
                name: "shell".into(),
                content: "test result: ok. 40 passed\n".into(),
                status: ToolResultStatus::Success,
                ctx: ctx(100_000 + r, 0),
            },
            Item::AssistantText {
                text: ANSWER.into(),
            },
        ];
        let started = Instant::now();
        app.apply(
            EngineEvent::Accepted {
                items,
                files: vec!["src/lib.rs".into()],
                commands_run: 0,
                saved_ms: 3000,
                pipelined: Some("commit it".into()),
            },
            Instant::now(),
        );
        terminal.draw(|f| app.draw(f)).expect("draw");
        times.push(started.elapsed());
    }
    Figures(times)
}

fn main() {
    println!("saki-tui frame benchmark ({WIDTH}x{HEIGHT}, TestBackend)");
    for n in [20, 200, 2_000, 20_000] {
        streaming_frames(n, 400).line(&format!("streaming frame, transcript of {n} items"));
    }
    for kb in [4, 32] {
        keypress_frames(kb, 300).line(&format!("keypress to frame, answer of {kb} KiB streaming"));
    }
    accept_frames(100).line("accepted speculation shown (2,000 items)");
    let mut app = filled(2_000);
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    let started = Instant::now();
    terminal.draw(|f| app.draw(f)).expect("draw");
    let cold = started.elapsed();
    println!(
        "{:<48} {:>7.3} ms, {} of {} entries rendered",
        "first frame after load/resize (2,000 items)",
        cold.as_secs_f64() * 1000.0,
        app.transcript.take_render_count(),
        app.transcript.len()
    );
}
