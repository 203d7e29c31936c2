/**
 * What a probe pod's exec prints on the in-memory cluster, from the two nodes
 * of its path and their faults: agnhost's connect, curl's latency samples and
 * MTU payloads, iperf3's full-size transfer and UDP datagrams, and its bandwidth test
 * (IperfServers, which counts a busy server's retries).
 */
import type { ExecResult } from "../../lib/netcheck/cluster/netcheck_cluster.ts";
import type { FakeNode } from "./fake_nodes.ts";

const DEFAULT_BPS = 9.4e9;

/** The address an exec's command reaches: iperf3's -c, curl's URL host or agnhost's host:port. */
export function execTarget(container: string, command: string[]): string {
  if (container === "bandwidth") return command[command.indexOf("-c") + 1];
  if (command[0] === "curl") return command.at(-1)!.replace(/^http:\/\/\[?(.*?)\]?:\d+\/.*$/, "$1");
  return command.at(-1)!.replace(/^\[?(.*?)\]?:\d+$/, "$1");
}

/** The iperf3 servers of every node: each answers "busy" its node's busyTimes first. */
export class IperfServers {
  #busyLeft = new Map<string, number>();

  constructor(
    nodes: FakeNode[],
    /** Rewrites the output of a test that ran (undefined: keep it). */
    readonly output?: (json: string, from: string, to: string) => ExecResult | undefined,
  ) {
    // Only the nodes that answer busy: a map of every node is O(N) of the figure's memory.
    for (const n of nodes) if (n.busyTimes) this.#busyLeft.set(n.name, n.busyTimes);
  }

  /** iperf3 -c's answer for a bandwidth test from `from` to `to`. */
  answer(from: FakeNode, to: FakeNode | undefined): ExecResult {
    if (!to || from.unreachable || to.unreachable) return unreachableIperf();
    const busy = this.#busyLeft.get(to.name) ?? 0;
    if (busy > 0) {
      this.#busyLeft.set(to.name, busy - 1);
      return {
        exitCode: 1,
        stdout: JSON.stringify({
          start: {},
          end: {},
          error: "error - the server is busy running a test. try again later",
        }),
        stderr: "",
      };
    }
    const bps = from.egressBps ?? DEFAULT_BPS;
    const json = JSON.stringify({
      start: {},
      intervals: [],
      end: { sum_received: { bits_per_second: bps } },
    });
    return this.output?.(json, from.name, to.name) ??
      { exitCode: 0, stdout: json + "\n", stderr: "" };
  }
}

/** iperf3's answer when the server cannot be reached. */
export function unreachableIperf(): ExecResult {
  return {
    exitCode: 1,
    stdout: JSON.stringify({ start: {}, end: {}, error: "unable to connect to server" }),
    stderr: "",
  };
}

export function connectAnswer(from: FakeNode, to: FakeNode | undefined): ExecResult {
  if (!to) return { exitCode: 1, stdout: "", stderr: "OTHER: connect: no route to host\n" };
  if (from.unreachable || to.unreachable) return { exitCode: 1, stdout: "", stderr: "TIMEOUT\n" };
  if (to.refuses) return { exitCode: 1, stdout: "", stderr: "REFUSED\n" };
  return { exitCode: 0, stdout: "", stderr: "" };
}

/** curl's output for latencyCommand(): each sample answered by the pod the address routes to. */
export function curlAnswer(
  from: FakeNode,
  to: FakeNode | undefined,
  answeredBy: string,
  command: string[],
): ExecResult {
  const samples = command.filter((a) => a.startsWith("http://")).length;
  const lines: string[] = [];
  const reachable = to && !from.unreachable && !to.unreachable && !to.refuses;
  for (let i = 0; i < samples; i++) {
    const rtt = ((to?.rttMs ?? 0.2) * (i === samples - 1 ? 3 : 1)) / 1000;
    lines.push(
      reachable ? answeredBy : "",
      reachable
        ? `LACE 200 1 ${rtt.toFixed(6)} ${rtt.toFixed(6)} ${(2 * rtt).toFixed(6)}`
        : "LACE 000 0 0.000000 0.000000 0.000000",
    );
  }
  return { exitCode: reachable ? 0 : 28, stdout: lines.join("\n") + "\n", stderr: "" };
}

/** curl's output for mtuCommand(): the pod MTU, then each /echo payload whole or lost. */
export function mtuAnswer(from: FakeNode, to: FakeNode | undefined, command: string[]): ExecResult {
  const lines = ["1500", "LACE 000 5"];
  for (const url of command.filter((a) => a.includes("/echo?msg="))) {
    const size = url.length - url.indexOf("msg=") - 4;
    const limit = Math.min(from.blackHoleAbove ?? Infinity, to?.blackHoleAbove ?? Infinity);
    const through = to && !from.unreachable && !to.unreachable && size <= limit;
    lines.push("", through ? `LACE 200 ${size}` : "LACE 000 0");
  }
  return { exitCode: 0, stdout: lines.join("\n") + "\n", stderr: "" };
}

/** iperf3 -n (the MTU check's full-size transfer): MSS 1448; segments of 1500 B lost in a black hole. */
export function transferAnswer(from: FakeNode, to: FakeNode | undefined): ExecResult {
  // Unreachable: the same "unable to connect" as a bandwidth test.
  if (!to || from.unreachable || to.unreachable) return unreachableIperf();
  const limit = Math.min(from.blackHoleAbove ?? Infinity, to.blackHoleAbove ?? Infinity);
  const start = { tcp_mss_default: 1448 };
  const json = limit < 1500
    ? { start, end: {}, error: "unable to write to stream socket: Connection timed out" }
    : { start, end: { sum_received: { bytes: 1 << 20 } } };
  return { exitCode: 0, stdout: JSON.stringify(json) + "\n", stderr: "" };
}

/** iperf3 -u -l SIZE (the MTU check's UDP datagrams): none arrive above a black hole. */
export function udpDatagramsAnswer(
  from: FakeNode,
  to: FakeNode | undefined,
  command: string[],
): ExecResult {
  if (!to || from.unreachable || to.unreachable) return unreachableIperf();
  const size = Number(command[command.indexOf("-l") + 1]);
  const limit = Math.min(
    ...[from, to].flatMap((n) => [n.blackHoleAbove ?? Infinity, n.udpBlackHoleAbove ?? Infinity]),
  );
  const sent = Math.ceil(1_000_000 / 8 / size);
  const json = {
    start: {},
    end: { sum_sent: { packets: sent }, sum_received: { packets: size + 28 > limit ? 0 : sent } },
  };
  return { exitCode: 0, stdout: JSON.stringify(json) + "\n", stderr: "" };
}
