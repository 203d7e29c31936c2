/**
 * The run's report: readable text, or one JSON document, plus an optional
 * JUnit XML file. JSON and JUnit list every path: they stream paths as they
 * finish (the summary comes last), so memory stays flat however many paths.
 */
import { formatBps } from "../checks/iperf_result.ts";
import { formatMs, type Percentiles } from "../checks/latency.ts";
import type { PathResult } from "../checks/path_result.ts";
import type { Summary } from "./summary.ts";
import { escapeUnsafe, safeJson, safeText } from "../../text/safe.ts";

/** The overall outcome of a run. */
export interface RunOutcome {
  runId: string;
  status: "passed" | "failed" | "error" | "interrupted";
  /** Why the run could not finish (setup failure, interrupt), if it did not. */
  error?: string;
  minBandwidthBps: number;
  asymmetryFactor: number;
  /** --max-latency, ms; 0 when not set. */
  maxLatencyMs?: number;
}

/** "p50 0.21 ms, p99 0.40 ms, max 0.40 ms". */
function formatPercentiles(p: Percentiles): string {
  return `p50 ${formatMs(p.p50)}, p99 ${formatMs(p.p99)}, max ${formatMs(p.max)}`;
}

/** Receives every path as it finishes, then the summary. */
export interface PathSink {
  path(result: PathResult): void | Promise<void>;
  finish(summary: Summary, outcome: RunOutcome): Promise<void>;
}

/** The summary as plain data (the JSON report's `summary`; a --watch round's JSON line). */
export function summaryData(summary: Summary, outcome: RunOutcome): Record<string, unknown> {
  return {
    runId: outcome.runId,
    status: outcome.status,
    ...(outcome.error ? { error: outcome.error } : {}),
    nodes: summary.nodes,
    skippedNodes: summary.skippedNodes,
    ...(summary.sampling ? { sampling: summary.sampling } : {}),
    connect: summary.connect,
    ...(summary.mtu.tested > 0
      ? {
        mtu: {
          ...summary.mtu,
          ...(summary.maxMss > 0 ? { minMss: summary.minMss, maxMss: summary.maxMss } : {}),
          udpFullSize: summary.udpFullSize,
        },
      }
      : {}),
    ...(summary.udp.tested > 0 ? { udp: summary.udp } : {}),
    ...(summary.networks
      ? {
        isolation: {
          ...summary.isolation,
          leaks: summary.networks.leaks,
          matrix: summary.networks.toJSON(),
        },
      }
      : {}),
    latency: {
      ...summary.latency,
      maxLatencyMs: outcome.maxLatencyMs ?? 0,
      slowest: summary.slowestLatency.items.map((r) => ({
        from: r.from,
        to: r.to,
        ...r.latency,
      })),
    },
    bandwidth: {
      ...summary.bandwidth,
      totalBitsPerSecond: summary.totalBps,
      meanBitsPerSecond: summary.meanBps,
      minBitsPerSecond: summary.measured ? summary.minBps : null,
      maxBitsPerSecond: summary.measured ? summary.maxBps : null,
      minBandwidthBitsPerSecond: outcome.minBandwidthBps,
    },
    slowest: summary.slowest.items,
    failuresByClass: Object.fromEntries(summary.failures.byClass),
    failures: summary.failures.items,
    asymmetry: {
      factor: outcome.asymmetryFactor,
      count: summary.asymmetry.count,
      pairs: summary.asymmetry.flagged,
    },
  };
}

/**
 * The text report. Node and pod names and the messages of failed paths (which carry what a pod
 * answered) are escaped (text/safe.ts).
 */
export function textReport(summary: Summary, outcome: RunOutcome): string {
  const out: string[] = [];
  const skipped = summary.skippedNodes.map((s) => `${safeText(s.node)}: ${safeText(s.reason)}`)
    .join(", ");
  out.push(
    `lace netcheck run ${outcome.runId}: ${summary.nodes.length} nodes` +
      (skipped ? ` (skipped ${skipped})` : ""),
  );
  const c = summary.connect, b = summary.bandwidth;
  out.push(`Connectivity: ${c.tested} paths, ${c.passed} passed, ${c.failed} failed`);
  const l = summary.latency;
  if (l.tested > 0) {
    const limit = outcome.maxLatencyMs ? `, maximum p99 ${formatMs(outcome.maxLatencyMs)}` : "";
    out.push(`Latency:      ${l.tested} paths, ${l.passed} passed, ${l.failed} failed${limit}`);
    if (summary.slowestLatency.items.length > 0) out.push("Slowest paths by p99:");
    for (const r of summary.slowestLatency.items) {
      out.push(
        `  ${safeText(r.from)} → ${safeText(r.to)}  connect ${
          formatPercentiles(r.latency!.connect)
        }; request ${formatPercentiles(r.latency!.request)}`,
      );
    }
  }
  if (summary.udp.tested > 0) {
    const u = summary.udp;
    out.push(`UDP:          ${u.tested} paths, ${u.passed} passed, ${u.failed} failed`);
  }
  if (summary.mtu.tested > 0) {
    const m = summary.mtu;
    out.push(
      `MTU:          ${m.tested} paths, ${m.passed} passed, ${m.failed} failed` +
        ` (payloads up to 16000 B both ways, a 1 MiB TCP transfer` +
        (summary.maxMss === 0
          ? ")"
          : summary.minMss === summary.maxMss
          ? `; MSS ${summary.minMss} B)`
          : `; MSS ${summary.minMss}–${summary.maxMss} B)`) +
        `; full-size UDP datagrams: ${summary.udpFullSize.passed} paths through, ` +
        `${summary.udpFullSize.lost} lost`,
    );
  }
  const floor = outcome.minBandwidthBps > 0
    ? `, minimum ${formatBps(outcome.minBandwidthBps)}`
    : "";
  out.push(`Bandwidth:    ${b.tested} paths, ${b.passed} passed, ${b.failed} failed${floor}`);
  const sampling = summary.sampling;
  if (sampling && (sampling.bandwidthPeers > 0 || sampling.connectivityPeers > 0)) {
    const what = [
      sampling.connectivityPeers > 0 ? `connectivity ${sampling.connectivityPeers}` : "",
      sampling.bandwidthPeers > 0 ? `bandwidth ${sampling.bandwidthPeers}` : "",
    ].filter(Boolean).join(", ");
    out.push(
      `Sampled:      peers per node (${what}), round ${
        (sampling.round % sampling.roundsToCover) + 1
      } of ${sampling.roundsToCover} that cover every pair`,
    );
  }
  if (summary.measured > 0) {
    out.push(
      `Throughput:   ${formatBps(summary.totalBps)} aggregate over ${summary.measured} paths` +
        ` (mean ${formatBps(summary.meanBps)}, min ${formatBps(summary.minBps)},` +
        ` max ${formatBps(summary.maxBps)})`,
    );
    out.push("Slowest paths:");
    for (const r of summary.slowest.items) {
      out.push(`  ${safeText(r.from)} → ${safeText(r.to)}  ${formatBps(r.bitsPerSecond!)}`);
    }
  }
  if (summary.asymmetry.count > 0) {
    out.push(`Asymmetric paths (factor > ${outcome.asymmetryFactor}): ${summary.asymmetry.count}`);
    for (const a of summary.asymmetry.flagged) {
      out.push(
        `  ${safeText(a.a)} → ${safeText(a.b)} ${formatBps(a.aToB)} vs ${safeText(a.b)} → ` +
          `${safeText(a.a)} ${formatBps(a.bToA)}` +
          ` (×${a.factor.toFixed(1)})`,
      );
    }
  }
  if (summary.networks) {
    const i = summary.isolation;
    out.push(
      `Isolation:    ${i.tested} cross-network paths, ${i.passed} isolated, ${i.failed} failed` +
        ` (${summary.networks.leaks} answered by the other network's pod)`,
    );
    out.push("Networks (same network: connect paths passed; across: paths isolated):");
    for (const line of summary.networks.lines()) out.push(`  ${safeText(line)}`);
  }
  const failedTotal = c.failed + l.failed + b.failed + summary.isolation.failed +
    summary.mtu.failed + summary.udp.failed;
  if (failedTotal > 0) {
    const shown = summary.failures.items.length;
    const classes = [...summary.failures.byClass].map(([k, n]) => `${k} ${n}`).join(", ");
    out.push(`Failed paths (${classes}; showing ${shown} of ${failedTotal}):`);
    for (const r of summary.failures.items) {
      out.push(
        `  ${r.phase.padEnd(9)} ${r.network ? `[${safeText(r.network)}] ` : ""}` +
          `${safeText(r.from)} → ${safeText(r.to)}  ${r.errorClass}` +
          (r.message ? `: ${safeText(r.message)}` : ""),
      );
    }
  }
  if (outcome.error) out.push(`Error: ${safeText(outcome.error)}`);
  out.push(`Result: ${outcome.status.toUpperCase()}`);
  return out.join("\n") + "\n";
}

/** Streams the JSON report `{"paths":[…],"summary":{…}}` through `write`. */
export class JsonReport implements PathSink {
  #first = true;
  #started = false;

  constructor(readonly write: (text: string) => void) {}

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    this.write('{"paths":[');
  }

  path(result: PathResult): void {
    this.#start();
    this.write((this.#first ? "\n" : ",\n") + safeJson(result));
    this.#first = false;
  }

  finish(summary: Summary, outcome: RunOutcome): Promise<void> {
    this.#start();
    this.write(`\n],"summary":${safeJson(summaryData(summary, outcome))}}\n`);
    return Promise.resolve();
  }
}

function xml(text: string): string {
  // Controls (invalid in XML 1.0, or acted on by a terminal that shows the file), C1 and bidi
  // characters become visible escapes (text/safe.ts), as do U+FFFE and U+FFFF (not XML
  // characters either, not even as a reference), then the markup characters references.
  return escapeUnsafe(text).replace(
    /[<>&"'\ufffe\uffff]/g,
    (c) => c >= "\ufffe" ? `\\u${c.charCodeAt(0).toString(16)}` : `&#${c.charCodeAt(0)};`,
  );
}

/**
 * Streams JUnit XML: test cases go to `FILE.partial` as paths finish; finish()
 * writes FILE with the counts the header needs, then the cases, and removes
 * the partial file.
 */
export class JunitReport implements PathSink {
  #file: Deno.FsFile | undefined;
  /**
   * Writes in order, one at a time: paths finish concurrently, and each opening the partial file
   * (truncating it) or writing at once lost test cases (28 of 36 paths written, 4 nodes).
   */
  #writes: Promise<void> = Promise.resolve();
  #encoder = new TextEncoder();
  #tests = 0;
  #failures = 0;
  #seconds = 0;

  constructor(readonly file: string) {}

  get #partial(): string {
    return `${this.file}.partial`;
  }

  path(result: PathResult): Promise<void> {
    this.#tests++;
    this.#seconds += result.durationMs / 1000;
    const name = xml(
      `${
        result.network ? `[${result.network.replace("→", "->")}] ` : ""
      }${result.from} -> ${result.to}`,
    );
    const time = (result.durationMs / 1000).toFixed(3);
    let body = "";
    if (!result.ok) {
      this.#failures++;
      body = `<failure type="${xml(result.errorClass ?? "UNKNOWN")}" message="${
        xml(result.message ?? "")
      }"/>`;
    } else if (result.bitsPerSecond !== undefined) {
      body = `<system-out>${result.bitsPerSecond} bits/s</system-out>`;
    }
    if (result.latency) {
      const { connect, request, samples } = result.latency;
      body += `<system-out>${
        xml(
          `${samples} samples; connect ${formatPercentiles(connect)}; request ${
            formatPercentiles(request)
          }`,
        )
      }</system-out>`;
    }
    const line =
      `    <testcase classname="netcheck.${result.phase}" name="${name}" time="${time}">` +
      `${body}</testcase>\n`;
    const bytes = this.#encoder.encode(line);
    this.#writes = this.#writes.then(async () => {
      this.#file ??= await Deno.open(this.#partial, { write: true, create: true, truncate: true });
      for (let done = 0; done < bytes.length;) done += await this.#file.write(bytes.subarray(done));
    });
    return this.#writes;
  }

  async finish(_summary: Summary, outcome: RunOutcome): Promise<void> {
    await this.#writes;
    this.#file?.close();
    const out = await Deno.open(this.file, { write: true, create: true, truncate: true });
    try {
      const header = `<?xml version="1.0" encoding="UTF-8"?>\n` +
        `<testsuites name="lace netcheck" tests="${this.#tests}" failures="${this.#failures}">\n` +
        `  <testsuite name="netcheck ${
          xml(outcome.runId)
        }" tests="${this.#tests}" failures="${this.#failures}" errors="${
          outcome.status === "error" ? 1 : 0
        }" time="${this.#seconds.toFixed(3)}">\n`;
      await out.write(this.#encoder.encode(header));
      if (this.#file) {
        using partial = await Deno.open(this.#partial, { read: true });
        await partial.readable.pipeTo(out.writable, { preventClose: true });
      }
      if (outcome.error) {
        await out.write(this.#encoder.encode(
          `    <testcase classname="netcheck.setup" name="setup"><error message="${
            xml(outcome.error)
          }"/></testcase>\n`,
        ));
      }
      await out.write(this.#encoder.encode(`  </testsuite>\n</testsuites>\n`));
    } finally {
      out.close();
      if (this.#file) await Deno.remove(this.#partial).catch(() => {});
    }
  }
}
