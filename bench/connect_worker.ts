/**
 * The connecting side of the hook-cost figure: a process inside the simulated
 * node's namespace that owns the listeners and, on request, moves itself
 * into a cgroup and makes blocking TCP connects to one of them, timing only
 * the connect() calls. The listeners are the pod's: opened inside the pod's
 * network namespace (the worker's thread enters it for that, then returns)
 * on the pod's addresses, so each connect crosses the veth into the pod and
 * the pod's kernel answers, as a kubelet probe does; without a pod they are
 * on loopback. Each connection is accepted and both ends are reset
 * (SO_LINGER 0), so no TIME_WAIT piles up over many thousands of connects.
 *
 *   ready:    {"ready": true, "ports": {"ipv4": [p1, p2], "ipv6": [p3, p4]}}
 *   request:  {"cgroup": "/sys/fs/cgroup/…", "family": "ipv4", "port": p1, "count": 1000}
 *   response: {"count": 1000, "totalNs": 31234567, "medianNs": 30911}
 *
 * Run it with `nsenter --net=/run/netns/<ns> deno run -A bench/connect_worker.ts
 * [/run/netns/<pod> <pod IPv4> <pod IPv6>]`.
 */
import { lines } from "../lib/os/process.ts";

const LIBC = {
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" }, // int socket(int, int, int)
  bind: { parameters: ["i32", "buffer", "u32"], result: "i32" }, // int bind(int, const struct sockaddr *, socklen_t)
  listen: { parameters: ["i32", "i32"], result: "i32" }, // int listen(int, int)
  getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" }, // int getsockname(int, struct sockaddr *, socklen_t *)
  connect: { parameters: ["i32", "buffer", "u32"], result: "i32" }, // int connect(int, const struct sockaddr *, socklen_t)
  accept4: { parameters: ["i32", "pointer", "pointer", "i32"], result: "i32" }, // int accept4(int, struct sockaddr *, socklen_t *, int)
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" }, // int setsockopt(int, int, int, const void *, socklen_t)
  close: { parameters: ["i32"], result: "i32" }, // int close(int)
  __errno_location: { parameters: [], result: "pointer" }, // int *__errno_location(void)
  open: { parameters: ["buffer", "i32"], result: "i32" }, // int open(const char *, int)
  setns: { parameters: ["i32", "i32"], result: "i32" }, // int setns(int fd, int nstype)
} as const satisfies Deno.ForeignLibraryInterface;

const AF_INET = 2, AF_INET6 = 10, SOCK_STREAM = 1, SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1, SO_LINGER = 13, SO_MARK = 36;
const O_RDONLY = 0, O_CLOEXEC = 0o2000000, CLONE_NEWNET = 0x40000000;

type Family = "ipv4" | "ipv6";

export interface ConnectRequest {
  cgroup: string;
  family: Family;
  port: number;
  count: number;
  /**
   * SO_MARK to set on each socket before its connect (not timed): a socket
   * outside the kubelet's cgroup then takes the route a tagged probe takes.
   */
  mark?: number;
}

export interface ConnectResponse {
  count: number;
  totalNs: number;
  /** Median of the single connect() times: robust against a preempted call. */
  medianNs: number;
  error?: string;
}

/** The listeners' addresses: the pod's when given, else loopback. */
const [podNetns, podIpv4, podIpv6] = Deno.args;
const ADDRESS: Record<Family, string> = { ipv4: podIpv4 ?? "127.0.0.1", ipv6: podIpv6 ?? "::1" };

function sockaddr(family: Family, port: number): Uint8Array<ArrayBuffer> {
  if (family === "ipv4") {
    const sa = new Uint8Array(16);
    const v = new DataView(sa.buffer);
    v.setUint16(0, AF_INET, true);
    v.setUint16(2, port, false);
    sa.set(ADDRESS.ipv4.split(".").map(Number), 4);
    return sa;
  }
  const sa = new Uint8Array(28);
  const v = new DataView(sa.buffer);
  v.setUint16(0, AF_INET6, true);
  v.setUint16(2, port, false);
  sa.set(ipv6Bytes(ADDRESS.ipv6), 8);
  return sa;
}

/** The 16 bytes of an IPv6 address in text form ("::" allowed once). */
function ipv6Bytes(text: string): number[] {
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const groups = (s: string | undefined) => (s ? s.split(":").map((g) => parseInt(g, 16)) : []);
  const h = groups(head), t = groups(tail);
  const all = [...h, ...Array(8 - h.length - t.length).fill(0), ...t];
  return all.flatMap((g) => [g >> 8, g & 255]);
}

function main(): Promise<void> {
  const libc = Deno.dlopen("libc.so.6", LIBC);
  const c = libc.symbols;
  const errno = () => new Deno.UnsafePointerView(c.__errno_location()!).getInt32();
  const check = (rc: number, what: string) => {
    if (rc < 0) throw new Error(`${what} failed: errno ${errno()}`);
    return rc;
  };
  const afOf = (f: Family) => (f === "ipv4" ? AF_INET : AF_INET6);
  const listeners = new Map<string, number>(); // "family:port" -> listening fd

  const listen = (family: Family): number => {
    const fd = check(c.socket(afOf(family), SOCK_STREAM | SOCK_CLOEXEC, 0), "socket");
    const sa = sockaddr(family, 0);
    check(c.bind(fd, sa, sa.length), `bind ${family} ${ADDRESS[family]}`);
    check(c.listen(fd, 128), "listen");
    const len = new Uint32Array([sa.length]);
    check(c.getsockname(fd, sa, new Uint8Array(len.buffer)), "getsockname");
    const port = new DataView(sa.buffer).getUint16(2, false);
    listeners.set(`${family}:${port}`, fd);
    return port;
  };
  // A socket stays in the namespace it was made in: make the pod's listeners inside the pod's
  // namespace (setns moves only this thread, the one FFI calls run on), then come back.
  const path = (p: string) => new TextEncoder().encode(p + "\0");
  const nodeNs = podNetns
    ? check(c.open(path("/proc/thread-self/ns/net"), O_RDONLY | O_CLOEXEC), "open node netns")
    : -1;
  if (podNetns) {
    const podNs = check(c.open(path(podNetns), O_RDONLY | O_CLOEXEC), `open ${podNetns}`);
    check(c.setns(podNs, CLONE_NEWNET), `setns into ${podNetns}`);
    c.close(podNs);
  }
  const ports = { ipv4: [listen("ipv4"), listen("ipv4")], ipv6: [listen("ipv6"), listen("ipv6")] };
  if (podNetns) {
    check(c.setns(nodeNs, CLONE_NEWNET), "setns back into the node's namespace");
    c.close(nodeNs);
  }
  const linger0 = new Uint8Array(new Int32Array([1, 0]).buffer);

  const connects = (req: ConnectRequest): ConnectResponse => {
    const listener = listeners.get(`${req.family}:${req.port}`);
    if (listener === undefined) throw new Error(`No listener on ${req.family} port ${req.port}`);
    // Sockets take the cgroup of the task that creates them.
    Deno.writeTextFileSync(`${req.cgroup}/cgroup.procs`, String(Deno.pid));
    const sa = sockaddr(req.family, req.port);
    const mark = req.mark ? new Uint8Array(new Uint32Array([req.mark]).buffer) : undefined;
    let total = 0;
    const times = new Float64Array(req.count);
    for (let i = 0; i < req.count; i++) {
      const fd = check(c.socket(afOf(req.family), SOCK_STREAM | SOCK_CLOEXEC, 0), "socket");
      if (mark) {
        check(c.setsockopt(fd, SOL_SOCKET, SO_MARK, mark, mark.length), "setsockopt SO_MARK");
      }
      const t0 = performance.now();
      const rc = c.connect(fd, sa, sa.length);
      const t1 = performance.now();
      if (rc < 0) {
        const e = errno();
        c.close(fd);
        throw new Error(`connect to ${ADDRESS[req.family]} port ${req.port} failed: errno ${e}`);
      }
      total += t1 - t0;
      times[i] = t1 - t0;
      const peer = check(c.accept4(listener, null, null, SOCK_CLOEXEC), "accept4");
      c.setsockopt(fd, SOL_SOCKET, SO_LINGER, linger0, linger0.length);
      c.close(fd);
      c.close(peer);
    }
    times.sort();
    return {
      count: req.count,
      totalNs: Math.round(total * 1e6),
      medianNs: Math.round(times[Math.floor(req.count / 2)] * 1e6),
    };
  };

  const out = (o: unknown) =>
    Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify(o) + "\n"));
  out({ ready: true, ports });
  return (async () => {
    for await (const line of lines(Deno.stdin.readable)) {
      if (!line.trim()) continue;
      try {
        out(connects(JSON.parse(line)));
      } catch (e) {
        out({ count: 0, totalNs: 0, medianNs: 0, error: String(e) });
      }
    }
    for (const fd of listeners.values()) c.close(fd);
    libc.close();
  })();
}

if (import.meta.main) await main();
