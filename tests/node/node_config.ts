/**
 * The configuration files of the real node (tests/node/node.ts): containerd's, the kubelet's and
 * the CNI conflist. Pure text from plain settings, so each setting that this machine needs is
 * stated once, with why.
 */
import { stringify } from "yaml";

export interface ContainerdSettings {
  root: string;
  state: string;
  socket: string;
  cniConfDir: string;
  cniBinDir: string;
  sandboxImage: string;
  runc: string;
}

/** containerd 2's config (version 3) for a CRI node with runc and the cgroupfs driver. */
export function containerdConfig(s: ContainerdSettings): string {
  return `version = 3
root = ${JSON.stringify(s.root)}
state = ${JSON.stringify(s.state)}

[grpc]
  address = ${JSON.stringify(s.socket)}

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = ${JSON.stringify(s.sandboxImage)}

[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  # This VM refuses oom_score_adj -998 for the pause container (runc: "can't get final child's
  # PID from pipe"); restrict it to what containerd itself may set.
  restrict_oom_score_adj = true
  # Pod network namespaces under containerd's own state directory, not the machine's /run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [${JSON.stringify(s.cniBinDir)}]
    conf_dir = ${JSON.stringify(s.cniConfDir)}
    max_conf_num = 1
    # Bring up lo without the loopback CNI plugin.
    use_internal_loopback = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = ${JSON.stringify(s.runc)}
        SystemdCgroup = false
`;
}

export interface KubeletSettings {
  runtimeSocket: string;
  /** The cgroup (v1 controllers) under which runc creates the pods' cgroups. */
  cgroupRoot: string;
  podLogsDir: string;
  /** Port of the kubelet's server in the node's namespace. */
  port: number;
  healthzPort: number;
  /**
   * Where the kubelet's server listens (default 127.0.0.1): the node IP when the API server,
   * in another namespace, execs into its pods.
   */
  address?: string;
  /** CA whose client certificates the kubelet accepts (the API server's, for exec). */
  clientCAFile?: string;
  /** The kubelet's pod limit (default 50). */
  maxPods?: number;
}

/**
 * The kubelet's config. This machine mounts cgroup v1 controllers beside a controller-less
 * cgroup2 tree, has swap settings of its own and no systemd: cgroup v1 allowed, the cgroupfs
 * driver, no QoS or node-allocatable cgroups (they would take over the machine's cgroup roots).
 */
export function kubeletConfig(s: KubeletSettings): string {
  return stringify({
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    failCgroupV1: false,
    cgroupDriver: "cgroupfs",
    cgroupsPerQOS: false,
    cgroupRoot: s.cgroupRoot,
    enforceNodeAllocatable: [],
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${s.runtimeSocket}`,
    podLogsDir: s.podLogsDir,
    address: s.address ?? "127.0.0.1",
    port: s.port,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: s.healthzPort,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: false },
      ...(s.clientCAFile ? { x509: { clientCAFile: s.clientCAFile } } : {}),
    },
    authorization: { mode: "AlwaysAllow" },
    // No DNS on this node: pods get an empty resolv.conf rather than the machine's.
    resolvConf: "",
    // A shared test machine's disk and memory are not this node's to guard.
    evictionHard: {
      "memory.available": "1Mi",
      "nodefs.available": "1%",
      "imagefs.available": "1%",
    },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // Quick status and pod updates, so the tests wait for the kubelet, not for its timers.
    nodeStatusUpdateFrequency: "2s",
    syncFrequency: "5s",
    fileCheckFrequency: "5s",
    serializeImagePulls: false,
    registerNode: true,
    maxPods: s.maxPods ?? 50,
  });
}

export interface NetworkSetting {
  name: string;
  id: number;
  /** The node's bridge of this network. */
  bridge: string;
}

export interface ConflistSettings {
  networks: NetworkSetting[];
  /** One range for every network: pods in different networks share addresses. */
  subnet4: string;
  subnet6: string;
  stateDir: string;
  /**
   * API access of the network plugin, the trusted writer of the network annotations: a token of
   * the identity the chart's admission policy lets write them.
   */
  apiServer: string;
  caFile: string;
  tokenFile: string;
  /** The agent's CNI socket; absent on a node without the agent: no `lace` plugin is chained. */
  laceSocket?: string;
  /** The `lace` entry's addressSharing, as the agent's chaining writes it under shared. */
  laceAddressSharing?: "shared";
  /**
   * Network of a pod without the network label, by its namespace (netcheck's pods on a
   * multi-node cluster); pods elsewhere still need the label.
   */
  namespaceNetworks?: Record<string, string>;
  /**
   * A pod without the network label and not in namespaceNetworks joins the network named after
   * its namespace, made on its first pod (namespace_networks.ts).
   */
  networkPerNamespace?: boolean;
  /**
   * The file of the namespace networks' ids, if not networks.json in stateDir: nodes that share
   * one give a namespace the same network id (bridge, mark) on each (namespace_networks.ts).
   */
  networksFile?: string;
  /** Every pod gets an IPv6 address only, as a pod with the family label `ipv6` does. */
  ipv6Only?: boolean;
  /**
   * The networks still allocate from the same ranges, but no address is handed out on this node
   * while another network holds it: Lace tells pods apart on a node by address and port, so the
   * chart's default (node.addressSharing=exclusive) refuses a second network at an address.
   */
  uniqueAddresses?: boolean;
}

/** The conflist: Lace's test network plugin, then the real chained `lace` plugin if any. */
export function conflist(s: ConflistSettings): string {
  return JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: "lace-test",
      plugins: [
        {
          type: "lace-testnet",
          networks: s.networks,
          subnet4: s.subnet4,
          subnet6: s.subnet6,
          stateDir: s.stateDir,
          apiServer: s.apiServer,
          caFile: s.caFile,
          tokenFile: s.tokenFile,
          ...(s.namespaceNetworks ? { namespaceNetworks: s.namespaceNetworks } : {}),
          ...(s.networkPerNamespace ? { networkPerNamespace: true } : {}),
          ...(s.networksFile ? { networksFile: s.networksFile } : {}),
          ...(s.ipv6Only ? { ipv6Only: true } : {}),
          ...(s.uniqueAddresses ? { uniqueAddresses: true } : {}),
        },
        ...(s.laceSocket
          ? [{
            type: "lace",
            socket: s.laceSocket,
            timeout: "2s",
            ...(s.laceAddressSharing ? { addressSharing: s.laceAddressSharing } : {}),
          }]
          : []),
      ],
    },
    null,
    2,
  );
}
