//! The server's counters as Prometheus metrics, read at each scrape ([`MetricsReader`]) and
//! written by `prometheus-client`'s encoders (the text format 0.0.4, or OpenMetrics).
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `mqstate_requests_total` | counter | `command` (SET, GET, DEL, VDEL, KEYNOTIFY, SCAN, other), `outcome` (ok, store_error, failed, dropped, duplicate) |
//! | `mqstate_request_duration_seconds` | histogram | |
//! | `mqstate_keys`, `mqstate_data_bytes`, `mqstate_dedup_entries` | gauge | |
//! | `mqstate_journal_bytes` | gauge | |
//! | `mqstate_journal_compactions_total` | counter | |
//! | `mqstate_sessions` | gauge | `state` (online, offline): embedded broker only |
//! | `mqstate_offline_sessions_ended_total` | counter | embedded broker only |
//! | `mqstate_notifications_total`, `mqstate_notifications_dropped_total` | counter | |
//! | `mqstate_responses_dropped_total`, `mqstate_registrations_dropped_total` | counter | |
//! | `mqstate_spans_exported_total` | counter | with `--otlp-endpoint` only |
//! | `mqstate_spans_dropped_total` | counter | `reason` (queue_full, export_failed); with `--otlp-endpoint` only |
//! | `mqstate_build_info` | gauge (1) | `version` |

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use mqstate_server::MetricsReader;
use mqstate_server::metrics::{COMMANDS, LATENCY_BUCKETS, Outcome};

/// Content type of the Prometheus text format (version 0.0.4).
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Content type of OpenMetrics text (version 1.0.0).
const OPENMETRICS_TEXT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Encodes the server's metrics on demand.
pub struct Exporter {
    registry: Registry,
}

impl Exporter {
    /// An exporter of what `reader` reads.
    pub fn new(reader: MetricsReader) -> Exporter {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Snapshot(reader)));
        Exporter { registry }
    }

    /// The metrics now, and their content type: OpenMetrics if `openmetrics`, else the
    /// Prometheus text format.
    pub fn encode(&self, openmetrics: bool) -> Result<(String, &'static str), std::fmt::Error> {
        let mut out = String::new();
        if openmetrics {
            prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
            Ok((out, OPENMETRICS_TEXT))
        } else {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)?;
            Ok((out, PROMETHEUS_TEXT))
        }
    }
}

/// Reads the counters once per scrape.
#[derive(Debug)]
struct Snapshot(MetricsReader);

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let m = self.0.read();
        let r = &m.requests;

        let mut family = encoder.encode_descriptor(
            "mqstate_requests",
            "Requests the store received, by command and outcome (ok: answered, not applied \
             included; store_error: answered with a state store error; failed: answered with \
             an RPC failure; dropped: not answered; duplicate: a redelivered write answered \
             again)",
            None,
            MetricType::Counter,
        )?;
        for (c, command) in COMMANDS.iter().enumerate() {
            for (o, outcome) in Outcome::ALL.iter().enumerate() {
                let labels = [("command", *command), ("outcome", outcome.as_str())];
                family
                    .encode_family(&labels)?
                    .encode_counter::<NoLabelSet, _, u64>(&r.requests[c][o], None)?;
            }
        }

        let buckets: Vec<(f64, u64)> = LATENCY_BUCKETS
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(r.buckets.iter().copied())
            .collect();
        encoder
            .encode_descriptor(
                "mqstate_request_duration",
                "How long the store took to answer a request, from taking it to handing its \
                 answer to the broker (broker queues excluded)",
                Some(&Unit::Seconds),
                MetricType::Histogram,
            )?
            .encode_histogram::<NoLabelSet>(
                r.latency_sum.as_secs_f64(),
                r.buckets.iter().sum(),
                &buckets,
                None,
            )?;

        gauge(&mut encoder, "mqstate_keys", "Keys held", r.keys)?;
        gauge(
            &mut encoder,
            "mqstate_data_bytes",
            "Bytes of the keys and values held",
            r.data_bytes,
        )?;
        gauge(
            &mut encoder,
            "mqstate_dedup_entries",
            "Answers kept to answer a redelivered write again",
            r.dedup_entries,
        )?;
        gauge(
            &mut encoder,
            "mqstate_journal_bytes",
            "Bytes of the persistence log (0 without --data-dir)",
            r.journal_bytes,
        )?;
        counter(
            &mut encoder,
            "mqstate_journal_compactions",
            "Compactions of the persistence log since start",
            r.journal_compactions,
        )?;
        if let (Some(online), Some(offline)) = (m.sessions_online, m.sessions_offline) {
            let mut family = encoder.encode_descriptor(
                "mqstate_sessions",
                "MQTT sessions on the embedded broker: online (a connection open) or offline \
                 (kept for a client that left without ending it)",
                None,
                MetricType::Gauge,
            )?;
            family
                .encode_family(&[("state", "online")])?
                .encode_gauge(&online)?;
            family
                .encode_family(&[("state", "offline")])?
                .encode_gauge(&offline)?;
            counter(
                &mut encoder,
                "mqstate_offline_sessions_ended",
                "Offline sessions ended because more than --max-offline-sessions were kept",
                m.stats.offline_sessions_ended,
            )?;
        }
        counter(
            &mut encoder,
            "mqstate_notifications",
            "Notifications handed to the broker",
            m.stats.notifications,
        )?;
        counter(
            &mut encoder,
            "mqstate_notifications_dropped",
            "Notifications dropped because their client's queue was full",
            m.stats.notifications_dropped,
        )?;
        counter(
            &mut encoder,
            "mqstate_responses_dropped",
            "Responses dropped because the response queue was full",
            m.stats.responses_dropped,
        )?;
        counter(
            &mut encoder,
            "mqstate_registrations_dropped",
            "KEYNOTIFY registrations dropped because their client left",
            m.stats.registrations_dropped,
        )?;
        if let Some(spans) = m.spans {
            counter(
                &mut encoder,
                "mqstate_spans_exported",
                "Spans the OTLP collector accepted (--otlp-endpoint)",
                spans.exported,
            )?;
            let mut family = encoder.encode_descriptor(
                "mqstate_spans_dropped",
                "Spans not exported: queue_full (the export queue was full when the request \
                 ended) or export_failed (the collector was unreachable, too slow or refused)",
                None,
                MetricType::Counter,
            )?;
            for (reason, value) in [
                ("queue_full", spans.dropped),
                ("export_failed", spans.failed),
            ] {
                family
                    .encode_family(&[("reason", reason)])?
                    .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
            }
        }
        encoder
            .encode_descriptor(
                "mqstate_build_info",
                "The mqstate version serving (always 1)",
                None,
                MetricType::Gauge,
            )?
            .encode_family(&[("version", env!("CARGO_PKG_VERSION"))])?
            .encode_gauge(&1u64)?;
        Ok(())
    }
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), std::fmt::Error> {
    encoder
        .encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&value)
}

fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), std::fmt::Error> {
    encoder
        .encode_descriptor(name, help, None, MetricType::Counter)?
        .encode_counter::<NoLabelSet, _, u64>(&value, None)
}
