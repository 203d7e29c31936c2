/**
 * The Kubernetes API server's addresses, which no pod may hold, held by the host beside the
 * node's own (addresses.ts; same refusal, ProbeIgnored reason host-address and metrics):
 * the kubelet connects to its API server itself, from the cgroup whose connects Lace tags, and
 * the map knows a kubelet connection by its destination alone. A tenant's pod given the API
 * server's address (a Multus static IP, any CNI result naming it) with a probe on its port would
 * have the kubelet's own API connections tagged into the pod's network and answered by the pod.
 * --pod-cidrs closes that for every address outside the pod ranges, but only where the operator
 * sets them; this closes it for the API server by default.
 *
 * The addresses come from several sources (api_server_sources.ts): the server the agent's own
 * kubeconfig names (in-cluster: the `kubernetes` Service's ClusterIP), the `kubernetes` Service's
 * ClusterIPs and its EndpointSlice in `default`, the control-plane endpoint kubeadm publishes in
 * `kube-public`'s `cluster-info` (an HA control plane's load balancer, in neither of those), and
 * the server the kubelet's kubeconfig names (its command line's --kubeconfig; read again when
 * the kubelet's pid changes). A name is resolved. Each source is read at start and every
 * `intervalMs` (5 min; 30 s after a failed read); a source that cannot be read keeps the
 * addresses it gave last (fail closed: an address is never released because a read failed), is
 * logged and counted (lace_api_server_sources_failing) and named by `lace doctor`
 * (api-server-addresses). Nor is one released because a read that succeeded lacks it: an address
 * a source named and its latest successful read does not stays held until a successful read of
 * that source at least `intervalMs` (one full refresh) after the first read that lacked it lacks
 * it too; a read naming it again in between keeps it as before. So a source that names a server
 * it is shutting down, a kubelet restarting (no pid, no kubeconfig yet), or a slice cut at the cap
 * cannot release an address at once. The set is
 * asked for with the node's own addresses at every reconcile, ADD and host-address check (5 s),
 * so a change the refresh finds reaches the pods already there within 5 s.
 */
import { getLogger, type Logger } from "@logtape/logtape";
import { type Timers, within } from "../../time/timers.ts";
import { errorText } from "../../text/error.ts";
import type { ApiServerAddressesView } from "../../agent_api/views.ts";
import { hostAddressSet } from "./addresses.ts";

const defaultLog = getLogger(["lace", "agent", "api-server-addresses"]);

/**
 * How often every source is read again: every 5 min, as the API server's addresses seldom change
 * and every node's agent reads them (3 reads: at 5,000 nodes 50 reads a second; a watch of the
 * three objects would cost less still).
 */
export const API_SERVER_REFRESH_MS = 300_000;
/** How soon after a refresh in which a source failed every source is read again. */
export const API_SERVER_RETRY_MS = 30_000;
/** How long resolving one host name may take (a hung resolver is a failed read). */
export const RESOLVE_MS = 10_000;
/** At most this many addresses are kept from one source (an API server has a handful). */
export const MAX_SOURCE_ADDRESSES = 64;

/** One place the API server's addresses are read from. */
export interface ApiServerSource {
  /** Named in logs and by the doctor, e.g. "kubernetes-service". */
  name: string;
  /** Addresses or host names; throws when the source cannot be read. Empty: it names none. */
  read(): Promise<string[]>;
}

export interface ApiServerAddressesOptions {
  sources: ApiServerSource[];
  /** Resolves a host name to its addresses (getaddrinfo in the agent). */
  resolve: (name: string) => Promise<string[]>;
  timers: Timers;
  /** Default API_SERVER_REFRESH_MS. */
  intervalMs?: number;
  /** After a refresh in which a source failed; default API_SERVER_RETRY_MS. */
  retryMs?: number;
  /** After every refresh: how many sources failed their last read. */
  onRefresh?: (failing: number) => void;
  /** Where its lines go (a recording logger in tests). */
  logger?: Pick<Logger, "info" | "warning" | "error">;
}

/**
 * The host of a kubeconfig's `server` URL ("https://10.0.0.1:6443" → "10.0.0.1",
 * "https://[fd00::1]" → "fd00::1"); undefined for text that is not a URL with a host.
 */
export function serverHost(server: string): string | undefined {
  try {
    const host = new URL(server.trim()).hostname;
    if (!host) return undefined;
    return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  } catch {
    return undefined;
  }
}

/**
 * The `server:` values of a kubeconfig's text (YAML or JSON, quoted or not): a kubeconfig's only
 * field of that name is its clusters' server, so the text need not be parsed whole.
 */
export function kubeconfigServers(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|[\s{,])"?server"?\s*:\s*["']?([^\s"',}]+)/gm)) {
    out.push(m[1]);
  }
  return out;
}

/** The hosts of a kubeconfig's servers (kubeconfigServers(), then serverHost()). */
export function kubeconfigHosts(text: string): string[] {
  const hosts: string[] = [];
  for (const server of kubeconfigServers(text)) {
    const host = serverHost(server);
    if (host !== undefined) hosts.push(host);
  }
  return hosts;
}

/** The --kubeconfig path on a kubelet's command line (argv), or undefined. */
export function kubeconfigFlag(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--kubeconfig" || a === "-kubeconfig") return argv[i + 1] || undefined;
    const m = /^--?kubeconfig=(.+)$/.exec(a);
    if (m) return m[1];
  }
  return undefined;
}

/** Whether `host` is an IPv4 or IPv6 address literal (not a name to resolve). */
function isAddressLiteral(host: string): boolean {
  return /^[0-9.]+$/.test(host) || host.includes(":");
}

interface SourceState {
  /** Its last successful read; undefined before the first. */
  set: Set<string> | undefined;
  /** Addresses an earlier read named and the last successful read lacks: when first lacked. */
  leaving: Map<string, number>;
  error?: string;
}

/** The API server's addresses from every source; see the module comment. */
export class ApiServerAddresses {
  readonly #o: ApiServerAddressesOptions;
  /** Each source's last good set, what it still holds beyond that (since when), its last error. */
  readonly #held = new Map<string, SourceState>();
  #union: ReadonlySet<string> = new Set();
  #timer: unknown = undefined;
  #stopped = true;
  #running: Promise<void> | undefined;
  #again: Promise<void> | undefined;

  readonly #log: Pick<Logger, "info" | "warning" | "error">;

  constructor(o: ApiServerAddressesOptions) {
    this.#o = o;
    this.#log = o.logger ?? defaultLog;
    for (const s of o.sources) this.#held.set(s.name, { set: undefined, leaving: new Map() });
  }

  /** The addresses held now (every source's last good read together). */
  read(): ReadonlySet<string> {
    return this.#union;
  }

  view(): ApiServerAddressesView {
    return {
      addresses: [...this.#union].sort(),
      sources: this.#o.sources.map(({ name }) => {
        const h = this.#held.get(name)!;
        return {
          name,
          addresses: [...(h.set ?? []), ...h.leaving.keys()].sort(),
          ...(h.leaving.size ? { leaving: [...h.leaving.keys()].sort() } : {}),
          ...(h.error !== undefined ? { error: h.error } : {}),
          ...(h.set === undefined ? { neverRead: true } : {}),
        };
      }),
    };
  }

  /**
   * Reads every source once; never throws. Asked while a refresh runs (which may have read a
   * source before what prompted this ask), one more follows it, shared by every such ask.
   */
  refresh(): Promise<void> {
    if (this.#running) {
      this.#again ??= this.#running.then(() => {
        this.#again = undefined;
        return this.refresh();
      });
      return this.#again;
    }
    this.#running = this.#refresh().finally(() => this.#running = undefined);
    return this.#running;
  }

  /** Refreshes now, then every `intervalMs` until stop(). */
  async start(): Promise<void> {
    this.#stopped = false;
    await this.refresh();
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #refresh(): Promise<void> {
    await Promise.all(this.#o.sources.map((s) => this.#readSource(s)));
    const union = new Set<string>();
    for (const { set, leaving } of this.#held.values()) {
      for (const a of set ?? []) union.add(a);
      for (const a of leaving.keys()) union.add(a);
    }
    const before = this.#union;
    if (union.size !== before.size || [...union].some((a) => !before.has(a))) {
      this.#log.info("The API server's addresses the host holds: {addresses}", {
        addresses: [...union].sort(),
      });
    }
    this.#union = union;
    let failing = 0;
    for (const h of this.#held.values()) if (h.error !== undefined) failing++;
    try {
      this.#o.onRefresh?.(failing);
    } catch (e) {
      this.#log.error("Reporting the API server's addresses failed: {error}", {
        error: errorText(e),
      });
    }
  }

  async #readSource(source: ApiServerSource): Promise<void> {
    const held = this.#held.get(source.name)!;
    try {
      const named = (await source.read()).slice(0, MAX_SOURCE_ADDRESSES);
      const addresses: { address: string }[] = [];
      for (const host of named) {
        if (isAddressLiteral(host)) addresses.push({ address: host });
        else {
          const resolved = await within(
            this.#o.timers,
            this.#o.resolve(host),
            RESOLVE_MS,
            `resolving "${host}"`,
          );
          if (resolved.length === 0) throw new Error(`host name "${host}" resolves to no address`);
          for (const address of resolved) addresses.push({ address });
        }
      }
      this.#keepLeaving(source.name, held, hostAddressSet(addresses));
      if (held.error !== undefined) {
        this.#log.info("The API server's addresses from {source} are read again", {
          source: source.name,
        });
      }
      held.error = undefined;
    } catch (e) {
      const error = errorText(e);
      // Each new failure once; a source that keeps failing is on the metric and the doctor.
      if (held.error !== error) {
        this.#log.warning(
          "Reading the API server's addresses from {source} failed: {error}; holding the ones it gave last ({held}), so no pod gets targets there; check the agent's RBAC (the chart's Roles <release>-api-server in namespaces default and kube-public) and its access to the API server",
          {
            source: source.name,
            error,
            held: [...(held.set ?? []), ...held.leaving.keys()].sort().join(", ") || "none",
          },
        );
      }
      held.error = error;
    }
  }

  /**
   * Takes `named`, a successful read, as the source's set, keeping what it no longer names until
   * a read one full interval after the first that lacked it (see the module comment).
   */
  #keepLeaving(source: string, held: SourceState, named: Set<string>): void {
    const now = this.#o.timers.now();
    const confirmMs = this.#o.intervalMs ?? API_SERVER_REFRESH_MS;
    const leaving = new Map<string, number>();
    const newlyLeaving: string[] = [];
    const released: string[] = [];
    for (const a of [...(held.set ?? []), ...held.leaving.keys()]) {
      if (named.has(a) || leaving.has(a)) continue;
      const since = held.leaving.get(a);
      if (since === undefined) {
        newlyLeaving.push(a);
        leaving.set(a, now);
      } else if (now - since < confirmMs) leaving.set(a, since);
      else released.push(a);
    }
    if (newlyLeaving.length) {
      this.#log.info(
        "{source} no longer names {addresses}: held until a read {seconds} s from now confirms it",
        { source, addresses: newlyLeaving.sort(), seconds: Math.round(confirmMs / 1000) },
      );
    }
    if (released.length) {
      this.#log.info("{source} still does not name {addresses}: released", {
        source,
        addresses: released.sort(),
      });
    }
    held.set = named;
    held.leaving = leaving;
  }

  #schedule(): void {
    if (this.#stopped) return;
    const failing = [...this.#held.values()].some((h) => h.error !== undefined);
    this.#timer = this.#o.timers.setTimeout(
      () => {
        this.#timer = undefined;
        this.refresh().finally(() => this.#schedule());
      },
      failing
        ? this.#o.retryMs ?? API_SERVER_RETRY_MS
        : this.#o.intervalMs ?? API_SERVER_REFRESH_MS,
    );
  }
}
