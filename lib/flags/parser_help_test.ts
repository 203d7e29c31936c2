/** helpText(): the help a command prints, lace agent's exactly as reviewed. */
import assert from "node:assert/strict";
import { helpText } from "./parser.ts";
import { agentCommand, agentFlags } from "./agent.ts";
import { shortToy, toy } from "./_parser_fixture.ts";

Deno.test("helpText() lists every visible flag with its environment variable", () => {
  const text = helpText(agentCommand);
  for (const f of agentFlags.filter((f) => !f.hidden)) {
    assert.ok(text.includes(`--${f.name}`), f.name);
    for (const e of f.env ?? []) assert.ok(text.includes(e), e);
  }
});

Deno.test("helpText() shows the defaults of the Config, written the way flags take them", () => {
  const text = helpText(agentCommand);
  assert.match(text, /--probe-mark MARK .*default 0x1000/);
  assert.match(text, /--resync-interval DURATION .*default 5m/);
  assert.match(text, /--watch-liveness DURATION .*default 30s/);
  assert.match(text, /--debounce DURATION .*default 5ms/);
  assert.match(text, /--cni-socket PATH .*default \/run\/lace\/cni\.sock/);
});

Deno.test("helpText() shows placeholders, defaults and variables only where a flag has them", () => {
  assert.equal(
    helpText(toy),
    [
      "Usage: lace toy [flags]",
      "",
      "A toy command.",
      "",
      "Flags:",
      "      --name TEXT    The name (env TOY_NAME, NAME)",
      "      --count COUNT  How many (default 3)",
      "      --on           Switch (env TOY_ON)",
      "  -h, --help         Show this help",
    ].join("\n"),
  );
});

// The help an operator reads, and the flag and variable names the chart and the docs use:
// a change to any of them shows here, in review.
const AGENT_HELP = [
  "Usage: lace agent [flags]",
  "",
  "Run the node agent: watch this node's pods (Kubernetes API and/or a directory of manifests),",
  "keep the pinned probe map in sync, keep the connect programs attached to the kubelet's",
  "cgroup, and serve metrics and health. On SIGTERM it stops and leaves the program, links and",
  "map pinned, so probes keep working until the next agent takes over.",
  "",
  "Flags:",
  "      --node-name NAME             This node's name: only pods bound to it are considered (env LACE_NODE_NAME, NODE_NAME)",
  "      --kubeconfig FILE            Kubeconfig file (default: in-cluster service account) (env LACE_KUBECONFIG, KUBECONFIG)",
  "      --kube-api                   Watch pods through the Kubernetes API (--no-kube-api for the directory source alone) (env LACE_KUBE_API)",
  "      --pods-dir DIR               Directory of Pod manifests (YAML or JSON) to use as a pod source (env LACE_PODS_DIR)",
  "      --pin-path DIR               bpffs directory holding Lace's pinned maps and links (default /sys/fs/bpf/lace; env LACE_PIN_PATH)",
  "      --kubelet-cgroup PATH|auto   cgroup v2 directory of the kubelet, or auto to find the kubelet in /proc (default /sys/fs/cgroup/system.slice/kubelet.service; env LACE_KUBELET_CGROUP)",
  "      --host-cgroup-root DIR       Prefix where the host's filesystem is mounted (e.g. /host in a container) (env LACE_HOST_CGROUP_ROOT)",
  "      --metrics-addr HOST:PORT     Address of the metrics and health server (/metrics, /healthz, /readyz only) (default 127.0.0.1:9808; env LACE_METRICS_ADDR)",
  "      --health-addr HOST:PORT      Loopback address serving /healthz and /readyz only, for the kubelet's probes (empty disables it) (env LACE_HEALTH_ADDR)",
  "      --agent-socket PATH          Root-only unix socket of the agent's local view, /targets included (empty disables it) (default /run/lace/agent.sock; env LACE_AGENT_SOCKET)",
  "      --probe-mark MARK            Probe flag bit(s) of the socket mark (default 0x1000; env LACE_PROBE_MARK)",
  "      --mark-shift N               Left shift of the network id in the socket mark (default 16; env LACE_MARK_SHIFT)",
  "      --network-annotation KEY     Pod annotation naming the pod's Lace network (default lace.io/network; env LACE_NETWORK_ANNOTATION)",
  "      --network-id-annotation KEY  Pod annotation holding the pod's network id (1..65535) (default lace.io/network-id; env LACE_NETWORK_ID_ANNOTATION)",
  "      --debounce DURATION          Shortest time between two reconciles; pod events within it are gathered into one (up to 1m) (default 5ms; env LACE_DEBOUNCE)",
  "      --resync-interval DURATION   Full resync that repairs drift in the probe map (1s..24h) (default 5m; env LACE_RESYNC_INTERVAL)",
  "      --watch-liveness DURATION    A pod watch silent this long gets the API server probed; a dead watch is restarted (1s..1h) (default 30s; env LACE_WATCH_LIVENESS)",
  "      --cni-socket PATH            Unix socket the CNI plugin registers attachments on (empty disables it) (default /run/lace/cni.sock; env LACE_CNI_SOCKET)",
  "      --cni-chaining MODE          auto: chain the lace plugin into the node's CNI configuration and keep it there (needs --cni-socket); manual: leave the configuration to the operator, and restore files the agent chained before (one of auto, manual; default auto; env LACE_CNI_CHAINING)",
  "      --cni-conf-dir DIR           The container runtime's CNI configuration directory (as the agent sees it) (default /etc/cni/net.d; env LACE_CNI_CONF_DIR)",
  "      --cni-state-dir DIR          Root-only host directory where the agent keeps the files' bytes from before chaining (for a byte-exact restore) and its chaining lock (default /var/lib/lace/cni; env LACE_CNI_STATE_DIR)",
  "      --cni-bin-dir DIR            The container runtime's CNI bin directory (as the agent sees it): the lace plugin must be there, root's and executable, before the agent chains it (default /opt/cni/bin; env LACE_CNI_BIN_DIR)",
  "      --container-runtime RUNTIME  Whose rule picks the CNI file the runtime uses: containerd (the first in byte order, or none when it is invalid), crio (the first it can load), auto (the Node's containerRuntimeVersion; unknown: crio's rule) (one of auto, containerd, crio; default auto; env LACE_CONTAINER_RUNTIME)",
  "      --cni-chain-files FILES      Files of --cni-conf-dir to chain into, comma-separated names or globs, each optionally =NETWORK:ID (default: the one the runtime uses, see --container-runtime) (env LACE_CNI_CHAIN_FILES)",
  "      --daemonset NAMESPACE/NAME   The agent's DaemonSet: when it is gone or being deleted at shutdown (helm uninstall), the agent restores the CNI files it chained; otherwise the chain stays (env LACE_DAEMONSET)",
  "      --max-targets-per-pod N      The most probe targets one pod may have in the probe map (1..65536); a pod that wants more is reported (default 64; env LACE_MAX_TARGETS_PER_POD)",
  "      --lifecycle-hooks BOOL       true: the ports of postStart and preStop httpGet hooks are probe targets under the probes' rules; false: hook requests go to the host's network (default true; env LACE_LIFECYCLE_HOOKS)",
  "      --pod-cidrs CIDRS            Pod address ranges of Lace networks, comma-separated (e.g. 10.244.0.0/16,fd00:10:244::/56): a pod address outside all of them gets no probe targets and a CNI ADD bringing one is refused (it may be an address the kubelet itself connects to); a kubelet connect into one that matches no probe target is counted and reported. Empty: addresses are not checked (warned at start) (env LACE_POD_CIDRS)",
  "      --address-conflict POLICY    A probe address and port claimed by pods of two networks: fail-closed tags it for neither, older-wins keeps the older pod's (single-tenant clusters only). Decides only under --address-sharing=shared, or for a key the later pod of a clash also probes (one of fail-closed, older-wins; default fail-closed; env LACE_ADDRESS_CONFLICT)",
  "      --address-sharing POLICY     Pods of two networks at one address on this node: exclusive refuses the later pod's CNI ADD, or tags none of its probes at that address; shared allows it, for networks that trust each other only (a pod can then redirect the kubelet's probes into another network at its address) (one of exclusive, shared; default exclusive; env LACE_ADDRESS_SHARING)",
  "      --log-level LEVEL            Minimum level logged (one of trace, debug, info, warning, error, fatal; default info; env LACE_LOG_LEVEL)",
  "      --log-format FORMAT          auto: text on a terminal, JSON lines otherwise; text is coloured only on a terminal and without NO_COLOR (one of auto, json, text; default auto; env LACE_LOG_FORMAT)",
  "  -h, --help                       Show this help",
].join("\n");

Deno.test("helpText() of lace agent is exactly the reviewed text", () => {
  assert.equal(helpText(agentCommand), AGENT_HELP);
});

Deno.test("helpText() shows one-letter forms cobra's way and lists the words a placeholder hides", () => {
  const help = helpText(shortToy);
  assert.match(help, /^ {2}-o, --output text\|json {2}Format \(default text; env TOY_OUTPUT\)$/m);
  assert.match(help, /^ {6}--json {14}Same as --output json \(env TOY_JSON\)$/m);
  const levels = helpText(agentCommand).split("\n").find((l) => l.includes("--log-level"))!;
  assert.match(levels, /one of trace, debug, info, warning, error, fatal; default info/);
});

Deno.test("helpText() lists a command's subcommands with what they take", () => {
  const help = helpText({
    ...toy,
    subcommands: [{ name: "run", summary: "Run it" }, {
      name: "show",
      args: "NAME",
      summary: "Show one",
    }],
  });
  assert.match(help, /^Commands:\n {2}run {8}Run it\n {2}show NAME {2}Show one\n\nFlags:$/m);
});
