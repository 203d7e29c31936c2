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
 *
 * Then the MSS a TCP connection to the target really gets, and a full-size
 * transfer: iperf3 in the source pod's bandwidth container sends 1 MiB to the
 * target's iperf3 server (MSS-sized segments, don't-fragment set) and reports
 * its connection's MSS (`start.tcp_mss_default`, getsockopt TCP_MAXSEG: no
 * capability). Segments of that MSS are at least MSS + 40 B (IPv4) or + 60 B
 * (IPv6) on the wire; when they do not get through (the send times out with
 * nothing acknowledged) while small payloads pass, the path fails as MTU,
 * naming the MSS beside the largest payload through and the pod MTU.
 *
 * Then UDP: iperf3 -u sends datagrams filling the pod MTU (don't-fragment on
 * IPv4; IPv6 routers never fragment); when none arrive, 200 B ones. Small
 * through and full-size lost fails as MTU naming UDP and the size.
 */
import type { ExecResult } from "../cluster/netcheck_cluster.ts";
import { curlCommand } from "./curl.ts";
import { podLine, tooLongOutcome } from "../cluster/exec_output.ts";
import { iperfDocument } from "./iperf_result.ts";

/** Payload sizes tried, bytes: below any MTU, one typical segment, a few, many. */
export const MTU_PAYLOADS = [200, 1400, 4000, 16000];

/** The curl command: the pod MTU first, then one /echo per payload size. */
export function mtuCommand(baseUrl: string, timeoutMs: number): string[] {
  return [
    ...curlCommand(timeoutMs),
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
  | {
    ok: false;
    errorClass: "MTU" | "BAD_ANSWER" | "UNKNOWN" | "TOO_LONG";
    message: string;
    largest: number;
  };

/**
 * Reads mtuCommand()'s output: the MTU file's content and a LACE line, then a
 * LACE line per payload. A payload passed when it came back whole (HTTP 200,
 * its size downloaded).
 */
export function parseMtu(result: ExecResult): MtuOutcome {
  const tooLong = tooLongOutcome(result);
  if (tooLong) return { ...tooLong, largest: 0 };
  if (result.error !== undefined) {
    return {
      ok: false,
      errorClass: "UNKNOWN",
      message: `exec failed: ${podLine(result.error)}`,
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

/** iperf3 as a client of the server at `address`:`port`. */
function iperfClient(address: string, port: number): string[] {
  return ["iperf3", "-c", address, "-p", String(port)];
}

/** Bytes of the full-size TCP transfer (iperf3 -n). */
export const MSS_TRANSFER_BYTES = 1 << 20;

/** iperf3 in the source pod: 1 MiB to `address`, giving up after `timeoutMs` without an ACK. */
export function mssCommand(address: string, port: number, timeoutMs: number): string[] {
  const ms = String(Math.max(1, Math.round(timeoutMs)));
  return [
    ...iperfClient(address, port),
    "-n",
    String(MSS_TRANSFER_BYTES),
    "--connect-timeout",
    ms,
    // TCP_USER_TIMEOUT: data left unacknowledged this long ends the test with an error.
    "--snd-timeout",
    ms,
    "-J",
  ];
}

/**
 * What the iperf3 transfer showed: the connection's MSS when it connected,
 * and whether the full-size transfer got through (undefined: not measured,
 * e.g. a busy server or a failed exec, which decides nothing).
 */
export interface TcpTransfer {
  mss: number | undefined;
  transferred: boolean | undefined;
  /** Why the transfer did not get through or was not measured. */
  detail?: string;
}

/** The largest MSS a TCP header can announce; anything outside 1..65535 is not an MSS. */
const MAX_MSS = 65535;

/**
 * Reads mssCommand()'s output, a possible attacker's (the pod's image runs
 * it): the MSS only as a whole number in range, the transfer as passed only
 * when every byte was received.
 */
export function parseTcpTransfer(result: ExecResult): TcpTransfer {
  const doc = iperfDocument(result);
  if (typeof doc === "string") return { mss: undefined, transferred: undefined, detail: doc };
  const start = doc.start as Record<string, unknown> | undefined;
  const raw = start?.tcp_mss_default ?? start?.tcp_mss;
  const mss = Number.isInteger(raw) && (raw as number) > 0 && (raw as number) <= MAX_MSS
    ? raw as number
    : undefined;
  const error = typeof doc.error === "string" ? podLine(doc.error) : "";
  const received = (doc.end as { sum_received?: { bytes?: unknown } } | undefined)
    ?.sum_received?.bytes;
  if (!error && result.exitCode === 0 && received === MSS_TRANSFER_BYTES) {
    return { mss, transferred: true };
  }
  // Only a send that timed out on a connection that was made says "full-size segments lost";
  // a busy or unreachable server says nothing about the MTU.
  if (mss !== undefined && /unable to (write to|send).*timed out/i.test(error)) {
    return { mss, transferred: false, detail: `iperf3: ${error}` };
  }
  return {
    mss,
    transferred: undefined,
    detail: error
      ? `iperf3: ${error}`
      : `received ${podLine(String(received))} of ${MSS_TRANSFER_BYTES} B`,
  };
}

/** The smallest packet a full segment of `mss` makes: MSS + IP and TCP headers (no options). */
export function segmentSize(mss: number, ipv6: boolean): number {
  return mss + (ipv6 ? 40 : 20) + 20;
}

/**
 * One path's MTU verdict from the payloads (parseMtu) and the TCP transfer:
 * small payloads through but full-size segments of the connection's own MSS
 * lost fails as MTU even when every curl payload came back.
 */
export function mtuVerdict(payloads: MtuOutcome, tcp: TcpTransfer, ipv6: boolean): MtuOutcome {
  const mssText = tcp.mss === undefined
    ? ""
    : `; the connection's MSS is ${tcp.mss} B (segments of ${
      segmentSize(tcp.mss, ipv6)
    } B and more)`;
  if (!payloads.ok) {
    return payloads.errorClass === "MTU"
      ? { ...payloads, message: payloads.message + mssText }
      : payloads;
  }
  if (tcp.transferred === false) {
    const beside = payloads.podMtu ? ` (pod eth0 MTU ${payloads.podMtu})` : "";
    return {
      ok: false,
      errorClass: "MTU",
      message:
        `payloads up to ${payloads.largest} B pass${beside}, but a ${
          MSS_TRANSFER_BYTES / 1024
        } KiB TCP transfer does not (${tcp.detail})${mssText}: full-size segments are lost on ` +
        `this path, an MTU black hole; lower the pod MTU below the path's`,
      largest: payloads.largest,
    };
  }
  return payloads;
}

/** IP and UDP headers: a datagram payload of the pod MTU minus these fills the MTU. */
export function udpHeaderBytes(ipv6: boolean): number {
  return (ipv6 ? 40 : 20) + 8;
}

/** The small UDP datagram's payload, bytes: below any MTU (the smallest curl payload). */
export const UDP_SMALL_BYTES = MTU_PAYLOADS[0];

/** The UDP payload that fills the pod MTU (1500 when the MTU was not read). */
export function fullUdpPayload(podMtu: number | undefined, ipv6: boolean): number {
  return (podMtu ?? 1500) - udpHeaderBytes(ipv6);
}

/**
 * iperf3 in the source pod: one second of `size`-byte UDP datagrams (1 Mbit/s,
 * about 85 datagrams at 1472 B) to `address`. On IPv4 with don't-fragment
 * (`--dont-fragment`, IP_PMTUDISC_DO: no capability), so no router splits them;
 * on IPv6 routers never fragment and a datagram within the pod MTU leaves the
 * pod whole, so the flag (IPv4 only in iperf3) is not needed.
 */
export function udpCommand(
  address: string,
  port: number,
  size: number,
  timeoutMs: number,
): string[] {
  const ms = String(Math.max(1, Math.round(timeoutMs)));
  return [
    ...iperfClient(address, port),
    "-u",
    "-l",
    String(size),
    "-b",
    "1M",
    "-t",
    "1",
    "--connect-timeout",
    ms,
    ...(address.includes(":") ? [] : ["--dont-fragment"]),
    "-J",
  ];
}

/** Whether datagrams of `size` bytes got through (undefined: not measured, decides nothing). */
export interface UdpDatagrams {
  size: number;
  passed: boolean | undefined;
  detail?: string;
}

function count(value: unknown): number | undefined {
  return Number.isInteger(value) && (value as number) >= 0 ? value as number : undefined;
}

/**
 * Reads udpCommand()'s output, a possible attacker's: passed when the server
 * received at least one datagram (`end.sum_received.packets`; iperf3 3.12's
 * `lost_packets` stays 0 when none arrive, so it is not read), lost when it
 * received none of those sent, or when the send failed with "Message too
 * long" (don't-fragment set, a route MTU below the datagram). iperf3 may
 * print warnings before the JSON. A busy server or a failed exec is not
 * measured.
 */
export function parseUdpDatagrams(result: ExecResult, size: number): UdpDatagrams {
  const doc = iperfDocument(result);
  if (typeof doc === "string") return { size, passed: undefined, detail: doc };
  const error = typeof doc.error === "string" ? podLine(doc.error) : "";
  if (/message too long/i.test(error)) {
    return { size, passed: false, detail: `iperf3: ${error}` };
  }
  if (error) return { size, passed: undefined, detail: `iperf3: ${error}` };
  const end = doc.end as
    | { sum_received?: { packets?: unknown }; sum_sent?: { packets?: unknown } }
    | undefined;
  const received = count(end?.sum_received?.packets);
  const sent = count(end?.sum_sent?.packets);
  if (received !== undefined && received > 0) return { size, passed: true };
  if (received === 0 && sent !== undefined && sent > 0) {
    return { size, passed: false, detail: `received 0 of ${sent} datagrams` };
  }
  return {
    size,
    passed: undefined,
    detail: `received ${String(received)} of ${String(sent)} datagrams`,
  };
}

/** The UDP part of a path's MTU check: the full-size datagrams, and the small ones when those were lost. */
export interface UdpMtu {
  full: UdpDatagrams;
  small?: UdpDatagrams;
}

/** The largest UDP payload that got through (0: none, undefined: not measured). */
export function udpLargest(udp: UdpMtu | undefined): number | undefined {
  if (!udp) return undefined;
  if (udp.full.passed) return udp.full.size;
  if (udp.small?.passed) return udp.small.size;
  return udp.full.passed === false && udp.small?.passed === false ? 0 : undefined;
}

/**
 * Adds the UDP datagrams to mtuVerdict()'s verdict: small datagrams through but
 * full-size ones lost fails as MTU naming UDP and the size, like the TCP part;
 * nothing through or nothing measured leaves the verdict as it was.
 */
export function udpMtuVerdict(verdict: MtuOutcome, udp: UdpMtu, ipv6: boolean): MtuOutcome {
  if (udp.full.passed !== false || udp.small?.passed !== true) return verdict;
  const packet = udp.full.size + udpHeaderBytes(ipv6);
  const df = ipv6 ? "" : " with don't-fragment";
  const small = `a ${udp.small.size} B UDP datagram passes`;
  const fullLost = `a full-size ${udp.full.size} B one${df} (${packet} B packets) does not ` +
    `(${udp.full.detail})`;
  if (!verdict.ok) {
    return verdict.errorClass === "MTU"
      ? { ...verdict, message: `${verdict.message}; ${small} but ${fullLost}` }
      : verdict;
  }
  const beside = verdict.podMtu ? ` (pod eth0 MTU ${verdict.podMtu})` : "";
  return {
    ok: false,
    errorClass: "MTU",
    message: `payloads up to ${verdict.largest} B pass over TCP${beside} and ${small}, but ` +
      `${fullLost}: full-size UDP datagrams are lost on this path, an MTU black hole; lower ` +
      `the pod MTU below the path's`,
    largest: verdict.largest,
  };
}
