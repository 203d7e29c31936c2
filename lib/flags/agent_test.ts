import assert from "node:assert/strict";
import { defaultConfig } from "../config.ts";
import { agentCommand, agentConfig, agentFlags, nodeFlags, parseNodeCommand } from "./agent.ts";
import { type CommandSpec, parseFlags, UsageError } from "./parser.ts";
import { parse } from "./_parser_fixture.ts";

interface NodeOptions {
  pinPath: string;
  agentSocket: string;
}

const command: CommandSpec<NodeOptions> = {
  name: "t",
  summary: "a command that reads the node's pins",
  usage: "lace t [--pin-path DIR] [--agent-socket PATH]",
  flags: [nodeFlags.pinPath, nodeFlags.agentSocket],
  defaults: () => ({ pinPath: "/sys/fs/bpf/lace", agentSocket: "" }),
};

Deno.test("parseNodeCommand() returns the options a command's node flags set", () => {
  assert.deepEqual(parseNodeCommand(command, ["--pin-path", "/sys/fs/bpf/l2"]), {
    pinPath: "/sys/fs/bpf/l2",
    agentSocket: "",
  });
});

Deno.test("parseNodeCommand() refuses bad node settings with every problem, one a line", () => {
  assert.throws(
    () => parseNodeCommand(command, ["--pin-path", "bpf", "--agent-socket", "run/a.sock"]),
    new UsageError(
      'Pin path must be absolute: "bpf"\nAgent socket must be an absolute path or empty: "run/a.sock"',
    ),
  );
});

Deno.test("parseNodeCommand() prints the help for --help and returns null, checking nothing", () => {
  const printed: string[] = [];
  const log = console.log;
  console.log = (text: string) => printed.push(text);
  try {
    assert.equal(parseNodeCommand(command, ["--help", "--pin-path", "bpf"]), null);
  } finally {
    console.log = log;
  }
  assert.equal(printed.length, 1);
  assert.match(printed[0], /^Usage: lace t \[--pin-path DIR\]/m);
});

Deno.test("--cni-chain-files shows its files as given, each network as =NETWORK:ID", () => {
  const flag = agentFlags.find((f) => f.name === "cni-chain-files")!;
  const format = flag.value.format as (v: unknown) => string;
  assert.equal(
    format([{ pattern: "10-flannel.conflist" }, {
      pattern: "*.conf",
      network: "blue",
      networkId: 7,
    }]),
    "10-flannel.conflist,*.conf=blue:7",
  );
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

Deno.test("agentConfig() keeps the ConfigError as the UsageError's cause", () => {
  try {
    agentConfig(parse(["--pin-path", "relative"]));
    assert.fail("expected a UsageError");
  } catch (e) {
    assert.ok(e instanceof UsageError);
    assert.equal((e.cause as Error).name, "ConfigError");
  }
});

Deno.test("every log level is accepted by --log-level", () => {
  for (const level of ["trace", "debug", "info", "warning", "error", "fatal"]) {
    assert.equal(parse(["--log-level", level]).logLevel, level);
  }
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
