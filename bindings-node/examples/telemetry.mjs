// Telemetry: mqstate's calls as OpenTelemetry spans and metrics. With @opentelemetry/api
// installed, every call that goes to the store is a span (a child of the active one) and
// is timed by the histogram db.client.operation.duration; the connection and cache metrics
// are read from the live clients when the reader collects. This example keeps both in
// memory and prints them; an app registers its OTLP exporters instead.
// Run: npm install @opentelemetry/api @opentelemetry/sdk-trace-base @opentelemetry/sdk-metrics \
//        @opentelemetry/context-async-hooks
//      MQSTATE_URL=mqtt://127.0.0.1:1883 node examples/telemetry.mjs
import { context, metrics, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics'
import { Client } from 'mqstate'

// The SDK, set up once at start (an app: OTLP exporters and a batch span processor).
const spans = new InMemorySpanExporter()
const tracing = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] })
const exported = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
const reader = new PeriodicExportingMetricReader({ exporter: exported, exportIntervalMillis: 60_000 })
const metering = new MeterProvider({ readers: [reader] })
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
trace.setGlobalTracerProvider(tracing)
metrics.setGlobalMeterProvider(metering)

const client = await Client.connect(process.env.MQSTATE_URL ?? 'mqtt://localhost:1883', { cache: true })
try {
  // The app's own span: mqstate's calls inside it are its children.
  await trace.getTracer('example').startActiveSpan('refresh settings', async (span) => {
    await client.set('settings/mode', 'eco')
    await client.get('settings/mode') // a miss: read from the store (a span), then cached
    console.log(`mode: ${(await client.get('settings/mode'))?.text}`) // a hit: no span
    await client.delete('settings/mode')
    span.end()
  })
  for (const s of spans.getFinishedSpans()) {
    console.log(`span ${s.name} (trace ${s.spanContext().traceId}) ${JSON.stringify(s.attributes)}`)
  }
  await reader.forceFlush()
  const names = exported.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
    .map((m) => `${m.descriptor.name} [${m.descriptor.unit}]`)
  console.log(`metrics: ${[...new Set(names)].join(', ')}`)
} finally {
  await client.close()
  await metering.shutdown()
  await tracing.shutdown()
}
