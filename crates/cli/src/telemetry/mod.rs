//! OpenTelemetry traces (`[otel]` in config; off unless `endpoint` is set): a span for
//! each turn, each model request (model, tokens, cached tokens), each tool call (name,
//! status, duration) and each speculation (accepted or its boundary, the time it saved),
//! exported with OTLP over HTTP/protobuf (or gRPC, in a build with the `otel-grpc`
//! feature). Spans are made from the engine's events as a front end sees them, so the
//! engine knows nothing of telemetry. Nothing of prompts, answers, arguments or file
//! contents is sent unless `log_content = true`.

mod spans;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

pub use spans::Spans;

use saki_engine::EngineEvent;
use tokio::sync::mpsc::UnboundedReceiver;

/// `[otel]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtelConfig {
    /// The collector: `http://localhost:4318` (HTTP; `/v1/traces` is added unless the
    /// URL ends with it) or `http://localhost:4317` (gRPC). Unset: no telemetry.
    pub endpoint: Option<String>,
    /// `http/protobuf` (default) or `grpc`.
    pub protocol: Option<String>,
    /// Sent with every export (an API key of the collector's).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Put prompts, answers, tool arguments and results in the spans (default false).
    pub log_content: Option<bool>,
}

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("otel.protocol `{0}`: expected \"http/protobuf\" or \"grpc\"")]
    Protocol(String),
    #[cfg(not(feature = "otel-grpc"))]
    #[error("otel.protocol = \"grpc\" needs a saki built with `--features otel-grpc`; use \"http/protobuf\"")]
    NoGrpc,
    #[error("otel: cannot build the exporter: {0}")]
    Exporter(String),
}

/// The exporter and where spans come from; flushed when dropped.
pub struct Telemetry {
    provider: SdkTracerProvider,
    pub spans: Spans,
}

/// How long one export may take: saki never waits long on a collector.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// The traces endpoint of an HTTP collector whose base URL is `endpoint`.
pub fn traces_url(endpoint: &str) -> String {
    let base = endpoint.trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    }
}

impl Telemetry {
    /// Telemetry as `config` asks; `None` when it is off (no endpoint).
    pub fn start(config: &OtelConfig) -> Result<Option<Self>, TelemetryError> {
        let Some(endpoint) = config.endpoint.as_deref().filter(|e| !e.trim().is_empty()) else {
            return Ok(None);
        };
        let headers: HashMap<String, String> = config.headers.clone().into_iter().collect();
        let exporter = match config.protocol.as_deref().unwrap_or("http/protobuf") {
            "http/protobuf" => opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(traces_url(endpoint))
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_headers(headers)
                .with_timeout(EXPORT_TIMEOUT)
                .build(),
            "grpc" => grpc_exporter(endpoint, headers)?,
            other => return Err(TelemetryError::Protocol(other.to_owned())),
        }
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                Resource::builder()
                    .with_service_name("saki")
                    .with_attribute(opentelemetry::KeyValue::new(
                        "service.version",
                        env!("CARGO_PKG_VERSION"),
                    ))
                    .build(),
            )
            .build();
        let tracer = provider.tracer("saki");
        Ok(Some(Self {
            provider,
            spans: Spans::new(tracer, config.log_content.unwrap_or(false)),
        }))
    }

    /// Ends what is open and sends every span not sent yet.
    pub fn shutdown(mut self) {
        self.spans.end_all();
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "otel: the last spans were not exported");
        }
    }
}

/// Telemetry as config asks, or `None`; a config it cannot use is reported as an alert
/// and the session runs without it.
pub fn start_or_warn(
    config: &OtelConfig,
    events: &tokio::sync::mpsc::UnboundedSender<EngineEvent>,
) -> Option<Telemetry> {
    match Telemetry::start(config) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            let _ = events.send(EngineEvent::Alert {
                level: saki_engine::Level::Warn,
                message: format!("{e}; no telemetry this session"),
            });
            None
        }
    }
}

/// Telemetry between the engine and a front end ([`tap`]); [`finish`] ends it.
pub struct Tap {
    task: tokio::task::JoinHandle<Telemetry>,
    stop: tokio::sync::oneshot::Sender<()>,
}

/// Puts telemetry between the engine and a front end: every event is seen, then passed
/// on. Without telemetry the channel is handed back as it is.
pub fn tap(
    mut events: UnboundedReceiver<EngineEvent>,
    telemetry: Option<Telemetry>,
) -> (UnboundedReceiver<EngineEvent>, Option<Tap>) {
    let Some(mut telemetry) = telemetry else {
        return (events, None);
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (stop, mut stopped) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => {
                        telemetry.spans.observe(&event);
                        // A front end that is gone still lets the spans see the rest.
                        let _ = tx.send(event);
                    }
                    None => break,
                },
                _ = &mut stopped => {
                    while let Ok(event) = events.try_recv() {
                        telemetry.spans.observe(&event);
                    }
                    break;
                }
            }
        }
        telemetry
    });
    (rx, Some(Tap { task, stop }))
}

/// Ends the tap and sends the last spans (the export blocks: off the runtime threads).
pub async fn finish(tap: Option<Tap>) {
    let Some(tap) = tap else {
        return;
    };
    let _ = tap.stop.send(());
    if let Ok(telemetry) = tap.task.await {
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    }
}

#[cfg(feature = "otel-grpc")]
fn grpc_exporter(
    endpoint: &str,
    headers: HashMap<String, String>,
) -> Result<
    Result<opentelemetry_otlp::SpanExporter, opentelemetry_otlp::ExporterBuildError>,
    TelemetryError,
> {
    use opentelemetry_otlp::WithTonicConfig;
    let mut metadata = tonic::metadata::MetadataMap::new();
    for (name, value) in headers {
        let (Ok(name), Ok(value)) = (
            tonic::metadata::MetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes()),
            value.parse(),
        ) else {
            return Err(TelemetryError::Exporter(format!(
                "header `{name}` cannot be sent"
            )));
        };
        metadata.insert(name, value);
    }
    Ok(opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .with_metadata(metadata)
        .with_timeout(EXPORT_TIMEOUT)
        .build())
}

#[cfg(not(feature = "otel-grpc"))]
fn grpc_exporter(
    _endpoint: &str,
    _headers: HashMap<String, String>,
) -> Result<
    Result<opentelemetry_otlp::SpanExporter, opentelemetry_otlp::ExporterBuildError>,
    TelemetryError,
> {
    Err(TelemetryError::NoGrpc)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
