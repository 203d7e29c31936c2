import assert from "node:assert/strict";
import { type CommandSpec, helpText, parseDuration, parseFlags, UsageError } from "./flags.ts";
import { agentConfig, agentFlags } from "./agent_flags.ts";

const spec: CommandSpec = {
  name: "agent",
  summary: "test",
  usage: "lace agent",
  flags: agentFlags,
};

Deno.test("parseDuration() reads units and combinations", () => {
  assert.equal(parseDuration("250ms"), 250);
  assert.equal(parseDuration("5s"), 5000);
  assert.equal(parseDuration("1m30s"), 90_000);
  assert.equal(parseDuration("1h"), 3_600_000);
});

Deno.test("parseDuration() rejects numbers without a unit and garbage", () => {
  for (const bad of ["", "5", "5x", "s", "1m 2s", "-1s"]) {
    assert.throws(() => parseDuration(bad), UsageError, bad);
  }
});

Deno.test("parseFlags() prefers a flag over the environment over the default", () => {
  const env = { LACE_PIN_PATH: "/sys/fs/bpf/from-env", LACE_MARK_SHIFT: "12" };
  const fromEnv = parseFlags(spec, [], env).values;
  assert.equal(fromEnv["pin-path"], "/sys/fs/bpf/from-env");
  assert.equal(fromEnv["mark-shift"], 12);
  const fromFlag = parseFlags(spec, ["--pin-path", "/sys/fs/bpf/flag"], env).values;
  assert.equal(fromFlag["pin-path"], "/sys/fs/bpf/flag");
  assert.equal(parseFlags(spec, [], {}).values["pin-path"], "/sys/fs/bpf/lace");
});

Deno.test("parseFlags() reads NODE_NAME when LACE_NODE_NAME is not set", () => {
  assert.equal(parseFlags(spec, [], { NODE_NAME: "n1" }).values["node-name"], "n1");
  assert.equal(
    parseFlags(spec, [], { NODE_NAME: "n1", LACE_NODE_NAME: "n2" }).values["node-name"],
    "n2",
  );
});

Deno.test("parseFlags() converts marks, durations and booleans", () => {
  const v = parseFlags(
    spec,
    ["--probe-mark=0x2000", "--debounce", "20ms", "--no-kube-api"],
    { LACE_RESYNC_INTERVAL: "30s" },
  ).values;
  assert.equal(v["probe-mark"], 0x2000);
  assert.equal(v["debounce"], 20);
  assert.equal(v["resync-interval"], 30_000);
  assert.equal(v["kube-api"], false);
  assert.equal(parseFlags(spec, [], { LACE_KUBE_API: "false" }).values["kube-api"], false);
});

Deno.test("parseFlags() gives one-line UsageErrors for bad flags and values", () => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [["--nope"], {}, /Unknown option '--nope'/],
    [["--mark-shift", "x"], {}, /--mark-shift must be a whole number: "x"/],
    [["--probe-mark", "0xzz"], {}, /--probe-mark must be a decimal or 0x hex number/],
    [["--log-level", "loud"], {}, /--log-level must be one of/],
    [[], { LACE_DEBOUNCE: "soon" }, /LACE_DEBOUNCE: Invalid duration "soon"/],
    [[], { LACE_KUBE_API: "maybe" }, /LACE_KUBE_API must be true or false/],
    [["stray"], {}, /unexpected argument "stray"/],
  ];
  for (const [args, env, re] of cases) {
    assert.throws(() => parseFlags(spec, args, env), (e: Error) => {
      assert.ok(e instanceof UsageError, `${args} gives a UsageError`);
      assert.match(e.message, re);
      assert.ok(!e.message.includes("\n"), "one line");
      return true;
    });
  }
});

Deno.test("agentConfig() refuses a probe mark that overlaps the network bits", () => {
  const v = parseFlags(spec, ["--node-name", "n", "--probe-mark", "0x10000"], {}).values;
  assert.throws(() => agentConfig(v), /overlaps the network bits/);
  const ok = parseFlags(spec, ["--node-name", "n", "--probe-mark", "0x10", "--mark-shift", "8"], {})
    .values;
  assert.equal(agentConfig(ok).probeMark, 0x10);
});

Deno.test("agentConfig() requires a node name when the API is the pod source", () => {
  assert.throws(() => agentConfig(parseFlags(spec, [], {}).values), /Node name is required/);
  const dirOnly = parseFlags(spec, ["--no-kube-api", "--pods-dir", "/tmp/pods"], {}).values;
  assert.equal(agentConfig(dirOnly).useApi, false);
});

Deno.test("helpText() lists every visible flag with its environment variable", () => {
  const text = helpText(spec);
  for (const f of agentFlags.filter((f) => !f.hidden)) {
    assert.ok(text.includes(`--${f.name}`), f.name);
    for (const e of f.env ?? []) assert.ok(text.includes(e), e);
  }
  assert.match(text, /default 0x1000/);
});
