//! A tool call's question to the person (`ask_user`, leaving plan mode) put to the
//! client: `ask_user` as a form (ACP elicitation) where the client fills them in, and
//! leaving plan mode as a permission request, which every client shows. With no way to
//! ask, the question is dropped: `ask_user` then tells the model nobody can answer, as
//! in `saki exec`.

use crate::updates;
use agent_client_protocol::v1::schema::{
    ContentBlock, CreateElicitationRequest, ElicitationAction, ElicitationContentValue,
    ElicitationFormMode, ElicitationMode, ElicitationSchema, ElicitationScope,
    ElicitationSessionScope, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, StringPropertySchema, TextContent, ToolCallContent, ToolCallId,
    ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use saki_engine::{QuestionKind, QuestionRequest, LEAVE_PLAN_OPTIONS};

/// The form field the answer comes back in.
const FIELD: &str = "answer";

/// Asks in a task of its own; the engine waits on `request.reply`.
pub(crate) fn put(request: QuestionRequest, session: &str, forms: bool, cx: &ConnectionTo<Client>) {
    let session = session.to_owned();
    let cx = cx.clone();
    match request.kind.clone() {
        QuestionKind::LeavePlan { plan } => {
            tokio::spawn(leave_plan(request, plan, session, cx));
        }
        QuestionKind::Ask if forms => {
            tokio::spawn(ask(request, session, cx));
        }
        // Nobody can answer here: dropping the reply says so.
        QuestionKind::Ask => drop(request),
    }
}

async fn ask(request: QuestionRequest, session: String, cx: ConnectionTo<Client>) {
    let mut field = StringPropertySchema::new();
    if !request.options.is_empty() {
        if request.free_text {
            field = field.description(format!("For example: {}", request.options.join(" · ")));
        } else {
            field.enum_values = Some(request.options.clone());
        }
    }
    let scope = ElicitationSessionScope::new(session)
        .tool_call_id(ToolCallId::new(request.call_id.clone()));
    let form = ElicitationFormMode::new(
        ElicitationScope::Session(scope),
        ElicitationSchema::new().property(FIELD, field, true),
    );
    let asked =
        CreateElicitationRequest::new(ElicitationMode::Form(form), request.question.clone());
    let answer = match cx.send_request(asked).block_task().await {
        Ok(response) => match response.action {
            ElicitationAction::Accept(accepted) => accepted
                .content
                .and_then(|mut fields| fields.remove(FIELD))
                .and_then(|value| match value {
                    ElicitationContentValue::String(text) => Some(text),
                    _ => None,
                }),
            _ => None,
        },
        Err(e) => {
            tracing::debug!(error = %e, "the client did not answer a question");
            None
        }
    };
    let _ = request.reply.send(answer);
}

/// Leaving plan mode as a permission request on the `exit_plan_mode` call: the plan is
/// its content, and the options are the modes to switch to, or staying.
async fn leave_plan(
    request: QuestionRequest,
    plan: String,
    session: String,
    cx: ConnectionTo<Client>,
) {
    let [default, auto_edit, stay] = LEAVE_PLAN_OPTIONS;
    let options = vec![
        PermissionOption::new(
            default,
            "Yes, and ask before edits",
            PermissionOptionKind::AllowOnce,
        ),
        PermissionOption::new(
            auto_edit,
            "Yes, and make edits without asking",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(stay, "No, keep planning", PermissionOptionKind::RejectOnce),
    ];
    let fields = ToolCallUpdateFields::new()
        .title("Ready to leave plan mode".to_owned())
        .kind(updates::tool_kind("exit_plan_mode"))
        .content(vec![ToolCallContent::from(ContentBlock::Text(
            TextContent::new(plan),
        ))]);
    let asked = RequestPermissionRequest::new(
        session,
        ToolCallUpdate::new(request.call_id.clone(), fields),
        options,
    );
    let answer = match cx.send_request(asked).block_task().await {
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(chosen) => Some(chosen.option_id.0.to_string()),
            _ => None,
        },
        Err(_) => None,
    };
    let _ = request.reply.send(answer);
}
