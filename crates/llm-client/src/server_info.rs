//! Facts a local server knows about itself: whether it is ready, and its real context
//! window (llama.cpp's `GET /props`, Ollama's `POST /api/show`), so compaction and the
//! token gauge use the window the server really has instead of a guess.

use serde_json::Value;
use std::time::Duration;

/// How long one question to the server may take: it must never hold up a session.
const ASK_TIMEOUT: Duration = Duration::from_secs(3);

/// Ollama's context when a model sets no `num_ctx` (and the server no
/// `OLLAMA_CONTEXT_LENGTH`): requests beyond it are cut silently, so it is the safe guess.
pub const OLLAMA_DEFAULT_CONTEXT: u64 = 4096;

/// The server root for an OpenAI-style base URL: `http://h:8080/v1` → `http://h:8080`.
fn root(base_url: &str) -> &str {
    let trimmed = base_url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed)
}

fn client(timeout: Duration) -> Option<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| tracing::debug!(error = %e, "server_info: no HTTP client"))
        .ok()
}

/// Which local server answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    LlamaCpp,
    Ollama,
}

/// What a local server said about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerInfo {
    pub kind: ServerKind,
    /// Tokens per request: llama.cpp's per-slot `n_ctx`, or Ollama's `num_ctx`.
    pub context_window: Option<u64>,
    /// Whether the model reads images (llama.cpp: a multimodal projector is loaded;
    /// Ollama: the model lists the `vision` capability), when the server says.
    pub vision: Option<bool>,
    /// The model's parameter count (llama.cpp: `/v1/models` `meta.n_params`; Ollama:
    /// `model_info` `general.parameter_count`), when the server says.
    pub parameters: Option<u64>,
    /// Whether the model's chat template takes a tool list (llama.cpp:
    /// `chat_template_caps.supports_tool_calls`; Ollama: the `tools` capability).
    pub template_tools: Option<bool>,
}

/// Whether `base_url` names this machine or a private network (loopback, RFC 1918,
/// link-local, IPv6 unique-local, `localhost`): a server there is asked what it is. A
/// public host is never sent a request it did not ask for (a gateway may bill it).
pub fn is_private_url(base_url: &str) -> bool {
    use std::net::IpAddr;
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Ok(IpAddr::V6(ip)) => {
            let first = ip.segments()[0];
            ip.is_loopback()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_private())
        }
        Err(_) => {
            let name = host.to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    }
}

/// Asks the server behind `base_url` what it is (llama.cpp's `/props`, then Ollama's
/// `/api/show` for `model`); `None` when neither answers.
pub async fn discover(base_url: &str, model: &str, api_key: Option<&str>) -> Option<ServerInfo> {
    let http = client(ASK_TIMEOUT)?;
    let root = root(base_url);
    if let Some(props) = get_json(&http, &format!("{root}/props"), api_key).await {
        let models = get_json(&http, &format!("{root}/v1/models"), api_key).await;
        return Some(ServerInfo {
            kind: ServerKind::LlamaCpp,
            context_window: llamacpp_context(&props),
            vision: props.pointer("/modalities/vision").and_then(Value::as_bool),
            parameters: models.as_ref().and_then(llamacpp_parameters),
            template_tools: props
                .pointer("/chat_template_caps/supports_tool_calls")
                .and_then(Value::as_bool),
        });
    }
    let show = http
        .post(format!("{root}/api/show"))
        .json(&serde_json::json!({ "model": model }))
        .send()
        .await
        .ok()?;
    if !show.status().is_success() {
        return None;
    }
    let show = show.json::<Value>().await.ok()?;
    Some(ServerInfo {
        kind: ServerKind::Ollama,
        context_window: ollama_context(&show),
        vision: ollama_vision(&show),
        parameters: show
            .pointer("/model_info/general.parameter_count")
            .and_then(Value::as_u64),
        template_tools: ollama_capability(&show, "tools"),
    })
}

/// The ids of the models the server behind `base_url` serves (`GET /v1/models`, which
/// llama.cpp and Ollama both answer); `None` when it does not answer in time.
pub async fn served_models(base_url: &str, api_key: Option<&str>) -> Option<Vec<String>> {
    let http = client(ASK_TIMEOUT)?;
    let url = format!("{}/v1/models", root(base_url));
    Some(model_ids(&get_json(&http, &url, api_key).await?))
}

/// `GET url` (with the key, if any) as JSON; `None` on any failure or a non-2xx status.
async fn get_json(http: &reqwest::Client, url: &str, api_key: Option<&str>) -> Option<Value> {
    let mut request = http.get(url);
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json::<Value>().await.ok()
}

/// The `id`s of an OpenAI-style model list (`{"data": [{"id": …}, …]}`).
pub fn model_ids(models: &Value) -> Vec<String> {
    models
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `meta.n_params` of the first model `/v1/models` lists (llama.cpp serves one).
pub fn llamacpp_parameters(models: &Value) -> Option<u64> {
    models
        .pointer("/data/0/meta/n_params")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

/// `default_generation_settings.n_ctx` of `/props`: the context of one slot.
pub fn llamacpp_context(props: &Value) -> Option<u64> {
    props
        .pointer("/default_generation_settings/n_ctx")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

/// `num_ctx` from `/api/show`'s `parameters`, else Ollama's default, never more than the
/// model was trained for (`model_info.<arch>.context_length`).
pub fn ollama_context(show: &Value) -> Option<u64> {
    let trained = show
        .get("model_info")
        .and_then(Value::as_object)
        .and_then(|info| {
            info.iter()
                .find(|(k, _)| k.ends_with(".context_length"))
                .and_then(|(_, v)| v.as_u64())
        });
    let configured = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|params| {
            params.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u64>().ok())
                    .flatten()
            })
        });
    if trained.is_none() && configured.is_none() {
        return None;
    }
    let window = configured.unwrap_or(OLLAMA_DEFAULT_CONTEXT);
    Some(trained.map_or(window, |t| window.min(t)))
}

/// Whether `/api/show`'s `capabilities` list `vision` (`None` for an Ollama too old to
/// list capabilities).
pub fn ollama_vision(show: &Value) -> Option<bool> {
    ollama_capability(show, "vision")
}

fn ollama_capability(show: &Value, capability: &str) -> Option<bool> {
    show.get("capabilities")
        .and_then(Value::as_array)
        .map(|caps| caps.iter().any(|c| c == capability))
}

/// Waits until `GET {root}/health` answers 200 (llama.cpp says "loading model" with 503
/// until then); `false` when `deadline` passes first.
pub async fn wait_until_ready(base_url: &str, deadline: Duration) -> bool {
    let Some(http) = client(ASK_TIMEOUT) else {
        return false;
    };
    let url = format!("{}/health", root(base_url));
    let start = std::time::Instant::now();
    while start.elapsed() < deadline {
        if let Ok(response) = http.get(&url).send().await {
            if response.status().is_success() {
                return true;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_list_gives_its_ids() {
        let list = serde_json::json!({"object": "list", "data": [
            {"id": "qwen2.5-coder:7b"}, {"id": ""}, {"name": "no id"}, {"id": "llama3.2"}]});
        assert_eq!(model_ids(&list), ["qwen2.5-coder:7b", "llama3.2"]);
        assert!(model_ids(&serde_json::json!({"models": []})).is_empty());
        assert!(model_ids(&serde_json::json!("not a list")).is_empty());
    }

    #[test]
    fn only_this_machine_and_private_networks_are_asked() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434",
            "http://[::1]:8080/v1",
            "http://10.1.2.3/v1",
            "http://192.168.1.20:8000/v1",
            "http://172.16.0.5/v1",
            "http://[fd00::1]/v1",
        ] {
            assert!(is_private_url(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "https://openrouter.ai/api/v1",
            "http://8.8.8.8/v1",
            "http://172.32.0.1/v1",
            "not a url",
        ] {
            assert!(!is_private_url(url), "{url}");
        }
    }
    use serde_json::json;

    #[test]
    fn llamacpp_reports_the_slot_context() {
        let props = json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1});
        assert_eq!(llamacpp_context(&props), Some(8192));
        assert_eq!(llamacpp_context(&json!({"total_slots": 1})), None);
        let models = json!({"object": "list", "data": [{"id": "local",
            "meta": {"n_ctx": 4096, "n_params": 630_167_424_u64}}]});
        assert_eq!(llamacpp_parameters(&models), Some(630_167_424));
        assert_eq!(llamacpp_parameters(&json!({"data": []})), None);
        assert_eq!(root("http://h:8080/v1/"), "http://h:8080");
        assert_eq!(root("http://h:11434"), "http://h:11434");
    }

    #[test]
    fn ollama_uses_num_ctx_else_its_default_within_the_trained_length() {
        let show = json!({
            "parameters": "stop \"<|im_end|>\"\nnum_ctx 16384",
            "model_info": {"qwen2.context_length": 32768}
        });
        assert_eq!(ollama_context(&show), Some(16384));
        let show = json!({"model_info": {"qwen2.context_length": 32768}});
        assert_eq!(ollama_context(&show), Some(OLLAMA_DEFAULT_CONTEXT));
        let show = json!({"model_info": {"tiny.context_length": 2048}});
        assert_eq!(ollama_context(&show), Some(2048));
        assert_eq!(ollama_context(&json!({"license": "x"})), None);
    }
}
