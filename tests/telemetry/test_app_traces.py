"""One trace from the app to the store (issue 57): a Python app and a Node app, each exporting
OTLP through its language's standard OpenTelemetry SDK and exporter, call `mqstate serve
--otlp-endpoint`; Jaeger then holds, under one trace id, the app's span, mqstate's call span
(a child of it, the client's) and the store's span (a child of the call span, service
`mqstate-serve`).

The apps run as users run them: the Python one with the project venv (the binding installed
by the Python suite, opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http pinned by
scripts/lib/setup/python), the Node one with bindings-node (built by the Node suite) and the
OpenTelemetry JS SDK and OTLP exporter installed from npm into a folder of its own.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jaeger import ROOT  # noqa: E402
from test_serve_traces import jaeger, store  # noqa: E402,F401  (the fixtures)

VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
#: The OpenTelemetry JS packages of the Node app, one release line (the binding's dev
#: dependencies' API and SDK; the OTLP exporter of the same SDK release).
NODE_PACKAGES = [
    "@opentelemetry/api@1.9.0",
    "@opentelemetry/sdk-trace-base@2.12.1",
    "@opentelemetry/context-async-hooks@2.12.1",
    "@opentelemetry/resources@2.12.1",
    "@opentelemetry/exporter-trace-otlp-http@0.223.1",
]

PYTHON_APP = """
import sys
import mqstate
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

endpoint, url = sys.argv[1], sys.argv[2]
provider = TracerProvider(resource=Resource.create({"service.name": "py-app"}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint + "/v1/traces")))
trace.set_tracer_provider(provider)
with mqstate.Client(url) as client:
    with trace.get_tracer("py-app").start_as_current_span("py handle") as span:
        client.set("e2e/py", "v")
        print(format(span.get_span_context().trace_id, "032x"))
provider.shutdown()
"""

NODE_APP = """
const { trace, context } = require('@opentelemetry/api')
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks')
const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base')
const { resourceFromAttributes } = require('@opentelemetry/resources')
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http')
const mqstate = require(process.env.MQSTATE_NODE)

async function main (endpoint, url) {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'node-app' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint + '/v1/traces' }))]
  })
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(provider)
  const client = await mqstate.Client.connect(url)
  await trace.getTracer('node-app').startActiveSpan('node handle', async (span) => {
    await client.set('e2e/node', 'v')
    console.log(span.spanContext().traceId)
    span.end()
  })
  await client.close()
  await provider.shutdown()
}
main(process.argv[2], process.argv[3]).catch((e) => { console.error(e); process.exit(1) })
"""


def chain(jaeger, trace_id, app_span, app_service):
    """The app's span, mqstate's call span under it, the store's span under that."""
    app, seen = jaeger.wait_for_span(trace_id, lambda s, t: s["operationName"] == app_span)
    call, seen = jaeger.wait_for_span(
        trace_id,
        lambda s, t: s["operationName"] == "SET"
        and any(r["spanID"] == app["spanID"] for r in s.get("references", [])),
    )
    stored, seen = jaeger.wait_for_span(
        trace_id,
        lambda s, t: s["operationName"] == "SET"
        and any(r["spanID"] == call["spanID"] for r in s.get("references", [])),
    )
    # Jaeger numbers a trace's processes (p1, p2, ...) afresh in each answer: read every
    # span's process from the last answer, which holds all three.
    by_id = {s["spanID"]: s for s in seen["spans"]}
    app, call = by_id[app["spanID"]], by_id[call["spanID"]]
    processes = seen["processes"]
    assert processes[app["processID"]]["serviceName"] == app_service
    assert processes[call["processID"]]["serviceName"] == app_service
    assert processes[stored["processID"]]["serviceName"] == "mqstate-serve"
    tags = {t["key"]: t["value"] for t in call["tags"]}
    assert tags["otel.scope.name"] == "mqstate"
    assert tags["span.kind"] == "client"
    assert tags["db.operation.name"] == "SET"
    assert {app["traceID"], call["traceID"], stored["traceID"]} == {trace_id}


def test_python_app_span_to_call_span_to_store_span(jaeger, store):
    if not VENV_PYTHON.exists():
        pytest.fail(f"no {VENV_PYTHON}: run scripts/lib/setup/python and the Python suite")
    out = subprocess.run(
        [str(VENV_PYTHON), "-c", PYTHON_APP, jaeger.otlp_endpoint, f"mqtt://127.0.0.1:{store}"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    chain(jaeger, out.stdout.strip(), "py handle", "py-app")


@pytest.fixture(scope="module")
def node_app(tmp_path_factory):
    """A folder with the OpenTelemetry JS SDK and OTLP exporter installed from npm."""
    app = tmp_path_factory.mktemp("node-app")
    (app / "package.json").write_text(json.dumps({"name": "app", "private": True}))
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *NODE_PACKAGES],
        cwd=app, check=True, capture_output=True, timeout=300,
    )
    (app / "app.js").write_text(NODE_APP)
    return app


def test_node_app_span_to_call_span_to_store_span(jaeger, store, node_app):
    binding = ROOT / "bindings-node"
    if not list(binding.glob("mqstate.*.node")):
        pytest.fail("no addon in bindings-node: run the Node suite (scripts/lib/suites/node)")
    out = subprocess.run(
        ["node", str(node_app / "app.js"), jaeger.otlp_endpoint, f"mqtt://127.0.0.1:{store}"],
        capture_output=True, text=True, timeout=120, cwd=node_app,
        env={**os.environ, "MQSTATE_NODE": str(binding)},
    )
    assert out.returncode == 0, out.stderr
    chain(jaeger, out.stdout.strip(), "node handle", "node-app")
