use super::*;
use saki_llm_worker::ToolExecutionContext;

fn user(n: usize) -> Item {
    Item::user("u".repeat(n))
}
fn answer(n: usize) -> Item {
    Item::AssistantText {
        text: "a".repeat(n),
    }
}
fn ctx(i: usize) -> ToolExecutionContext {
    ToolExecutionContext {
        call_id: format!("c{i}"),
        batch_id: format!("b{i}"),
        call_index: 0,
    }
}
fn call(i: usize) -> Item {
    Item::ToolCall {
        name: "read_file".into(),
        arguments: "{}".into(),
        signature: None,
        ctx: ctx(i),
    }
}
fn result(i: usize, tokens: usize) -> Item {
    Item::ToolResult {
        name: "read_file".into(),
        content: "abcd".repeat(tokens),
        status: ToolResultStatus::Success,
        ctx: ctx(i),
    }
}

#[test]
fn split_points() {
    assert_eq!(find_split_point(&[], 0.7), 0, "empty history");
    assert_eq!(
        find_split_point(&[user(10), user(10), user(10)], 0.7),
        2,
        "all user: the first at 70%"
    );
    assert_eq!(
        find_split_point(&[answer(10), answer(10)], 0.7),
        2,
        "all model, ending in an answer: everything"
    );
    assert_eq!(
        find_split_point(&[user(1000), answer(10), user(10), answer(10)], 0.7),
        2,
        "a long first message"
    );
    // Tool pairs are never split: the split lands on a user message only.
    let h = [
        user(10),
        call(1),
        result(1, 50),
        answer(10),
        user(10),
        call(2),
        result(2, 50),
    ];
    let s = find_split_point(&h, 0.7);
    assert_eq!(s, 4);
    assert!(matches!(h[s], Item::User { .. }));
    // Ending in a model turn with tool calls: never past the last user message.
    let h = [user(10), answer(500), user(10), call(1)];
    assert_eq!(find_split_point(&h, 0.7), 2);
    // Ending in a model turn without tool calls: everything may go.
    let h = [user(10), answer(500), user(10), answer(500)];
    assert_eq!(find_split_point(&h, 0.99), 4);
}

#[test]
fn prune_protects_recent_turns_and_respects_thresholds() {
    // Old turns with big outputs, then two recent turns.
    let mut h = Vec::new();
    for i in 0..6 {
        h.extend([user(5), call(i), result(i, 15_000), answer(5)]);
    }
    h.extend([
        user(5),
        call(90),
        result(90, 30_000),
        answer(5),
        user(5),
        answer(5),
    ]);
    let plan = plan_prune(&h, 0, PruneLimits::default()).unwrap();
    // Newest-first: outputs of the 2 protected turns are skipped; 15k+15k+15k passes 40k
    // at the third, which is pruned with all older ones.
    let pruned: Vec<usize> = plan.indices.iter().map(|&i| i / 4).collect();
    assert_eq!(pruned, [3, 2, 1, 0]);
    assert_eq!(plan.tokens_freed, 60_000);
    assert!(
        !plan.indices.contains(&(24 + 2)),
        "the protected turn's output stays"
    );

    // Not enough to free: nothing happens.
    let small: Vec<Item> = [
        user(5),
        call(1),
        result(1, 20_000),
        user(5),
        call(2),
        result(2, 15_000),
        user(5),
        user(5),
    ]
    .into();
    assert_eq!(plan_prune(&small, 0, PruneLimits::default()), None);

    // The walk stops at the boundary and at an already pruned output.
    assert_eq!(
        plan_prune(&h, 12, PruneLimits::default()),
        None,
        "after the boundary only one 15k output passes the protection: too little"
    );
    let mut marked = h.clone();
    if let Item::ToolResult { content, .. } = &mut marked[4 * 3 + 2] {
        *content = format!("{PRUNED_MARKER} read_file");
    }
    assert_eq!(
        plan_prune(&marked, 0, PruneLimits::default()),
        None,
        "stops at the earlier prune"
    );
}

#[test]
fn a_small_window_prunes_the_current_turn_but_its_newest_output() {
    // One turn reading three pages of about 1,100 tokens each, on a 4096-token slot.
    let h: Vec<Item> = vec![
        user(5),
        call(1),
        result(1, 1_100),
        call(2),
        result(2, 1_100),
        call(3),
        result(3, 1_100),
    ];
    let small = PruneLimits::for_window(4096);
    assert_eq!(
        (small.protect, small.minimum, small.protected_turns),
        (512, 128, 0)
    );
    let plan = plan_prune(&h, 0, small).unwrap();
    assert_eq!(
        plan.indices,
        [4, 2],
        "the newest page stays; the older two go"
    );
    assert_eq!(plan.tokens_freed, 2_200);
    // One output alone is never pruned: the model is about to act on it.
    assert_eq!(plan_prune(&h[..3], 0, small), None);
    // A large window keeps the current turn whole, as before.
    assert_eq!(PruneLimits::for_window(128_000), PruneLimits::default());
    assert_eq!(plan_prune(&h, 0, PruneLimits::for_window(128_000)), None);
}

#[test]
fn overflow_decision_at_the_edges() {
    // usable = 10_000 - 2_000 = 8_000; 0.85 × 8_000 = 6_800
    assert!(!should_compact(6_799, 10_000, 2_000, DEFAULT_THRESHOLD));
    assert!(should_compact(6_800, 10_000, 2_000, DEFAULT_THRESHOLD));
    assert!(
        !should_compact(1_000_000, 1_000, 2_000, DEFAULT_THRESHOLD),
        "no usable window: never"
    );
}

#[test]
fn token_accounting_is_calibrated_by_the_last_report() {
    let h = vec![user(400), answer(400), user(400)];
    let raw = current_tokens(&h, None);
    assert_eq!(raw, 3 * (100 + 4));
    // The provider counted the first two items as twice our estimate: the third scales too.
    assert_eq!(current_tokens(&h, Some((2, 416))), 416 + 208);
    // Wild reports are clamped.
    assert_eq!(current_tokens(&h, Some((2, 100_000))), 100_000 + 208);
}

#[test]
fn pruned_outputs_show_the_marker_and_a_one_line_summary() {
    let mut h = vec![user(5), call(1), result(1, 10)];
    let edit = saki_llm_worker::HistoryEdit {
        pruned: prune_replacements(
            &h,
            &PrunePlan {
                indices: vec![2],
                tokens_freed: 10,
            },
        ),
        ..Default::default()
    };
    edit.apply(&mut h).unwrap();
    let Item::ToolResult { content, .. } = &h[2] else {
        panic!()
    };
    assert_eq!(
        content,
        "[Old tool result content cleared] read_file {}: 40 bytes, 1 lines"
    );
    assert_eq!(plan_prune(&h, 0, PruneLimits::default()), None);
}

/// Every tool result at or after `split` has its call at or after `split`, and the other way.
fn pairs_kept(h: &[Item], split: usize) -> bool {
    let ids = |range: &[Item], calls: bool| -> Vec<String> {
        range
            .iter()
            .filter_map(|i| match (i, calls) {
                (Item::ToolCall { ctx, .. }, true) | (Item::ToolResult { ctx, .. }, false) => {
                    Some(ctx.call_id.clone())
                }
                _ => None,
            })
            .collect()
    };
    let (head, tail) = h.split_at(split);
    let mut a = ids(tail, true);
    let mut b = ids(tail, false);
    a.sort();
    b.sort();
    let (mut c, mut d) = (ids(head, true), ids(head, false));
    c.sort();
    d.sort();
    a == b && c == d
}

#[test]
fn one_long_turn_splits_between_its_tool_rounds() {
    // One turn of 20 rounds: no user message to split at but the first.
    let mut h = vec![user(10)];
    for i in 0..20 {
        h.extend([call(i), result(i, 100)]);
    }
    let s = find_split_point(&h, 0.7);
    assert!(s > h.len() / 2 && s < h.len(), "{s}");
    assert!(
        matches!(h[s], Item::ToolCall { .. }),
        "a round starts there"
    );
    assert!(pairs_kept(&h, s));

    // Parallel calls: never between a batch's calls, or between a call and its result.
    let mut h = vec![user(10)];
    for i in 0..10 {
        let (a, b) = (2 * i, 2 * i + 1);
        h.extend([
            Item::Thinking {
                text: "t".into(),
                signature: None,
            },
            call(a),
            call(b),
            result(a, 100),
            result(b, 100),
        ]);
    }
    for fraction in [0.1, 0.3, 0.5, 0.7, 0.9] {
        let s = find_split_point(&h, fraction);
        assert!(
            matches!(h[s], Item::Thinking { .. }),
            "{fraction}: a response starts at {s}"
        );
        assert!(pairs_kept(&h, s), "{fraction}");
    }
}

#[test]
fn a_current_turn_of_at_most_half_the_history_is_kept_whole() {
    let mut h = vec![user(10), answer(2_000), user(10)];
    for i in 0..4 {
        h.extend([call(i), result(i, 100)]);
    }
    // The last turn is about 1,700 of 3,700 characters: split at its user message, as
    // the spec says, although that keeps more than 30%.
    assert_eq!(find_split_point(&h, 0.7), 2);
    // Twice as many rounds: more than half, so it is split inside.
    for i in 4..12 {
        h.extend([call(i), result(i, 100)]);
    }
    let s = find_split_point(&h, 0.7);
    assert!(s > 2 && matches!(h[s], Item::ToolCall { .. }), "{s}");
    assert!(pairs_kept(&h, s));
}
