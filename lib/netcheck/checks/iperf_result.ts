/**
 * iperf3 `-J` output: one JSON object, possibly followed by text (some builds
 * print a warning after it). The figure is end.sum_received.bits_per_second.
 * A top-level `error` key is a failure even when iperf3 exited 0; a busy
 * server or a reset connection is worth a short retry.
 */
import type { ExecResult } from "../cluster/netcheck_cluster.ts";
import { podLine } from "../cluster/exec_output.ts";

export type IperfOutcome =
  | { ok: true; bitsPerSecond: number }
  | {
    ok: false;
    message: string;
    retryable: boolean;
    /** TOO_LONG (the output went past the limit), BAD_ANSWER (a figure out of range); else IPERF. */
    errorClass?: "TOO_LONG" | "BAD_ANSWER";
  };

/**
 * The most bits per second a path is believed to carry (100 Tbit/s, far above any NIC): a figure
 * above it, or below 0, is an answer to distrust, not a measurement to add to the summary.
 */
export const MAX_BITS_PER_SECOND = 1e14;

const RETRYABLE = [/the server is busy/i, /connection reset by peer/i];

/** The first complete JSON object in `text` (string-aware brace matching), or undefined. */
export function firstJsonObject(text: string): string | undefined {
  const start = text.indexOf("{");
  if (start < 0) return undefined;
  let depth = 0, inString = false, escaped = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === "\\") escaped = true;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return text.slice(start, i + 1);
  }
  return undefined;
}

/**
 * The iperf3 JSON document of an exec, or why there is none: the exec failed
 * (`exec failed: …`) or printed no JSON object (`no iperf3 JSON: ` and the
 * first line it printed). Warnings printed before the JSON are skipped.
 */
export function iperfDocument(result: ExecResult): Record<string, unknown> | string {
  if (result.error !== undefined) return `exec failed: ${podLine(result.error)}`;
  const json = firstJsonObject(result.stdout);
  let doc: unknown;
  try {
    doc = json === undefined ? undefined : JSON.parse(json);
  } catch {
    doc = undefined;
  }
  if (doc && typeof doc === "object") return doc as Record<string, unknown>;
  return `no iperf3 JSON: ${podLine(result.stderr || result.stdout) || "no output"}`;
}

function failure(message: string): IperfOutcome {
  const oneLine = podLine(message) || "no output";
  return { ok: false, message: oneLine, retryable: RETRYABLE.some((re) => re.test(message)) };
}

/** Interprets one `iperf3 -c … -J` exec. */
export function parseIperf(result: ExecResult): IperfOutcome {
  if (result.tooLong && result.error !== undefined) {
    return { ok: false, errorClass: "TOO_LONG", message: result.error, retryable: false };
  }
  if (result.error !== undefined) return failure(`exec failed: ${result.error}`);
  const json = firstJsonObject(result.stdout);
  let doc: Record<string, unknown> | undefined;
  if (json !== undefined) {
    try {
      doc = JSON.parse(json);
    } catch {
      doc = undefined;
    }
  }
  if (doc === undefined) {
    return failure(result.stderr || result.stdout || `iperf3 exit code ${result.exitCode}`);
  }
  if (typeof doc.error === "string" && doc.error !== "") return failure(`iperf3: ${doc.error}`);
  const end = doc.end as { sum_received?: { bits_per_second?: unknown } } | undefined;
  const bps = end?.sum_received?.bits_per_second;
  if (typeof bps !== "number" || !Number.isFinite(bps)) {
    return failure("iperf3 output has no end.sum_received.bits_per_second");
  }
  if (bps < 0 || bps > MAX_BITS_PER_SECOND) {
    return {
      ok: false,
      errorClass: "BAD_ANSWER",
      message: `iperf3 reported ${bps} bits/s, outside 0 to ${MAX_BITS_PER_SECOND}: not a figure ` +
        `to trust`,
      retryable: false,
    };
  }
  if (result.exitCode !== 0) return failure(result.stderr || `iperf3 exit code ${result.exitCode}`);
  return { ok: true, bitsPerSecond: bps };
}

/** "1.23 Gbit/s" style figure for bits per second. */
export function formatBps(bps: number): string {
  const units = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
  let v = bps, i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${units[i]}`;
}
