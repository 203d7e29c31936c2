/**
 * agnhost `connect` results: exit 0 is success; otherwise stderr starts with
 * one of agnhost's fixed class prefixes (TIMEOUT, REFUSED, DNS, OTHER,
 * UNKNOWN). Anything else, including a failed exec session, is UNKNOWN with
 * the text kept for the report.
 */
import type { ExecResult } from "../cluster/netcheck_cluster.ts";
import { podLine, tooLongOutcome } from "../cluster/exec_output.ts";

export type ConnectErrorClass = "TIMEOUT" | "REFUSED" | "DNS" | "OTHER" | "UNKNOWN" | "TOO_LONG";
export type ConnectOutcome =
  | { ok: true }
  | { ok: false; errorClass: ConnectErrorClass; message: string };

/** Classifies one `agnhost connect` exec. */
export function classifyConnect(result: ExecResult): ConnectOutcome {
  const tooLong = tooLongOutcome(result);
  if (tooLong) return tooLong;
  if (result.error !== undefined) {
    return { ok: false, errorClass: "UNKNOWN", message: `exec failed: ${podLine(result.error)}` };
  }
  if (result.exitCode === 0) return { ok: true };
  const text = result.stderr.trimStart();
  const m = /^(TIMEOUT|REFUSED|DNS|OTHER|UNKNOWN)\b:?[^\S\n]*/.exec(text);
  if (m) {
    const detail = podLine(text.slice(m[0].length).split("\n", 1)[0]);
    return { ok: false, errorClass: m[1] as ConnectErrorClass, message: detail || m[1] };
  }
  const first = podLine(text.split("\n", 1)[0]) || `exit code ${result.exitCode}`;
  return { ok: false, errorClass: "UNKNOWN", message: first };
}
