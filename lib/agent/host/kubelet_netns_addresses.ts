/**
 * The node's own addresses as the kubelet's network namespace has them, the one the kubelet
 * probes host-network pods in, read through the kubelet's own process when the cgroup follower
 * knows it, else another process of the kubelet cgroup itself (/proc/<pid>/net/fib_trie and
 * if_inet6: no setns; pid_netns_read.ts discards a read during which the pid changed hands).
 * Never through a process of a cgroup below it that is not the kubelet: a slice given as the
 * kubelet cgroup may hold the pods' cgroups too, and a pod's namespace taken for the node's would
 * hold the pod's address for the host and release the node's. The agent's own namespace is the
 * same one as the chart runs it (hostNetwork), but an agent run elsewhere (a chart without
 * hostNetwork, a unit in another namespace) would otherwise hold the wrong set and the check
 * would fail open.
 *
 * When no namespace can be read (no such process, /proc unreadable, text it cannot parse) it
 * fails closed without losing state: the last set read from the kubelet's namespace and the
 * agent's own addresses together, logged, counted (lace_host_addresses_fallback) and shown to
 * `lace doctor`.
 *
 * Cost: a read is two cgroup.procs, three namespace links and the two files, of the order of a
 * getifaddrs(), and fib_trie grows with the routes. It is asked for at every ADD and reconcile,
 * so the set read from one pid is kept for `ttlMs` (a cached answer costs the cgroup.procs
 * read). That is safe: the cgroup is listed at every call, so a pid gone (or reused outside the
 * cgroup) is never answered from the cache; the node's addresses are its administrator's, not a
 * tenant's; and an address the node gains counts at the next ADD at most `ttlMs` later, and for
 * pods already there at the agent's check (address_watch.ts), which reads past the cache
 * every HOST_ADDRESS_CHECK_MS.
 */
import { getLogger } from "@logtape/logtape";
import { errorText } from "../../text/error.ts";
import { parseCgroupProcs, parseProcCgroup } from "../../cgroup/kubelet_finder.ts";
import type { HostAddressSource } from "../../agent_api/views.ts";
import { HOST_PROC_FILES, type ProcFiles, readPidNetns } from "./pid_netns_read.ts";

const log = getLogger(["lace", "agent", "host-addresses"]);

/** The kubelet's process as the cgroup follower found it. */
export interface KubeletProcessRef {
  pid: number;
  /**
   * Its cgroup as /proc/<pid>/cgroup showed it then (null: not known). It is read through the
   * pid while it still shows this cgroup or the kubelet cgroup lists it (the kubelet may run in
   * a cgroup below the one configured): a pid that changed hands shows another.
   */
  cgroup: string | null;
}

export interface KubeletNetnsOptions {
  /** The kubelet's cgroup directory (the follower's), null while not known. */
  cgroupPath: () => string | null;
  /**
   * The kubelet's own process as the cgroup follower found and trusted it (null: not known):
   * read first, and the namespace it is read in is then the only one read.
   */
  kubelet?: () => KubeletProcessRef | null;
  procRoot?: string;
  /** The reads of /proc and the cgroup (the host's; a fake in tests). */
  files?: ProcFiles;
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
  readonly #files: ProcFiles;
  #pid: number | null = null;
  #lastKnown = new Set<string>();
  /** When #lastKnown was read from #pid (null: not from it, or stale). */
  #readAt: number | null = null;
  /** The namespace the kubelet's own process was read in (null: not read yet). */
  #kubeletNetns: string | null = null;
  #status: HostAddressSource = { source: "fallback", pid: null, otherNetns: null };
  #warnedNetns = false;
  #reported = false;
  /** The fallback's last read of the agent's own addresses, and when. */
  #own: { addresses: ReadonlySet<string>; readAt: number } | null = null;

  constructor(o: KubeletNetnsOptions) {
    this.#o = o;
    this.#files = o.files ?? HOST_PROC_FILES;
  }

  status(): HostAddressSource {
    return { ...this.#status };
  }

  /**
   * The node's own addresses (hostAddressSet() of them); see the file's comment. `fresh` reads
   * the namespace again even within the TTL (the agent's periodic check).
   */
  read(o: { fresh?: boolean } = {}): Set<string> {
    const proc = this.#o.procRoot ?? "/proc";
    const now = this.#o.now ? this.#o.now() : performance.now();
    let hidden = 0;
    try {
      const dir = this.#o.cgroupPath();
      if (dir === null) throw new Error("the kubelet cgroup is not known yet");
      const procs = this.#procsOf(dir);
      const listed = new Set(procs.pids);
      hidden = procs.hidden;
      const kubelet = this.#o.kubelet?.() ?? null;
      const preferred = kubelet !== null && this.#stillKubelet(kubelet, dir, listed)
        ? kubelet.pid
        : null;
      const verified = (p: number | null) => p !== null && (p === preferred || listed.has(p));
      if (
        !o.fresh && verified(this.#pid) &&
        (preferred === null || preferred === this.#pid) && this.#readAt !== null &&
        this.#status.source === "kubelet-netns" && now - this.#readAt < (this.#o.ttlMs ?? 1000)
      ) {
        return new Set(this.#lastKnown);
      }
      // The kubelet itself, then the pid read last while it is still in the cgroup, then the rest.
      const order = [...new Set([preferred, this.#pid, ...listed])]
        .filter((p): p is number => verified(p));
      if (order.length === 0) {
        if (hidden > 0 && listed.size === 0) {
          throw new Error(
            `the kubelet cgroup's ${hidden} process(es) are in another pid namespace than this agent's (cgroup.procs lists them as 0): run the agent in the host's pid namespace (hostPID: true, as the chart does)`,
          );
        }
        throw new Error(
          kubelet === null
            ? "no process in the kubelet cgroup itself and the kubelet's own not found yet (the processes of the cgroups below it are never read: a pod's may be there)"
            : `no process in the kubelet cgroup itself, and process ${kubelet.pid} is no longer the kubelet the cgroup follower found (the processes of the cgroups below it are never read: a pod's may be there)`,
        );
      }
      let lastError: unknown;
      for (const pid of order) {
        try {
          const read = readPidNetns(this.#files, proc, pid, {
            listed: () =>
              pid === preferred
                ? this.#stillKubelet(kubelet!, dir)
                : this.#procsOf(dir).pids.includes(pid),
            netns: this.#kubeletNetns,
          });
          if (pid === preferred) this.#kubeletNetns = read.netns;
          this.#pid = pid;
          this.#lastKnown = read.addresses;
          this.#readAt = now;
          this.#set({
            source: "kubelet-netns",
            pid,
            otherNetns: this.#otherNetns(proc, read.netns),
          });
          return new Set(read.addresses);
        } catch (e) {
          lastError = e; // the process exited or changed hands: try the next one
          log.debug("Not reading the node's addresses through process {pid}: {error}", {
            pid,
            error: errorText(e),
          });
        }
      }
      throw lastError;
    } catch (e) {
      const error = `cannot read the kubelet's network namespace: ${errorText(e)}`;
      this.#set({ source: "fallback", pid: this.#pid, error, otherNetns: this.#status.otherNetns });
      const out = new Set(this.#lastKnown);
      for (const a of this.#ownAddresses(now, o.fresh === true)) out.add(a);
      return out;
    }
  }

  /**
   * The agent's own namespace's addresses, read again after `ttlMs` or when `fresh`, as a read
   * of the kubelet's is: getifaddrs(3) dumps every interface with its statistics, a cost that
   * grows with the node's pods, and the fallback is asked at every reconcile and CNI ADD.
   */
  #ownAddresses(now: number, fresh: boolean): ReadonlySet<string> {
    const own = this.#own;
    if (!fresh && own !== null && now - own.readAt < (this.#o.ttlMs ?? 1000)) return own.addresses;
    this.#own = { addresses: this.#o.ownAddresses(), readAt: now };
    return this.#own.addresses;
  }

  #procsOf(dir: string): { pids: number[]; hidden: number } {
    return parseCgroupProcs(this.#files.readText(`${dir}/cgroup.procs`));
  }

  /**
   * Whether `k`'s pid is still the kubelet's: the kubelet cgroup itself lists it (`listed`, when
   * it was just read), or it shows the cgroup the follower found the kubelet in.
   */
  #stillKubelet(k: KubeletProcessRef, dir: string, listed?: Set<number>): boolean {
    if ((listed ?? new Set(this.#procsOf(dir).pids)).has(k.pid)) return true;
    if (k.cgroup === null) return false;
    try {
      const proc = this.#o.procRoot ?? "/proc";
      return parseProcCgroup(this.#files.readText(`${proc}/${k.pid}/cgroup`)) === k.cgroup;
    } catch {
      return false; // gone
    }
  }

  #otherNetns(proc: string, netns: string): boolean | null {
    try {
      return this.#files.readLink(`${proc}/self/ns/net`) !== netns;
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
