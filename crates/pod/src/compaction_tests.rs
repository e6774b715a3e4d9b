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
    let plan = plan_prune(&h, 0).unwrap();
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
    assert_eq!(plan_prune(&small, 0), None);

    // The walk stops at the boundary and at an already pruned output.
    assert_eq!(
        plan_prune(&h, 12),
        None,
        "after the boundary only one 15k output passes the protection: too little"
    );
    let mut marked = h.clone();
    if let Item::ToolResult { content, .. } = &mut marked[4 * 3 + 2] {
        *content = format!("{PRUNED_MARKER} read_file");
    }
    assert_eq!(plan_prune(&marked, 0), None, "stops at the earlier prune");
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
    assert_eq!(plan_prune(&h, 0), None);
}

#[test]
fn summaries_are_verified_and_merge_the_previous_snapshot() {
    let tail = vec![user(10), answer(10)];
    let before = 10_000;
    assert_eq!(
        compacted_history("  ", &tail, before),
        Err(CompactionStatus::FailedEmptySummary)
    );
    assert_eq!(
        compacted_history(&"x".repeat(100_000), &tail, before),
        Err(CompactionStatus::FailedInflated)
    );
    let (h, after) =
        compacted_history("<state_snapshot>goal: fix</state_snapshot>", &tail, before).unwrap();
    assert!(after < before);
    assert_eq!(&h[2..], &tail[..]);
    assert_eq!(
        previous_snapshot(&h),
        Some("<state_snapshot>goal: fix</state_snapshot>")
    );
    let ask = summary_instruction(previous_snapshot(&h));
    assert!(ask.contains("newer facts win") && ask.contains("goal: fix"));
    assert!(!summary_instruction(None).contains("earlier snapshot"));
}
