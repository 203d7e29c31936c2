/**
 * iperf3 `-J` output: one JSON object, possibly followed by text (some builds
 * print a warning after it). The figure is end.sum_received.bits_per_second.
 * A top-level `error` key is a failure even when iperf3 exited 0; a busy
 * server or a reset connection is worth a short retry.
 */
import type { ExecResult } from "./cluster.ts";

export type IperfOutcome =
  | { ok: true; bitsPerSecond: number }
  | { ok: false; message: string; retryable: boolean };

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
  if (result.error !== undefined) return `exec failed: ${result.error}`;
  const json = firstJsonObject(result.stdout);
  let doc: unknown;
  try {
    doc = json === undefined ? undefined : JSON.parse(json);
  } catch {
    doc = undefined;
  }
  if (doc && typeof doc === "object") return doc as Record<string, unknown>;
  const text = (result.stderr || result.stdout).trim().split("\n")[0] || "no output";
  return `no iperf3 JSON: ${text}`;
}

function failure(message: string): IperfOutcome {
  const oneLine = message.trim().split("\n")[0] || "no output";
  return { ok: false, message: oneLine, retryable: RETRYABLE.some((re) => re.test(message)) };
}

/** Interprets one `iperf3 -c … -J` exec. */
export function parseIperf(result: ExecResult): IperfOutcome {
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
  if (result.exitCode !== 0) return failure(result.stderr || `iperf3 exit code ${result.exitCode}`);
  return { ok: true, bitsPerSecond: bps };
}
