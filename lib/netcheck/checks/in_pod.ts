/**
 * The checks of one path, each run inside its source pod (cluster.exec):
 * TCP and UDP connect, latency, MTU, bandwidth and isolation between
 * networks. Each turns the pod's output, parsed as input from a possible
 * attacker by the pure modules beside it, into one PathResult; the
 * pipeline schedules them over the pairs.
 */
import { getLogger } from "@logtape/logtape";
import { joinHostPort } from "../../net/host_port.ts";
import { sleep, type Timers } from "../../time/timers.ts";
import type {
  Endpoint,
  ExecOptions,
  ExecResult,
  NetcheckCluster,
  NetworkEndpoint,
} from "../cluster/netcheck_cluster.ts";
import { classifyConnect } from "./connect_result.ts";
import { formatMs, latencyCommand, parseLatency, worstP99 } from "./latency.ts";
import {
  fullUdpPayload,
  mssCommand,
  MTU_PAYLOADS,
  mtuCommand,
  mtuVerdict,
  parseMtu,
  parseTcpTransfer,
  parseUdpDatagrams,
  UDP_SMALL_BYTES,
  udpCommand,
  udpLargest,
  type UdpMtu,
  udpMtuVerdict,
} from "./mtu.ts";
import { formatBps, parseIperf } from "./iperf_result.ts";
import type { ProbeNetwork } from "../cluster/manifest.ts";
import { isolationVerdict, type ProbePodNetworks } from "./isolation.ts";
import { CONNECT_PORT, IPERF_PORT, type NetcheckOptions } from "../options.ts";
import type { Pair } from "../pairs/directed.ts";
import type { PathResult } from "./path_result.ts";

const log = getLogger(["lace", "netcheck"]);

/** What every check of a path runs with. */
export interface CheckContext {
  cluster: NetcheckCluster;
  options: NetcheckOptions;
  /** Aborts the exec; the check then gives no result. */
  signal?: AbortSignal;
  /** Times each path and the pause before a retry (fake time in tests). */
  timers: Timers;
  /** Pause before retrying a busy iperf3 server; a second per attempt by default. */
  retryDelayMs?: number;
}

/** Whole milliseconds since `started` on `timers` (a path's durationMs, a round's length). */
export function elapsedMs(timers: Timers, started: number): number {
  return Math.round(timers.now() - started);
}

/** Runs `command` in `container` of the path's source pod. */
function execInSource(
  { cluster, options }: CheckContext,
  pair: Pair<Endpoint>,
  container: string,
  command: string[],
  execOptions: ExecOptions,
): Promise<ExecResult> {
  return cluster.exec(
    pair.from.namespace ?? options.namespace,
    pair.from.pod,
    container,
    command,
    execOptions,
  );
}

/**
 * Connects from the pair's source pod to the target's `port` with `/agnhost
 * connect` (`args` adds e.g. `--protocol=udp`), classified by
 * connect_result.ts; undefined when `signal` aborted the exec.
 */
export async function checkConnect(
  ctx: CheckContext,
  pair: Pair<NetworkEndpoint>,
  check: { phase: "connect" | "udp"; args: string[]; port: number; network: string | undefined },
): Promise<PathResult | undefined> {
  const { options, signal, timers } = ctx;
  const started = timers.now();
  const result = await execInSource(
    ctx,
    pair,
    "connect",
    [
      "/agnhost",
      "connect",
      ...check.args,
      `--timeout=${options.connectTimeoutMs}ms`,
      joinHostPort(pair.to.address, check.port),
    ],
    { timeoutMs: options.connectTimeoutMs + 30_000, signal },
  );
  if (signal?.aborted) return undefined;
  const outcome = classifyConnect(result);
  return {
    phase: check.phase,
    ...(check.network === undefined ? {} : { network: check.network }),
    ...pathEnds(pair),
    ok: outcome.ok,
    ...(outcome.ok ? {} : { errorClass: outcome.errorClass, message: outcome.message }),
    attempts: 1,
    durationMs: elapsedMs(timers, started),
  };
}

/**
 * One path's latency: `latencySamples` requests from the source pod to the
 * target's /hostname, each on a new connection, timed inside the pod. The
 * answer must come from the pod meant (WRONG_POD otherwise: another pod
 * holds the address), and the worse p99 must stay within --max-latency.
 */
export async function measureLatency(
  ctx: CheckContext,
  pair: Pair<Endpoint>,
): Promise<PathResult | undefined> {
  const { options, signal, timers } = ctx;
  const started = timers.now();
  const url = `http://${joinHostPort(pair.to.address, CONNECT_PORT)}/hostname`;
  const samples = options.latencySamples;
  const result = await execInSource(
    ctx,
    pair,
    "connect",
    latencyCommand(url, samples, options.connectTimeoutMs),
    { timeoutMs: samples * options.connectTimeoutMs + 30_000, signal },
  );
  if (signal?.aborted) return undefined;
  const parsed = parseLatency(result, samples);
  const base = {
    phase: "latency" as const,
    ...pathEnds(pair),
    attempts: 1,
    durationMs: elapsedMs(timers, started),
  };
  if (!parsed.ok) {
    return { ...base, ok: false, errorClass: parsed.errorClass, message: parsed.message };
  }
  const latency = parsed.figures;
  if (parsed.identity !== pair.to.pod) {
    return {
      ...base,
      ok: false,
      errorClass: "WRONG_POD",
      message: `${pair.to.address} was answered by pod "${parsed.identity}", not "${pair.to.pod}"` +
        ": another pod holds the address (a leak between networks, or a stale route)",
      latency,
    };
  }
  const worst = worstP99(latency);
  if (options.maxLatencyMs > 0 && worst > options.maxLatencyMs) {
    const which = latency.connect.p99 >= latency.request.p99 ? "connect" : "request";
    return {
      ...base,
      ok: false,
      errorClass: "LATENCY",
      message: `${which} p99 ${formatMs(worst)} is above --max-latency ${
        formatMs(options.maxLatencyMs)
      }`,
      latency,
    };
  }
  return { ...base, ok: true, latency };
}

/**
 * One path's MTU check (mtu.ts): payloads of growing size through /echo and
 * back, then the MSS of a TCP connection and a full-size transfer with iperf3
 * from the source pod's bandwidth container, then full-size UDP datagrams
 * (and small ones when those are lost) with iperf3 -u (run under the endpoint
 * locks: an iperf3 server takes one client at a time).
 */
export async function checkMtu(
  ctx: CheckContext,
  pair: Pair<Endpoint>,
): Promise<PathResult | undefined> {
  const { options, signal, timers } = ctx;
  const started = timers.now();
  const timeoutMs = Math.min(options.connectTimeoutMs, 3000);
  const result = await execInSource(
    ctx,
    pair,
    "connect",
    mtuCommand(`http://${joinHostPort(pair.to.address, CONNECT_PORT)}`, timeoutMs),
    { timeoutMs: (MTU_PAYLOADS.length + 1) * timeoutMs + 30_000, signal },
  );
  if (signal?.aborted) return undefined;
  const transfer = await execInSource(
    ctx,
    pair,
    "bandwidth",
    mssCommand(pair.to.address, IPERF_PORT, timeoutMs),
    { timeoutMs: 2 * timeoutMs + 30_000, signal },
  );
  if (signal?.aborted) return undefined;
  const tcp = parseTcpTransfer(transfer);
  const ipv6 = pair.to.address.includes(":");
  const payloads = parseMtu(result);
  // Full-size UDP datagrams; the small ones only when those were lost (a healthy path costs one run).
  const udpRun = async (size: number) => {
    const out = await execInSource(
      ctx,
      pair,
      "bandwidth",
      udpCommand(pair.to.address, IPERF_PORT, size, timeoutMs),
      { timeoutMs: timeoutMs + 30_000, signal },
    );
    return parseUdpDatagrams(out, size);
  };
  const udp: UdpMtu = {
    full: await udpRun(fullUdpPayload(payloads.ok ? payloads.podMtu : undefined, ipv6)),
  };
  if (signal?.aborted) return undefined;
  if (udp.full.passed === false) udp.small = await udpRun(UDP_SMALL_BYTES);
  if (signal?.aborted) return undefined;
  const parsed = udpMtuVerdict(mtuVerdict(payloads, tcp, ipv6), udp, ipv6);
  const udpThrough = udpLargest(udp);
  return {
    phase: "mtu",
    ...pathEnds(pair),
    ok: parsed.ok,
    ...(parsed.ok ? {} : { errorClass: parsed.errorClass, message: parsed.message }),
    largestPayload: parsed.largest,
    ...(parsed.ok && parsed.podMtu ? { podMtu: parsed.podMtu } : {}),
    ...(tcp.mss === undefined ? {} : { mss: tcp.mss }),
    ...(udpThrough === undefined ? {} : { udpDatagram: udpThrough }),
    ...(udp.full.passed === undefined ? {} : { udpFullSize: udp.full.passed }),
    attempts: 1,
    durationMs: elapsedMs(timers, started),
  };
}

/** One path's bandwidth with short retries for a busy server or a reset connection. */
export async function measureBandwidth(
  ctx: CheckContext,
  pair: Pair<Endpoint>,
): Promise<PathResult | undefined> {
  const { options, signal, timers } = ctx;
  const started = timers.now();
  const base = {
    phase: "bandwidth" as const,
    ...pathEnds(pair),
  };
  for (let attempt = 1;; attempt++) {
    const result = await execInSource(
      ctx,
      pair,
      "bandwidth",
      [
        "iperf3",
        "-c",
        pair.to.address,
        "-p",
        String(IPERF_PORT),
        "-t",
        String(options.bandwidthTimeS),
        "--connect-timeout",
        String(options.connectTimeoutMs),
        "-J",
      ],
      { timeoutMs: (options.bandwidthTimeS + 30) * 1000, signal },
    );
    if (signal?.aborted) return undefined;
    const parsed = parseIperf(result);
    const durationMs = elapsedMs(timers, started);
    if (parsed.ok) {
      const bps = parsed.bitsPerSecond;
      const slow = options.minBandwidthBps > 0 && bps < options.minBandwidthBps;
      return {
        ...base,
        ok: !slow,
        ...(slow
          ? {
            errorClass: "SLOW",
            message: `${formatBps(bps)} is below --min-bandwidth ${
              formatBps(options.minBandwidthBps)
            }`,
          }
          : {}),
        bitsPerSecond: bps,
        attempts: attempt,
        durationMs,
      };
    }
    if (!parsed.retryable || attempt > options.bandwidthRetries) {
      return {
        ...base,
        ok: false,
        errorClass: parsed.errorClass ?? "IPERF",
        message: parsed.message,
        attempts: attempt,
        durationMs,
      };
    }
    log.debug("Retrying {from} → {to}: {message}", { ...base, message: parsed.message });
    await sleep(timers, ctx.retryDelayMs ?? 1000 * attempt, signal);
  }
}

/**
 * One cross-network path: a single /hostname request from a pod of one
 * network to the address of a pod of another. Answered by that pod itself
 * or another network's probe pod: LEAK, naming both pods, nodes and
 * networks (isolation.ts; `probes` are the round's probe pods).
 */
export async function checkIsolation(
  ctx: CheckContext,
  pair: Pair<NetworkEndpoint>,
  networks: ProbeNetwork[],
  probes: ProbePodNetworks,
): Promise<PathResult | undefined> {
  const { options, signal, timers } = ctx;
  const started = timers.now();
  const url = `http://${joinHostPort(pair.to.address, CONNECT_PORT)}/hostname`;
  const result = await execInSource(
    ctx,
    pair,
    "connect",
    latencyCommand(url, 1, options.isolationTimeoutMs),
    { timeoutMs: options.isolationTimeoutMs + 30_000, signal },
  );
  if (signal?.aborted) return undefined;
  const verdict = isolationVerdict(parseLatency(result, 1), pair.to.pod, pair.from.network, probes);
  const fromNet = networks[pair.from.network].name, toNet = networks[pair.to.network].name;
  const base = {
    phase: "isolation" as const,
    network: `${fromNet} → ${toNet}`,
    ...pathEnds(pair),
    attempts: 1,
    durationMs: elapsedMs(timers, started),
  };
  if (verdict.isolated) return { ...base, ok: true, message: verdict.detail };
  const cause = verdict.errorClass === "LEAK"
    ? "; a route or bridge joins the two networks, or the plugin put both pods in one network"
    : "; isolation is not shown for this path";
  return {
    ...base,
    ok: false,
    errorClass: verdict.errorClass,
    message: `pod "${pair.from.pod}" (network ${fromNet}, node ${pair.from.node}) asked ` +
      `${pair.to.address} of pod "${pair.to.pod}" (network ${toNet}, node ${pair.to.node}): ` +
      verdict.detail + cause,
  };
}

/** The nodes and pods at a path's two ends, as every result of it names them. */
function pathEnds(pair: { from: PathEnd; to: PathEnd }) {
  return { from: pair.from.node, to: pair.to.node, fromPod: pair.from.pod, toPod: pair.to.pod };
}

interface PathEnd {
  node: string;
  pod: string;
}
