/**
 * agnhost `connect` results: exit 0 is success; otherwise stderr starts with
 * one of agnhost's fixed class prefixes (TIMEOUT, REFUSED, DNS, OTHER,
 * UNKNOWN). Anything else, including a failed exec session, is UNKNOWN with
 * the text kept for the report.
 */
import type { ExecResult } from "./cluster.ts";

export type ConnectErrorClass = "TIMEOUT" | "REFUSED" | "DNS" | "OTHER" | "UNKNOWN";
export type ConnectOutcome =
  | { ok: true }
  | { ok: false; errorClass: ConnectErrorClass; message: string };

/** Classifies one `agnhost connect` exec. */
export function classifyConnect(result: ExecResult): ConnectOutcome {
  if (result.error !== undefined) {
    return { ok: false, errorClass: "UNKNOWN", message: `exec failed: ${result.error}` };
  }
  if (result.exitCode === 0) return { ok: true };
  const text = result.stderr.trim();
  const m = /^(TIMEOUT|REFUSED|DNS|OTHER|UNKNOWN)\b:?\s*/.exec(text);
  if (m) {
    const detail = text.slice(m[0].length).split("\n")[0];
    return { ok: false, errorClass: m[1] as ConnectErrorClass, message: detail || m[1] };
  }
  const first = text.split("\n")[0] || `exit code ${result.exitCode}`;
  return { ok: false, errorClass: "UNKNOWN", message: first };
}
