import assert from "node:assert/strict";
import { agentFlags, nodeFlags, parseNodeCommand } from "./agent.ts";
import { type CommandSpec, UsageError } from "./parser.ts";

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
