/**
 * A kubelet-like prober: a long-lived process placed in a cgroup and run in
 * the node namespace. It reads JSON-line requests on stdin and answers each
 * with a JSON line, including the socket mark the connection carried, read
 * with getsockopt(SO_MARK) on the very socket that connected.
 *
 *   request:  {"host": "10.244.1.10", "port": 8080, "timeoutMs": 2000, "http": "/healthz"}
 *   response: {"result": "reached", "body": "pod-net1", "httpStatus": 200, "mark": 69632}
 */
import { isIPv4 } from "node:net";
import { parseAddress } from "../net/address.ts";
import { lines } from "../os/process.ts";
import { moduleCommand } from "../os/self_command.ts";
import { Errno, errnoName, lastErrno, type Libc, libcSymbols } from "../libbpf/mod.ts";
import { requestTarget } from "./request_target.ts";

export interface ProbeRequest {
  host: string;
  port: number;
  timeoutMs: number;
  /** Send an HTTP/1.0 GET for this path; otherwise read what the server writes. */
  http?: string;
  /** Only connect, like a tcpSocket probe (for `lace doctor probes`). */
  connectOnly?: boolean;
}

export type ProbeOutcome = "reached" | "TIMEOUT" | "REFUSED" | "NO_ROUTE" | "ERROR";

export interface ProbeResponse {
  result: ProbeOutcome;
  body?: string;
  httpStatus?: number;
  /** SO_MARK of the socket after connect (set by the connect program, if at all). */
  mark?: number;
  error?: string;
}

const AF_INET = 2, AF_INET6 = 10, SOCK_STREAM = 1, SOCK_NONBLOCK = 0o4000, SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1, SO_ERROR = 4, SO_MARK = 36;
const POLLIN = 1, POLLOUT = 4;
/** The most of a pod's answer the doctor reads: its status line and the start of its body. */
const MAX_ANSWER = 64 * 1024;

function sockaddr(host: string, port: number): { family: number; bytes: Uint8Array } {
  const { family, bytes } = parseAddress(host);
  if (isIPv4(host)) {
    const sa = new Uint8Array(16);
    new DataView(sa.buffer).setUint16(0, AF_INET, true);
    new DataView(sa.buffer).setUint16(2, port, false);
    sa.set(bytes, 4);
    return { family: AF_INET, bytes: sa };
  }
  const sa = new Uint8Array(28);
  new DataView(sa.buffer).setUint16(0, AF_INET6, true);
  new DataView(sa.buffer).setUint16(2, port, false);
  // An IPv4-mapped address stays mapped: the socket is AF_INET6 on purpose.
  if (family === "ipv4") sa.set([0xff, 0xff, ...bytes], 8 + 10);
  else sa.set(bytes, 8);
  return { family: AF_INET6, bytes: sa };
}

/** An ERROR outcome says which call failed and its errno name; the named outcomes need no more. */
function withErrno(response: ProbeResponse, call: string, err: number): ProbeResponse {
  return response.result === "ERROR"
    ? { ...response, error: `${call} failed: ${errnoName(err)}` }
    : response;
}

function outcomeOf(err: number): ProbeOutcome {
  if (err === Errno.ECONNREFUSED) return "REFUSED";
  if (err === Errno.ENETUNREACH || err === Errno.EHOSTUNREACH) return "NO_ROUTE";
  if (err === Errno.ETIMEDOUT) return "TIMEOUT";
  return "ERROR";
}

function sockopt(c: Libc, fd: number, opt: number): number {
  const value = new Int32Array(1), len = new Uint32Array([4]);
  c.getsockopt(fd, SOL_SOCKET, opt, new Uint8Array(value.buffer), new Uint8Array(len.buffer));
  return value[0];
}

/** Waits for `events` on fd until the deadline; false on timeout. */
function waitFor(c: Libc, fd: number, events: number, deadline: number): boolean {
  const pfd = new Uint8Array(8);
  const view = new DataView(pfd.buffer);
  view.setInt32(0, fd, true);
  view.setInt16(4, events, true);
  const ms = Math.max(0, deadline - Date.now());
  return c.poll(pfd, 1n, ms) > 0;
}

/** Whether the socket is connected: getpeername's return value, which needs no errno. */
function isConnected(c: Libc, fd: number): boolean {
  const addr = new Uint8Array(128), len = new Uint32Array([addr.length]);
  return c.getpeername(fd, addr, new Uint8Array(len.buffer)) === 0;
}

/**
 * Connects the non-blocking socket and says how it ended. The verdict comes from the
 * socket itself (SO_ERROR, then whether it has a peer), never from errno alone: errno is
 * read after V8 may have run (lastErrno), so it only names a connect that failed at once.
 */
function connectOnce(
  c: Libc,
  fd: number,
  sa: Uint8Array,
  deadline: number,
  errnoOf: () => number,
): { outcome: "connected" } | { outcome: ProbeOutcome; errno?: number } {
  if (c.connect(fd, sa, sa.length) === 0) return { outcome: "connected" };
  const hint = errnoOf();
  // In progress, or failed at once: either way poll returns (a failed socket is ready at once).
  if (!waitFor(c, fd, POLLOUT, deadline)) return { outcome: "TIMEOUT" };
  const err = sockopt(c, fd, SO_ERROR);
  if (err) return { outcome: outcomeOf(err), errno: err };
  if (isConnected(c, fd)) return { outcome: "connected" };
  return { outcome: hint === Errno.EINPROGRESS ? "ERROR" : outcomeOf(hint), errno: hint };
}

/**
 * Probes once, synchronously: connect, read the mark, then talk HTTP or raw TCP. `errnoOf`
 * reads errno (a parameter so tests can play a runtime that clobbered it).
 */
export function probeOnce(
  c: Libc,
  req: ProbeRequest,
  errnoOf: () => number = lastErrno,
): ProbeResponse {
  const deadline = Date.now() + req.timeoutMs;
  const { family, bytes } = sockaddr(req.host, req.port);
  const fd = c.socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return { result: "ERROR", error: `socket failed: ${errnoName(errnoOf())}` };
  try {
    const connected = connectOnce(c, fd, bytes, deadline, errnoOf);
    const mark = sockopt(c, fd, SO_MARK) >>> 0;
    if (connected.outcome !== "connected") {
      const { outcome, errno } = connected;
      return errno === undefined
        ? { result: outcome, mark }
        : withErrno({ result: outcome, mark }, "connect", errno);
    }
    if (req.connectOnly) return { result: "reached", mark };
    if (req.http !== undefined) {
      const request = new TextEncoder().encode(
        `GET ${requestTarget(req.http)} HTTP/1.0\r\nHost: ${
          req.host.includes(":") ? `[${req.host}]` : req.host
        }\r\nConnection: close\r\n\r\n`,
      );
      if (c.write(fd, request, BigInt(request.length)) !== BigInt(request.length)) {
        return { result: "ERROR", mark, error: "short write" };
      }
    }
    // The answer comes from the pod's author: read at most MAX_ANSWER bytes of it, into one buffer.
    const answer = new Uint8Array(MAX_ANSWER);
    let used = 0, failedWhenReady = false;
    while (used < answer.length) {
      const n = Number(c.read(fd, answer.subarray(used), BigInt(answer.length - used)));
      if (n > 0) {
        used += n;
        failedWhenReady = false;
      } else if (n === 0) break;
      else {
        const err = errnoOf();
        // A failure right after the socket was ready is believed; one before, whatever
        // errno says (it may be V8's), waits for the socket first and reads again.
        if (err !== Errno.EAGAIN && failedWhenReady) {
          return { result: "ERROR", mark, error: `read failed: ${errnoName(err)}` };
        }
        if (!waitFor(c, fd, POLLIN, deadline)) return { result: "TIMEOUT", mark };
        failedWhenReady = true;
        continue;
      }
    }
    const text = new TextDecoder().decode(answer.subarray(0, used));
    if (req.http === undefined) return { result: "reached", body: text, mark };
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
    const split = text.indexOf("\r\n\r\n");
    return {
      result: "reached",
      httpStatus: status,
      body: split >= 0 ? text.slice(split + 4) : "",
      mark,
    };
  } finally {
    c.close(fd);
  }
}

/** Answers JSON-line probe requests on stdin until stdin closes. */
export async function runProber(_args: string[]): Promise<void> {
  const libc = libcSymbols();
  const out = (o: unknown) => Deno.stdout.write(new TextEncoder().encode(JSON.stringify(o) + "\n"));
  await out({ ready: true, pid: Deno.pid });
  for await (const line of lines(Deno.stdin.readable)) {
    if (!line.trim()) continue;
    let response: ProbeResponse;
    try {
      response = probeOnce(libc, JSON.parse(line));
    } catch (e) {
      response = { result: "ERROR", error: String(e) };
    }
    await out(response);
  }
}

/**
 * The command that runs a prober in `cgroup` and, when given, network namespace `netns`: the
 * shell joins the cgroup before exec, so every connect happens inside it.
 */
export function proberCommand(cgroup: string, netns?: string): string[] {
  const script = 'cg=$1; shift; echo $$ > "$cg/cgroup.procs" && exec "$@"';
  const prober = moduleCommand(import.meta.url, "__prober", []);
  const inNetns = netns ? ["ip", "netns", "exec", netns, ...prober] : prober;
  return ["sh", "-c", script, "sh", cgroup, ...inNetns];
}

export interface ProberOptions {
  /** Network namespace the prober runs in (the simulated node). */
  netns: string;
  /** cgroup v2 directory the prober is placed in before it connects. */
  cgroup: string;
}

/** A running prober process; requests are answered one at a time, in order. */
export class Prober implements AsyncDisposable {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncGenerator<string>;
  #queue: Promise<unknown> = Promise.resolve();
  readonly pid: number;

  private constructor(child: Deno.ChildProcess, pid: number, it: AsyncGenerator<string>) {
    this.#child = child;
    this.pid = pid;
    this.#writer = child.stdin.getWriter();
    this.#lines = it;
  }

  /** Starts a prober in `cgroup` and `netns`; resolves once it is ready. */
  static async start(opts: ProberOptions): Promise<Prober> {
    const [command, ...args] = proberCommand(opts.cgroup, opts.netns);
    const child = new Deno.Command(command, {
      args,
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const it = lines(child.stdout);
    const first = await it.next();
    if (first.done) {
      await child.status;
      throw new Error(`Prober did not start in cgroup "${opts.cgroup}" and netns "${opts.netns}"`);
    }
    const { pid } = JSON.parse(first.value) as { pid: number };
    return new Prober(child, pid, it);
  }

  /** Sends one probe and waits for its answer. */
  probe(req: ProbeRequest): Promise<ProbeResponse> {
    const next = this.#queue.then(async () => {
      await this.#writer.write(new TextEncoder().encode(JSON.stringify(req) + "\n"));
      const line = await this.#lines.next();
      if (line.done) throw new Error("Prober exited");
      return JSON.parse(line.value) as ProbeResponse;
    });
    this.#queue = next.catch(() => {});
    return next;
  }

  async dispose(): Promise<void> {
    try {
      await this.#writer.close();
    } catch {
      // Already closed.
    }
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await this.#child.status;
    for await (const _ of this.#lines) { /* drain */ }
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}

if (import.meta.main) await runProber(Deno.args);
