//! The `tracing` span of each request (target `mqstate::call`): its name and its fields, the
//! database-client names of OpenTelemetry with the core's values. Alone in its executable:
//! a scoped subscriber (`set_default`) misses spans when other tests in the same process hit
//! the callsite first, on threads without it (tracing's interest cache; 16 runs in 40).

mod support;

use std::time::Duration;

use mqstate::SetOptions;
use support::Env;

/// Records the spans of target `mqstate::call`: name and fields as text.
#[derive(Clone, Default)]
struct CallSpans(std::sync::Arc<std::sync::Mutex<Vec<std::collections::BTreeMap<String, String>>>>);

struct Fields<'a>(&'a mut std::collections::BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_owned(),
            format!("{value:?}").trim_matches('"').to_owned(),
        );
    }
}

impl<S> tracing_subscriber::Layer<S> for CallSpans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().target() != "mqstate::call" {
            return;
        }
        let mut fields = std::collections::BTreeMap::new();
        fields.insert("span".to_owned(), attrs.metadata().name().to_owned());
        attrs.record(&mut Fields(&mut fields));
        ctx.span(id)
            .unwrap()
            .extensions_mut()
            .insert(self.0.lock().unwrap().len());
        self.0.lock().unwrap().push(fields);
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Some(i) = ctx.span(id).unwrap().extensions().get::<usize>() {
            values.record(&mut Fields(&mut self.0.lock().unwrap()[*i]));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_is_a_tracing_span_with_the_database_fields() {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = CallSpans::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let env = Env::embedded().await;
    let client = env.client("spans").await;
    client
        .set("span-key", "v", SetOptions::default())
        .await
        .unwrap();
    let refused = client
        .set(
            "span-key",
            "w",
            SetOptions {
                timeout: Some(Duration::ZERO),
                ..SetOptions::default()
            },
        )
        .await;
    client.shutdown().await;
    let got = spans.0.lock().unwrap().clone();
    let sets: Vec<_> = got.iter().filter(|f| f["otel.name"] == "SET").collect();
    assert_eq!(sets.len(), 2, "{got:?}");
    let (port, first) = (env.port.to_string(), sets[0]);
    assert_eq!(first["span"], "mqstate.call");
    assert_eq!(first["otel.kind"], "client");
    assert_eq!(
        first["db.system.name"],
        mqstate::telemetry::names::DB_SYSTEM
    );
    assert_eq!(first["db.operation.name"], "SET");
    assert_eq!(first["server.address"], "127.0.0.1");
    assert_eq!(first["server.port"], port);
    assert!(!first.contains_key("error.type"), "it succeeded");
    let refused = refused.expect_err("a zero timeout is refused");
    assert_eq!(sets[1]["error.type"], refused.kind().code());
    assert_eq!(sets[1]["error.type"], "invalid_argument");
}
