/**
 * The node's own addresses as the kubelet's network namespace has them, the one the kubelet
 * probes host-network pods in, read through a process of the kubelet's cgroup
 * (/proc/<pid>/net/fib_trie and if_inet6: no setns). The agent's own namespace is the same one
 * as the chart runs it (hostNetwork), but an agent run elsewhere (a chart without hostNetwork,
 * a unit in another namespace) would otherwise hold the wrong set and the check would fail open.
 *
 * When no namespace can be read (no process in the cgroup, /proc unreadable, text it cannot
 * parse) it fails closed without losing state: the last set read from the kubelet's namespace
 * and the agent's own addresses together, logged, counted (lace_host_addresses_fallback) and
 * shown to `lace doctor`.
 *
 * Cost: a read is one cgroup.procs, two stats and the two files: 79 µs on a small node against
 * 48 µs for the getifaddrs() before (side by side, load 3.8), and fib_trie grows with the
 * routes (2 ms to parse 2,000 routes in two tables). It is asked for at every ADD and reconcile,
 * so the set read from one pid is kept for `ttlMs` (1 s; a cached answer costs 5.8 µs, the
 * cgroup.procs read). That is safe: the cgroup is listed at every call, so a pid gone (or reused
 * outside the cgroup) is never answered from the cache; the node's addresses are its
 * administrator's, not a tenant's; and an address the node gains counts at most 1 s later (for
 * pods already there, at the next periodic resync as before).
 */
import { getLogger } from "@logtape/logtape";
import { hostAddressSet } from "./host_addresses.ts";
import { errorText } from "../error_text.ts";
import { parseFibTrieLocal, parseIfInet6 } from "./proc_net_addresses.ts";

const log = getLogger(["lace", "agent", "host-addresses"]);

/** What the agent's host-address set is read from, for /addresses and the doctor. */
export interface HostAddressSource {
  /** "kubelet-netns": read from the kubelet's namespace; "fallback": last known ∪ own. */
  source: "kubelet-netns" | "fallback";
  /** The process of the kubelet cgroup read from (the last one, under fallback). */
  pid: number | null;
  /** Why the kubelet's namespace could not be read (fallback only). */
  error?: string;
  /** The agent's namespace is not the kubelet's (null: not known). */
  otherNetns: boolean | null;
}

export interface KubeletNetnsOptions {
  /** The kubelet's cgroup directory (the follower's), null while not known. */
  cgroupPath: () => string | null;
  procRoot?: string;
  /** The agent's own namespace's addresses (readHostAddresses()). */
  ownAddresses: () => Set<string>;
  /** How long a set read from one pid is answered again (default 1000 ms). */
  ttlMs?: number;
  /** Monotonic milliseconds (fake in tests). */
  now?: () => number;
  /** Called when the source changes (kubelet-netns ↔ fallback, or the namespaces differ). */
  onChange?: (s: HostAddressSource) => void;
}

export class KubeletNetnsAddresses {
  readonly #o: KubeletNetnsOptions;
  #pid: number | null = null;
  #lastKnown = new Set<string>();
  /** When #lastKnown was read from #pid (null: not from it, or stale). */
  #readAt: number | null = null;
  #status: HostAddressSource = { source: "fallback", pid: null, otherNetns: null };
  #warnedNetns = false;
  #reported = false;

  constructor(o: KubeletNetnsOptions) {
    this.#o = o;
  }

  status(): HostAddressSource {
    return { ...this.#status };
  }

  /** The node's own addresses (hostAddressSet() of them); see the file's comment. */
  read(): Set<string> {
    const proc = this.#o.procRoot ?? "/proc";
    try {
      const pids = this.#cgroupPids();
      if (pids.length === 0) throw new Error("no process in the kubelet cgroup");
      const now = this.#o.now ? this.#o.now() : performance.now();
      if (
        this.#pid !== null && pids.includes(this.#pid) && this.#readAt !== null &&
        this.#status.source === "kubelet-netns" && now - this.#readAt < (this.#o.ttlMs ?? 1000)
      ) {
        return new Set(this.#lastKnown);
      }
      // Keep the pid read last while it is still in the cgroup; else the first one there.
      const order = this.#pid !== null && pids.includes(this.#pid)
        ? [this.#pid, ...pids.filter((p) => p !== this.#pid)]
        : pids;
      let lastError: unknown;
      for (const pid of order) {
        try {
          const fib = Deno.readTextFileSync(`${proc}/${pid}/net/fib_trie`);
          const inet6 = readOptional(`${proc}/${pid}/net/if_inet6`);
          const set = hostAddressSet(
            [...parseFibTrieLocal(fib), ...parseIfInet6(inet6)].map((address) => ({ address })),
          );
          this.#pid = pid;
          this.#lastKnown = set;
          this.#readAt = now;
          this.#set({ source: "kubelet-netns", pid, otherNetns: this.#otherNetns(proc, pid) });
          return new Set(set);
        } catch (e) {
          lastError = e; // the process exited: try the next one
        }
      }
      throw lastError;
    } catch (e) {
      const error = `cannot read the kubelet's network namespace: ${errorText(e)}`;
      this.#set({ source: "fallback", pid: this.#pid, error, otherNetns: this.#status.otherNetns });
      const out = new Set(this.#lastKnown);
      for (const a of this.#o.ownAddresses()) out.add(a);
      return out;
    }
  }

  #cgroupPids(): number[] {
    const dir = this.#o.cgroupPath();
    if (dir === null) throw new Error("the kubelet cgroup is not known yet");
    const out: number[] = [];
    const walk = (d: string) => {
      for (const l of Deno.readTextFileSync(`${d}/cgroup.procs`).split("\n")) {
        if (/^\d+$/.test(l.trim())) out.push(Number(l.trim()));
      }
      if (out.length) return;
      for (const e of Deno.readDirSync(d)) if (e.isDirectory) walk(`${d}/${e.name}`);
    };
    walk(dir);
    return out;
  }

  #otherNetns(proc: string, pid: number): boolean | null {
    try {
      return Deno.statSync(`${proc}/self/ns/net`).ino !==
        Deno.statSync(`${proc}/${pid}/ns/net`).ino;
    } catch {
      return null;
    }
  }

  #set(next: HostAddressSource): void {
    const prev = this.#status;
    this.#status = next;
    if (next.otherNetns === true && !this.#warnedNetns) {
      this.#warnedNetns = true;
      log.warn(
        "The agent runs in another network namespace than the kubelet (process {pid}): the node's own addresses are read from the kubelet's; run the agent on the host network (hostNetwork: true) as the chart does",
        { pid: next.pid },
      );
    }
    if (!this.#reported || prev.source !== next.source || prev.otherNetns !== next.otherNetns) {
      this.#reported = true;
      if (next.source === "fallback") {
        log.warn(
          "{error}: holding the last addresses read there and this agent's own for the host; check the kubelet cgroup (--kubelet-cgroup) and that /proc is the host's (hostPID)",
          { error: next.error },
        );
      } else if (prev.source === "fallback" && prev.error !== undefined) {
        log.info("Reading the node's own addresses from the kubelet's namespace (process {pid})", {
          pid: next.pid,
        });
      }
      this.#o.onChange?.(this.status());
    }
  }
}

function readOptional(path: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch (e) {
    // No IPv6 in that namespace (ipv6.disable=1): no if_inet6 at all.
    if (e instanceof Deno.errors.NotFound) return "";
    throw e;
  }
}
