/**
 * MTU black holes (`--mtu`): a TCP connect and small requests pass, full-size
 * segments vanish (overlay overhead such as VXLAN or Geneve, with the ICMP
 * "fragmentation needed" that path MTU discovery relies on dropped or never
 * sent, as by a bridge). Per path, `curl` in the source pod fetches agnhost's
 * `/echo?msg=…` with payloads of increasing size: each one travels as a
 * request of that size and comes back as an answer of that size, in
 * full-size segments with don't-fragment set (Linux TCP's default), so both
 * directions are tested. The largest payload that came back whole is
 * reported beside the source pod's interface MTU (read by the same curl from
 * /sys/class/net/eth0/mtu); a path where the smallest passes and the largest
 * does not fails as MTU. No capability beyond the probe pods' is needed.
 */
import type { ExecResult } from "./cluster.ts";

/** Payload sizes tried, bytes: below any MTU, one typical segment, a few, many. */
export const MTU_PAYLOADS = [200, 1400, 4000, 16000];

/** The curl command: the pod MTU first, then one /echo per payload size. */
export function mtuCommand(baseUrl: string, timeoutMs: number): string[] {
  const seconds = (timeoutMs / 1000).toFixed(3);
  return [
    "curl",
    "--silent",
    "--globoff",
    "--noproxy",
    "*",
    "--connect-timeout",
    seconds,
    "--max-time",
    seconds,
    "--write-out",
    "\\nLACE %{http_code} %{size_download}\\n",
    // Each --output binds to the next URL in order: the MTU file goes to stdout.
    "--output",
    "-",
    "file:///sys/class/net/eth0/mtu",
    ...MTU_PAYLOADS.flatMap((
      n,
    ) => ["--output", "/dev/null", `${baseUrl}/echo?msg=${"x".repeat(n)}`]),
  ];
}

export type MtuOutcome =
  | { ok: true; largest: number; podMtu: number | undefined }
  | { ok: false; errorClass: "MTU" | "BAD_ANSWER" | "UNKNOWN"; message: string; largest: number };

/**
 * Reads mtuCommand()'s output: the MTU file's content and a LACE line, then a
 * LACE line per payload. A payload passed when it came back whole (HTTP 200,
 * its size downloaded).
 */
export function parseMtu(result: ExecResult): MtuOutcome {
  if (result.error !== undefined) {
    return {
      ok: false,
      errorClass: "UNKNOWN",
      message: `exec failed: ${result.error}`,
      largest: 0,
    };
  }
  const marks = result.stdout.split("\n").filter((l) => l.startsWith("LACE "));
  const mtuLine = result.stdout.split("\n")[0].trim();
  if (marks.length !== MTU_PAYLOADS.length + 1) {
    return {
      ok: false,
      errorClass: "BAD_ANSWER",
      message: `expected ${MTU_PAYLOADS.length + 1} results, got ${marks.length}`,
      largest: 0,
    };
  }
  const podMtu = /^\d{3,5}$/.test(mtuLine) ? Number(mtuLine) : undefined;
  let largest = 0;
  const passed = MTU_PAYLOADS.map((size, i) => {
    const [, code, bytes] = marks[i + 1].split(" ");
    return code === "200" && Number(bytes) === size;
  });
  for (const [i, ok] of passed.entries()) if (ok) largest = MTU_PAYLOADS[i];
  const beside = podMtu ? ` (pod eth0 MTU ${podMtu})` : "";
  if (passed.every(Boolean)) return { ok: true, largest, podMtu };
  if (passed[0]) {
    return {
      ok: false,
      errorClass: "MTU",
      message: `a ${MTU_PAYLOADS[0]} B payload passes but ${
        MTU_PAYLOADS.filter((_, i) => !passed[i]).join(", ")
      } B do not; largest through ${largest} B${beside}: an MTU black hole (overlay overhead ` +
        `with ICMP fragmentation-needed dropped); lower the pod MTU below the path's`,
      largest,
    };
  }
  return {
    ok: false,
    errorClass: "UNKNOWN",
    message: `even a ${MTU_PAYLOADS[0]} B payload got no answer${beside}`,
    largest,
  };
}
