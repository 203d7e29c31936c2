import assert from "node:assert/strict";
import { defaultConfig } from "../config.ts";
import {
  boolean,
  type CommandSpec,
  duration,
  helpText,
  integer,
  mark,
  oneOf,
  parseFlags,
  text,
  UsageError,
} from "./parser.ts";
import { MAX_TIMER_MS } from "../time/duration.ts";
import { agentCommand, agentConfig, agentFlags } from "./agent.ts";

const parse = (args: string[], env: Record<string, string> = {}) =>
  parseFlags(agentCommand, args, env).options;

Deno.test("parseFlags() prefers a flag over the environment over the config's default", () => {
  const env = { LACE_PIN_PATH: "/sys/fs/bpf/from-env", LACE_MARK_SHIFT: "12" };
  const fromEnv = parse([], env);
  assert.equal(fromEnv.pinPath, "/sys/fs/bpf/from-env");
  assert.equal(fromEnv.markShift, 12);
  assert.equal(parse(["--pin-path", "/sys/fs/bpf/flag"], env).pinPath, "/sys/fs/bpf/flag");
  assert.equal(parse([]).pinPath, defaultConfig().pinPath);
});

Deno.test("parseFlags() reads no variable whose flag is given, so a bad one is not reported", () => {
  assert.equal(parse(["--mark-shift", "12"], { LACE_MARK_SHIFT: "twelve" }).markShift, 12);
});

Deno.test("parseFlags() says in one line how to give a value that starts with a dash", () => {
  assert.throws(
    () => parse(["--pin-path", "-x"]),
    (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.equal(
        e.message,
        "flag --pin-path needs a value (one that starts with a dash is given as " +
          "--pin-path=-VALUE): see lace agent --help",
      );
      return true;
    },
  );
  assert.equal(parse(["--pin-path=-x"]).pinPath, "-x");
});

Deno.test("parseFlags() with no flags and no environment gives exactly the default Config", () => {
  assert.deepEqual(parse([]), defaultConfig());
});

Deno.test("parseFlags() reads NODE_NAME when LACE_NODE_NAME is not set", () => {
  assert.equal(parse([], { NODE_NAME: "n1" }).nodeName, "n1");
  assert.equal(parse([], { NODE_NAME: "n1", LACE_NODE_NAME: "n2" }).nodeName, "n2");
});

Deno.test("parseFlags() converts marks, durations and booleans into typed Config values", () => {
  const c = parse(
    ["--probe-mark=0x2000", "--debounce", "20ms", "--no-kube-api", "--log-level=debug"],
    { LACE_RESYNC_INTERVAL: "30s" },
  );
  assert.equal(c.probeMark, 0x2000);
  assert.equal(c.debounceMs, 20);
  assert.equal(c.resyncMs, 30_000);
  assert.equal(c.useApi, false);
  assert.equal(c.logLevel, "debug");
  assert.equal(parse([], { LACE_KUBE_API: "false" }).useApi, false);
});

Deno.test("--lifecycle-hooks takes true or false, from the flag or LACE_LIFECYCLE_HOOKS, default true", () => {
  assert.equal(parse([]).lifecycleHooks, true);
  assert.equal(parse(["--lifecycle-hooks=false"]).lifecycleHooks, false);
  assert.equal(
    parse(["--lifecycle-hooks", "true"], { LACE_LIFECYCLE_HOOKS: "false" }).lifecycleHooks,
    true,
  );
  assert.equal(parse([], { LACE_LIFECYCLE_HOOKS: "false" }).lifecycleHooks, false);
  assert.throws(
    () => parse(["--lifecycle-hooks=maybe"]),
    new UsageError('--lifecycle-hooks must be true or false: "maybe"'),
  );
});

Deno.test("parseFlags() gives one-line UsageErrors for a bad flag or value", () => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [["--nope"], {}, /^unknown flag --nope: see lace agent --help$/],
    [["--mark-shift", "x"], {}, /^--mark-shift must be a whole number: "x"$/],
    [["--probe-mark", "0xzz"], {}, /--probe-mark must be a decimal or 0x hex number/],
    [["--log-level", "loud"], {}, /--log-level must be one of trace, debug/],
    [[], { LACE_DEBOUNCE: "soon" }, /^LACE_DEBOUNCE must be a duration such as 500ms/],
    [[], { LACE_KUBE_API: "maybe" }, /LACE_KUBE_API must be true or false/],
    [["stray"], {}, /^unexpected argument "stray": see lace agent --help$/],
  ];
  for (const [args, env, re] of cases) {
    assert.throws(() => parse(args, env), (e: Error) => {
      assert.ok(e instanceof UsageError, `${args} gives a UsageError`);
      assert.match(e.message, re);
      assert.ok(!e.message.includes("\n"), "one line");
      return true;
    });
  }
});

Deno.test("parseFlags() reports every bad value at once, one line each", () => {
  assert.throws(
    () => parse(["--mark-shift=x", "--debounce=soon"], { LACE_PROBE_MARK: "0xzz" }),
    (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.deepEqual(e.message.split("\n").map((l) => l.split(" ")[0]), [
        "LACE_PROBE_MARK",
        "--mark-shift",
        "--debounce",
      ]);
      return true;
    },
  );
});

Deno.test("the duration parser refuses negative values and values no timer can wait", () => {
  assert.equal(duration.parse("1m30s"), 90_000);
  assert.throws(() => duration.parse("-1s"), /must not be negative/);
  assert.throws(() => duration.parse("600h"), /must be at most 596h, the longest a timer can wait/);
  assert.throws(() => duration.parse("5"), /must be a duration/);
});

Deno.test("the mark parser reads decimal and hex and shows hex", () => {
  assert.equal(mark.parse("4096"), 0x1000);
  assert.equal(mark.parse("0x1000"), 4096);
  assert.equal(mark.format(0x1000), "0x1000");
});

Deno.test("every Config key is set by exactly one agent flag, each with its own name", () => {
  const keys = agentFlags.map((f) => f.key).sort();
  assert.deepEqual(keys, Object.keys(defaultConfig()).sort());
  assert.equal(new Set(agentFlags.map((f) => f.name)).size, agentFlags.length);
});

Deno.test("agentConfig() refuses a probe mark that overlaps the network bits", () => {
  assert.throws(
    () => agentConfig(parse(["--node-name", "n", "--probe-mark", "0x10000"])),
    /overlaps the network bits/,
  );
  const ok = parse(["--node-name", "n", "--probe-mark", "0x10", "--mark-shift", "8"]);
  assert.equal(agentConfig(ok).probeMark, 0x10);
});

Deno.test("agentConfig() requires a node name when the API is the pod source", () => {
  assert.throws(() => agentConfig(parse([])), /Node name is required/);
  assert.equal(agentConfig(parse(["--no-kube-api", "--pods-dir", "/tmp/pods"])).useApi, false);
});

Deno.test("agentConfig() refuses out-of-range ports, timers and relative sockets all at once", () => {
  const c = parse([
    "--node-name=n",
    "--metrics-addr=127.0.0.1:99999",
    "--resync-interval=48h",
    "--cni-socket=relative/path",
  ]);
  assert.throws(() => agentConfig(c), (e: Error) => {
    assert.ok(e instanceof UsageError);
    const lines = e.message.split("\n");
    assert.equal(lines.length, 3, e.message);
    assert.match(lines[0], /Metrics address port must be 1\.\.65535: "127\.0\.0\.1:99999"/);
    assert.match(lines[1], /Resync interval must be 1s\.\.24h: 48h/);
    assert.match(lines[2], /CNI socket must be an absolute path or empty: "relative\/path"/);
    return true;
  });
});

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

Deno.test("the boolean parser reads true/false, 1/0, yes/no, on/off in any case, and nothing else", () => {
  for (const t of ["1", "true", "TRUE", "yes", "On"]) assert.equal(boolean.parse(t), true, t);
  for (const t of ["0", "false", "No", "off"]) assert.equal(boolean.parse(t), false, t);
  assert.throws(() => boolean.parse("maybe"), new Error(`must be true or false: "maybe"`));
});

Deno.test("the integer parser takes only decimal digits", () => {
  assert.equal(integer.parse("0"), 0);
  assert.equal(integer.parse("65535"), 65535);
  for (const t of ["-1", "1.5", " 1", "1x", "x1", "", "0x10"]) {
    assert.throws(() => integer.parse(t), new Error(`must be a whole number: "${t}"`), t);
  }
});

Deno.test("the mark parser takes only decimal or 0x hex", () => {
  assert.equal(mark.parse("0xFF"), 255);
  for (const t of ["0x", "0X10", "12a", "a12", "0x1g", "-1", ""]) {
    assert.throws(() => mark.parse(t), new Error(`must be a decimal or 0x hex number: "${t}"`), t);
  }
});

Deno.test("the duration parser takes 0 and the longest timer, and refuses one millisecond more", () => {
  assert.equal(duration.parse("0s"), 0);
  assert.equal(duration.parse(`${MAX_TIMER_MS}ms`), MAX_TIMER_MS);
  assert.throws(
    () => duration.parse(`${MAX_TIMER_MS + 1}ms`),
    new Error(`must be at most 596h, the longest a timer can wait: "${MAX_TIMER_MS + 1}ms"`),
  );
  assert.throws(() => duration.parse("-1ms"), new Error(`must not be negative: "-1ms"`));
  assert.throws(
    () => duration.parse("soon"),
    new Error(`must be a duration such as 500ms, 5s or 1m30s: "soon"`),
  );
});

Deno.test("oneOf() takes a listed word only and names the choices", () => {
  const level = oneOf(["a", "b"] as const);
  assert.equal(level.parse("b"), "b");
  assert.equal(level.metavar, "a|b");
  assert.throws(() => level.parse("B"), new Error(`must be one of a, b: "B"`));
});

interface Toy {
  name: string;
  count: number;
  on: boolean;
  secret: string;
}

const toy: CommandSpec<Toy> = {
  name: "toy",
  summary: "A toy command.",
  usage: "lace toy [flags]",
  flags: [
    { name: "name", key: "name", value: text, env: ["TOY_NAME", "NAME"], help: "The name" },
    { name: "count", key: "count", value: integer, metavar: "COUNT", help: "How many" },
    { name: "on", key: "on", value: boolean, env: ["TOY_ON"], help: "Switch" },
    { name: "secret", key: "secret", value: text, hidden: true, help: "Hidden" },
  ],
  defaults: () => ({ name: "", count: 3, on: false, secret: "" }),
};

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

Deno.test("parseFlags() ignores an empty variable and takes the first variable set", () => {
  assert.equal(parseFlags(toy, [], { TOY_NAME: "", NAME: "b" }).options.name, "b");
  assert.equal(parseFlags(toy, [], { TOY_NAME: "a", NAME: "b" }).options.name, "a");
  assert.equal(parseFlags(toy, [], { TOY_ON: "yes" }).options.on, true);
});

Deno.test("parseFlags() says whether help was asked and refuses positionals unless allowed", () => {
  assert.equal(parseFlags(toy, ["--help"], {}).help, true);
  assert.equal(parseFlags(toy, [], {}).help, false);
  assert.throws(
    () => parseFlags(toy, ["x"], {}),
    new UsageError(`unexpected argument "x": see lace toy --help`),
  );
  assert.deepEqual(parseFlags({ ...toy, positionals: true }, ["x", "y"], {}).positionals, [
    "x",
    "y",
  ]);
});

Deno.test("parseFlags() reports a flag without its value in one line naming the command", () => {
  assert.throws(
    () => parseFlags(toy, ["--count"], {}),
    new UsageError("flag --count needs a value: see lace toy --help"),
  );
});

Deno.test("agentConfig() keeps the ConfigError as the UsageError's cause", () => {
  try {
    agentConfig(parse(["--pin-path", "relative"]));
    assert.fail("expected a UsageError");
  } catch (e) {
    assert.ok(e instanceof UsageError);
    assert.equal((e.cause as Error).name, "ConfigError");
  }
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

Deno.test("every log level is accepted by --log-level", () => {
  for (const level of ["trace", "debug", "info", "warning", "error", "fatal"]) {
    assert.equal(parse(["--log-level", level]).logLevel, level);
  }
});

Deno.test("parseFlags() reports an unknown flag without node's advice on positionals", () => {
  assert.throws(
    () => parseFlags(toy, ["--a.b"], {}),
    new UsageError("unknown flag --a.b: see lace toy --help"),
  );
});

Deno.test("UsageError is named so", () => {
  assert.equal(new UsageError("x").name, "UsageError");
});

Deno.test("parseFlags() names the command whose help to read in its usage errors", () => {
  assert.throws(
    () => parse(["--nope"]),
    new UsageError("unknown flag --nope: see lace agent --help"),
  );
  assert.throws(
    () => parse(["-x"]),
    new UsageError("unknown flag -x: see lace agent --help"),
  );
  assert.throws(
    () => parse(["--help=yes"]),
    new UsageError("flag --help takes no value: see lace agent --help"),
  );
});

Deno.test("parseFlags() takes -h as --help, for every command", () => {
  assert.equal(parseFlags(toy, ["-h"], {}).help, true);
  assert.equal(parseFlags(agentCommand, ["--pin-path=/x", "-h"], {}).help, true);
});

const shortToy: CommandSpec<{ output: "text" | "json"; name: string }> = {
  name: "toy",
  summary: "A toy command.",
  usage: "lace toy [flags]",
  flags: [
    {
      name: "output",
      short: "o",
      key: "output",
      value: oneOf(["text", "json"] as const),
      env: ["TOY_OUTPUT"],
      help: "Format",
    },
    {
      name: "json",
      key: "output",
      value: { ...boolean, parse: (t) => boolean.parse(t) ? "json" : "text", format: () => "" },
      env: ["TOY_JSON"],
      help: "Same as --output json",
    },
    { name: "name", key: "name", value: text, metavar: "NAME", help: "A name" },
  ],
  defaults: () => ({ output: "text", name: "" }),
};

Deno.test("parseFlags() reads a flag's one-letter form, its value attached or not", () => {
  assert.equal(parseFlags(shortToy, ["-o", "json"], {}).options.output, "json");
  assert.equal(parseFlags(shortToy, ["-ojson"], {}).options.output, "json");
  assert.throws(
    () => parseFlags(shortToy, ["-o", "yaml"], {}),
    new UsageError('--output must be one of text, json: "yaml"'),
  );
});

Deno.test("parseFlags() lets a flag given beat a variable that sets the same option through another flag", () => {
  assert.equal(parseFlags(shortToy, ["-o", "text"], { TOY_JSON: "1" }).options.output, "text");
  assert.equal(parseFlags(shortToy, ["--json"], { TOY_OUTPUT: "text" }).options.output, "json");
  assert.equal(parseFlags(shortToy, [], { TOY_JSON: "1" }).options.output, "json");
});

Deno.test("parseFlags() refuses two flags given for the same option", () => {
  assert.throws(
    () => parseFlags(shortToy, ["--json", "-o", "text"], {}),
    new UsageError("--output and --json both set the same option: give one"),
  );
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

Deno.test("lace agent --pod-cidrs takes comma-separated CIDRs and refuses one with host bits", () => {
  const { options } = parseFlags(agentCommand, ["--pod-cidrs=10.244.0.0/16, fd00::/64"], {});
  assert.deepEqual(options.podCidrs, ["10.244.0.0/16", "fd00::/64"]);
  assert.throws(
    () => parseFlags(agentCommand, ["--pod-cidrs=10.244.1.0/16"], {}),
    /host bits are set/,
  );
});

Deno.test("lace agent --pod-cidrs skips empty items between commas", () => {
  assert.deepEqual(parse(["--pod-cidrs=10.244.0.0/16,,fd00::/64,"]).podCidrs, [
    "10.244.0.0/16",
    "fd00::/64",
  ]);
});

Deno.test("a boolean flag named no-x is refused when parsing: parseArgs could never set it", () => {
  const spec: CommandSpec<{ quiet: boolean }> = {
    name: "x",
    summary: "",
    usage: "lace x",
    flags: [{ name: "no-quiet", key: "quiet", value: boolean, help: "" }],
    defaults: () => ({ quiet: false }),
  };
  assert.throws(() => parseFlags(spec, [], {}), /--no-quiet without "no-"/);
});
