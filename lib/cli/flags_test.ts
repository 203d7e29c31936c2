import assert from "node:assert/strict";
import { defaultConfig } from "../config.ts";
import { duration, helpText, mark, parseFlags, UsageError } from "./flags.ts";
import { agentCommand, agentConfig, agentFlags } from "./agent_flags.ts";

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

Deno.test("parseFlags() gives one-line UsageErrors for a bad flag or value", () => {
  const cases: [string[], Record<string, string>, RegExp][] = [
    [["--nope"], {}, /Unknown option '--nope'/],
    [["--mark-shift", "x"], {}, /^--mark-shift must be a whole number: "x"$/],
    [["--probe-mark", "0xzz"], {}, /--probe-mark must be a decimal or 0x hex number/],
    [["--log-level", "loud"], {}, /--log-level must be one of trace, debug/],
    [[], { LACE_DEBOUNCE: "soon" }, /^LACE_DEBOUNCE must be a duration such as 500ms/],
    [[], { LACE_KUBE_API: "maybe" }, /LACE_KUBE_API must be true or false/],
    [["stray"], {}, /unexpected argument "stray"/],
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
