/**
 * Latency per path, measured inside the probe pod: `curl` (in the agnhost
 * image beside /agnhost) makes several HTTP requests to the target pod's
 * agnhost netexec `/hostname`, each on a new TCP connection (Connection:
 * close), and prints after each answer its timings. The TCP connect time is
 * one handshake round trip; the request round trip is request sent → first
 * byte of the answer. Timing outside the pod (the exec session) would
 * measure the API server and the kubelet, not the path.
 *
 * The answer names the pod that answered (its hostname is its name), which
 * the isolation check compares with the pod it meant to reach. What a pod
 * answers is input from a possible attacker: the output must have exactly
 * the expected shape or the path fails as BAD_ANSWER.
 */
import type { ExecResult } from "../cluster/netcheck_cluster.ts";
import { curlCommand } from "./curl.ts";
import { podLine, tooLongOutcome } from "../cluster/exec_output.ts";

/** p50, p99 and max of a set of samples, ms. */
export interface Percentiles {
  p50: number;
  p99: number;
  max: number;
}

/** A path's latency figures. */
export interface LatencyFigures {
  samples: number;
  connect: Percentiles;
  request: Percentiles;
}

/**
 * The nearest-rank percentile `q` (0 < q ≤ 1) of `sorted` (ascending, not
 * empty): the smallest sample with at least q of the samples at or below it.
 */
export function nearestRank(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) throw new RangeError("no samples");
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1];
}

/** p50, p99 and max of `samples` (ms); throws a RangeError when there are none. */
export function percentiles(samples: readonly number[]): Percentiles {
  return percentilesInPlace([...samples]);
}

const ascending = (a: number, b: number) => a - b;

/** percentiles() of `samples`, sorting them in place (no copy). */
function percentilesInPlace(samples: number[]): Percentiles {
  const sorted = samples.sort(ascending);
  return {
    p50: nearestRank(sorted, 0.5),
    p99: nearestRank(sorted, 0.99),
    max: sorted[sorted.length - 1],
  };
}

const MARK = "LACE";
/** curl's per-answer line: code, connections made, connect, pretransfer, first byte (s). */
const WRITE_OUT =
  `\\n${MARK} %{http_code} %{num_connects} %{time_connect} %{time_pretransfer} %{time_starttransfer}\\n`;

/** The `curl` command measuring `samples` requests to `url` (each on its own connection). */
export function latencyCommand(url: string, samples: number, timeoutMs: number): string[] {
  return [
    ...curlCommand(timeoutMs),
    "--max-filesize",
    "1024",
    "--header",
    "Connection: close",
    "--write-out",
    WRITE_OUT,
    ...Array<string>(samples).fill(url),
  ];
}

/** What one latency exec found. */
export type LatencyOutcome =
  | { ok: true; figures: LatencyFigures; identity: string }
  | {
    ok: false;
    errorClass: "TIMEOUT" | "BAD_ANSWER" | "UNKNOWN" | "NO_CURL" | "TOO_LONG";
    message: string;
  };

/** A pod name as netexec's /hostname reports it: a DNS subdomain, at most 253 characters. */
const connectScratch: number[] = [], requestScratch: number[] = [];

const podName = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const seconds = /^\d{1,6}(\.\d{1,9})?$/;

/**
 * Reads the output of latencyCommand(). Every sample must have answered 200
 * on a connection of its own with a pod name; all samples must name the same
 * pod. A sample without an answer fails the path as TIMEOUT (the connect
 * check says why); anything else is BAD_ANSWER with what was wrong.
 */
export function parseLatency(result: ExecResult, samples: number): LatencyOutcome {
  const tooLong = tooLongOutcome(result);
  if (tooLong) return tooLong;
  if (result.error !== undefined) {
    return { ok: false, errorClass: "UNKNOWN", message: `exec failed: ${podLine(result.error)}` };
  }
  if (
    result.exitCode === 126 || result.exitCode === 127 || /executable file not found/.test(
      result.stderr,
    )
  ) {
    return {
      ok: false,
      errorClass: "NO_CURL",
      message:
        "the agnhost image has no curl: use the upstream agnhost image or --latency-samples=0",
    };
  }
  const lines = result.stdout.split("\n");
  if (lines.at(-1) === "") lines.pop();
  if (lines.length !== 2 * samples) {
    return {
      ok: false,
      errorClass: "BAD_ANSWER",
      message: `expected ${samples} answers of one line each, got ${lines.length} lines`,
    };
  }
  // The samples go to two arrays kept for every call (parsing is synchronous): two arrays per
  // path, living as long as a burst of paths takes to parse, are pretenured by V8 in large
  // clusters and become old-generation garbage.
  const connect = connectScratch, request = requestScratch;
  connect.length = 0;
  request.length = 0;
  let identity: string | undefined;
  for (let i = 0; i < samples; i++) {
    const body = lines[2 * i];
    const fields = lines[2 * i + 1].split(" ");
    if (
      fields.length !== 6 || fields[0] !== MARK || !fields.slice(3).every((f) => seconds.test(f))
    ) {
      return { ok: false, errorClass: "BAD_ANSWER", message: `sample ${i + 1}: malformed timings` };
    }
    const [, code, connects, tConnect, tPre, tFirst] = fields;
    if (code === "000") {
      return {
        ok: false,
        errorClass: "TIMEOUT",
        message: `sample ${i + 1} of ${samples} got no answer`,
      };
    }
    if (code !== "200") {
      return { ok: false, errorClass: "BAD_ANSWER", message: `sample ${i + 1}: HTTP ${code}` };
    }
    if (connects !== "1") {
      return {
        ok: false,
        errorClass: "BAD_ANSWER",
        message: `sample ${i + 1} reused a connection (Connection: close ignored)`,
      };
    }
    if (!podName.test(body)) {
      return {
        ok: false,
        errorClass: "BAD_ANSWER",
        message: `sample ${i + 1}: /hostname answered no pod name`,
      };
    }
    if (identity !== undefined && body !== identity) {
      return {
        ok: false,
        errorClass: "BAD_ANSWER",
        message: `samples were answered by different pods ("${identity}", "${body}")`,
      };
    }
    identity = body;
    connect.push(Number(tConnect) * 1000);
    request.push(Math.max(Number(tFirst) - Number(tPre), 0) * 1000);
  }
  if (identity === undefined) {
    return { ok: false, errorClass: "BAD_ANSWER", message: "no samples" };
  }
  return {
    ok: true,
    identity,
    figures: {
      samples,
      connect: percentilesInPlace(connect),
      request: percentilesInPlace(request),
    },
  };
}

/** The larger of a path's connect and request p99, ms (what "slowest" and --max-latency use). */
export function worstP99(figures: LatencyFigures): number {
  return Math.max(figures.connect.p99, figures.request.p99);
}

/** "1.23 ms" style figure. */
export function formatMs(ms: number): string {
  return ms >= 100
    ? `${ms.toFixed(0)} ms`
    : ms >= 10
    ? `${ms.toFixed(1)} ms`
    : `${ms.toFixed(2)} ms`;
}
