/**
 * What the agent's local socket answers, as its clients read it: the JSON of `/targets`,
 * `/addresses`, `/unmatched` and `/chaining`. The agent writes these and `lace targets` and
 * `lace doctor` read them, so they live below both; the agent's own records of the same things
 * (desired targets, the host-address readers) are turned into them where it serves them.
 */
import type { ProbeKey } from "../probe/key.ts";
import type { Config } from "../config.ts";
import type { FileReport } from "../cni/chaining/chainer.ts";
import type { ContainerRuntime, ContainerRuntimeMode } from "../cni/chaining/runtimes.ts";

/** One registered target as the agent knows it, with the pod it came from. */
export interface TargetView {
  family: "ipv4" | "ipv6";
  address: string;
  port: number;
  networkId: number;
  mark: number;
  pod?: string;
  network?: string;
  container?: string;
  probe?: string;
  handler?: string;
  httpPath?: string;
  httpScheme?: string;
  /** The probe's period in seconds (absent: the kubelet's default, 10). */
  periodSeconds?: number;
  /** Kubelet connects the datapath tagged for this target (absent: not in the map). */
  hits?: number;
  /** Seconds since the last one; null when there was none. */
  lastHitAgeSeconds?: number | null;
}

/**
 * The addresses pods of several networks hold on this node, as the agent
 * sees them (`/addresses`, local socket only: it names pods and networks).
 */
export interface AddressesView {
  /** --address-sharing: under exclusive each address here is a clash, under shared it is shared. */
  sharing: "exclusive" | "shared";
  addresses: {
    family: "ipv4" | "ipv6";
    address: string;
    /** The oldest pod at the address, "namespace/name", and its network ("" is the default). */
    holder: string;
    holderNetwork: string;
    /** Pods of other networks, oldest first. */
    later: { pod: string; network: string }[];
    /** Exclusive: the holder lost its targets there too (a later pod is on the default network). */
    holderWithdrawn: boolean;
  }[];
  /** Pods at one of the node's own addresses ("namespace/name"): no targets there. */
  hostHeld?: { pod: string; address: string }[];
  /** The operator's pod ranges (--pod-cidrs); empty: pod addresses are not limited to ranges. */
  podRanges?: string[];
  /** Pods at an address outside every pod range ("namespace/name"): no targets there. */
  outsidePodRanges?: { pod: string; address: string }[];
  /** Where the node's own addresses are read from (agent/host/kubelet_netns_addresses.ts). */
  hostAddressSource?: HostAddressSource;
  /** The API server's addresses the host holds with the node's own (agent/host/). */
  apiServer?: ApiServerAddressesView;
}

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

/** What one source gave, for /addresses and the doctor. */
export interface ApiServerSourceView {
  name: string;
  /** The addresses held from it (its last successful read, resolved and canonical, and `leaving`). */
  addresses: string[];
  /** Held though its last successful read lacks them, until a full refresh later confirms it. */
  leaving?: string[];
  /** Why its last read failed; unset when it succeeded. */
  error?: string;
  /** No read of it has succeeded yet. */
  neverRead?: boolean;
}

/** The API server's addresses the host holds, and where they come from. */
export interface ApiServerAddressesView {
  addresses: string[];
  sources: ApiServerSourceView[];
}

/** One unmatched connect as the agent keeps it for `lace doctor`. */
export interface UnmatchedView {
  family: ProbeKey["family"];
  address: string;
  port: number;
  networkId: number;
  /** "namespace/name" of the pod that owns the address, when the agent knows it. */
  pod?: string;
  /** How many reports of this destination arrived (reports are rate-limited in the kernel). */
  reports: number;
  /** When the last report arrived (ms since the epoch). */
  lastSeen: number;
}

/** What the agent's chaining found at its last pass, for `lace doctor` (`/chaining`, local only). */
export interface ChainingView {
  mode: Config["cniChaining"];
  dir: string;
  /** The runtime whose rule picks the file (with no --cni-chain-files). */
  runtime: RuntimeView;
  /** The files that name the agent's plugin after the last pass. */
  chained: string[];
  /** The warnings of the last pass (a file left alone, a write that failed), one per file. */
  problems: { file: string; reason: FileReport["reason"]; message: string }[];
}

/** What the agent knows of the runtime, for `/chaining` and lace doctor. */
export interface RuntimeView {
  mode: ContainerRuntimeMode;
  /** The runtime whose rule applies; absent: unknown, and CRI-O's rule applies. */
  runtime?: ContainerRuntime;
  /** The Node's containerRuntimeVersion, once read. */
  version?: string;
}
