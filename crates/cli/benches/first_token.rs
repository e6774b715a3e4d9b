#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What a speculation in flight costs the person's first token on a local server with one
//! slot. The person's prompt cancels the speculation's request (its token, as
//! `Engine::discard_speculation` does) and the person's request is sent at once; the
//! server must drop the speculation and free its one slot. Timed: from sending the
//! person's request to its first streamed token, with nothing else in flight (baseline)
//! and with a speculation cancelled at that moment, in two places: while the server still
//! reads the speculation's prompt (a prefix it has not seen: the slow case) and while it
//! generates. The person's prompt shares the session's prefix either way, as a fork does.
//!
//! Needs a real one-slot server: `scripts/bench-first-token.sh` starts llama.cpp's with
//! the local Qwen model and runs this with `SAKI_BENCH_BASE_URL`; without it, it says so
//! and does nothing.

use futures::StreamExt;
use saki_llm_client::{
    CancellationToken, Client, ClientConfig, DeltaContent, Event, Message, Request, WireApi,
};
use std::time::{Duration, Instant};

const RUNS: usize = 9;

/// The session's prefix: a system prompt of about a thousand tokens.
fn system() -> String {
    let mut s = String::from("You are a coding agent working in a Python project.\n");
    for i in 0..120 {
        s.push_str(&format!(
            "Rule {i}: keep functions short, name things plainly, and test what you change.\n"
        ));
    }
    s
}

fn request(model: &str, system: &str, prompt: String, max_tokens: u32) -> Request {
    Request {
        model: model.to_owned(),
        system: Some(system.to_owned()),
        messages: vec![Message::user_text(prompt)],
        max_output_tokens: Some(max_tokens),
        temperature: Some(0.0),
        ..Request::default()
    }
}

/// Sends `request` and returns the time to its first text token.
async fn first_token(client: &Client, request: &Request) -> Duration {
    let start = Instant::now();
    let mut stream = client
        .stream(request, CancellationToken::new())
        .await
        .expect("the person's request");
    while let Some(event) = stream.next().await {
        if let Event::BlockDelta(d) = event {
            if matches!(d.delta, DeltaContent::Text(_)) {
                return start.elapsed();
            }
        }
    }
    panic!("no token came")
}

/// Where the speculation is when the person's prompt cancels it.
#[derive(Clone, Copy)]
enum At {
    /// Reading its prompt: a long new suffix, cancelled 30 ms after it was sent.
    Prompt,
    /// Generating: cancelled once its first tokens streamed.
    Generation,
}

/// Starts a speculation, cancels it where `at` says, and times the person's request
/// sent right after.
async fn with_speculation(client: &Client, spec: Request, person: &Request, at: At) -> Duration {
    let cancel = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task = {
        let (client, cancel) = (client.clone(), cancel.clone());
        tokio::spawn(async move {
            let mut tx = Some(tx);
            let Ok(mut stream) = client.stream(&spec, cancel).await else {
                return;
            };
            let mut tokens = 0;
            while let Some(event) = stream.next().await {
                if let Event::BlockDelta(_) = event {
                    tokens += 1;
                    if tokens == 4 {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(());
                        }
                    }
                }
            }
        })
    };
    match at {
        At::Prompt => tokio::time::sleep(Duration::from_millis(30)).await,
        At::Generation => {
            let _ = rx.await;
        }
    }
    cancel.cancel();
    let took = first_token(client, person).await;
    let _ = task.await;
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn p90(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 9 / 10).min(v.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let Ok(base) = std::env::var("SAKI_BENCH_BASE_URL") else {
        println!("first_token: skipped; run scripts/bench-first-token.sh (it starts a one-slot local server)");
        return;
    };
    let model = std::env::var("SAKI_BENCH_MODEL").unwrap_or_else(|_| "local".into());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = Client::new(ClientConfig::new(WireApi::Chat, base)).unwrap();
        let system = system();
        let person = |i: usize| {
            request(
                &model,
                &system,
                format!("Question {i}: what does add(2, 3) return? Answer in one word."),
                8,
            )
        };
        let long_suffix: String = (0..150)
            .map(|i| format!("Line {i} of the file under test: total = total + {i}\n"))
            .collect();
        let spec = |i: usize, at: At| {
            let prompt = match at {
                At::Prompt => {
                    format!("Speculation {i}. Read this and summarize it:\n{long_suffix}")
                }
                At::Generation => format!("Speculation {i}. Write a long essay on testing."),
            };
            request(&model, &system, prompt, 400)
        };
        // Warm the prefix once, as a session's first turn does.
        first_token(&client, &person(0)).await;
        let (mut base, mut prompt, mut generation) = (Vec::new(), Vec::new(), Vec::new());
        for i in 1..=RUNS {
            base.push(first_token(&client, &person(i)).await);
            prompt
                .push(with_speculation(&client, spec(i, At::Prompt), &person(i), At::Prompt).await);
            generation.push(
                with_speculation(&client, spec(i, At::Generation), &person(i), At::Generation)
                    .await,
            );
        }
        let b = median(base.clone());
        println!("first token of the person's request, {RUNS} runs each (median / p90):");
        println!(
            "  no speculation:                        {:7.1} / {:7.1} ms",
            ms(b),
            ms(p90(base))
        );
        for (name, v) in [
            ("speculation cancelled in its prompt:", prompt),
            ("speculation cancelled mid-answer:", generation),
        ] {
            let m = median(v.clone());
            println!(
                "  {name:<38} {:7.1} / {:7.1} ms  (+{:.1} ms at the median)",
                ms(m),
                ms(p90(v)),
                ms(m) - ms(b)
            );
        }
    });
}
