import assert from "node:assert/strict";
import { UsageError } from "../flags/parser.ts";
import { parseBandwidth, parseNetcheckArgs } from "./flags.ts";
import { defaultNetcheckOptions } from "./options.ts";

Deno.test("parseNetcheckArgs() gives the defaults when no flag is set", () => {
  const o = parseNetcheckArgs([], {});
  assert.deepEqual(o, defaultNetcheckOptions());
});

Deno.test("parseNetcheckArgs() reads every flag into options", () => {
  const o = parseNetcheckArgs([
    "--namespace=net",
    "--selector",
    "pool=a, zone=x",
    "--ip-family=ipv6",
    "--timeout=2s",
    "--bandwidth-time=5s",
    "--concurrency=4",
    "--min-bandwidth=1.5G",
    "--asymmetry=3",
    "--output=json",
    "--junit=out.xml",
    "--ready-timeout=30s",
  ], {})!;
  assert.equal(o.namespace, "net");
  assert.deepEqual(o.selector, { pool: "a", zone: "x" });
  assert.equal(o.ipFamily, "ipv6");
  assert.equal(o.connectTimeoutMs, 2000);
  assert.equal(o.bandwidthTimeS, 5);
  assert.equal(o.concurrency, 4);
  assert.equal(o.minBandwidthBps, 1.5e9);
  assert.equal(o.asymmetry, 3);
  assert.equal(o.output, "json");
  assert.equal(o.junit, "out.xml");
  assert.equal(o.readyTimeoutMs, 30_000);
});

Deno.test("parseNetcheckArgs() leaves KUBECONFIG to the shared kubeconfig loader", () => {
  assert.equal(parseNetcheckArgs([], { KUBECONFIG: "/a:/b" })!.kubeconfig, "");
  assert.equal(parseNetcheckArgs(["--kubeconfig=/k"], {})!.kubeconfig, "/k");
});

Deno.test("parseNetcheckArgs() returns null for --help", () => {
  assert.equal(parseNetcheckArgs(["--help"], {}), null);
});

for (
  const [args, fragment] of [
    [["--bandwidth-time=500ms"], "--bandwidth-time"],
    [["--bandwidth-time=1500ms"], "whole seconds"],
    [["--concurrency=0"], "--concurrency"],
    [["--ip-family=ipv5"], "ipv4, ipv6"],
    [["--min-bandwidth=fast"], "--min-bandwidth"],
    [["--asymmetry=0.5"], "--asymmetry"],
    [["--selector=nokey"], "--selector"],
    [["--namespace=Bad_NS"], "--namespace"],
    [["--no-such-flag"], "no-such-flag"],
    [["--timeout=10ms"], "--timeout"],
  ] as const
) {
  Deno.test(`parseNetcheckArgs() rejects ${args.join(" ")} with a one-line UsageError`, () => {
    assert.throws(() => parseNetcheckArgs([...args], {}), (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.ok(e.message.includes(fragment), e.message);
      assert.ok(!e.message.includes("\n"));
      return true;
    });
  });
}

Deno.test("parseBandwidth() understands decimal unit suffixes", () => {
  assert.equal(parseBandwidth("500M"), 5e8);
  assert.equal(parseBandwidth("100k"), 1e5);
  assert.equal(parseBandwidth("2000"), 2000);
  assert.equal(parseBandwidth("1Gbps"), 1e9);
});

Deno.test("--no-progress turns the progress bar off; --progress and the default keep it", () => {
  assert.equal(parseNetcheckArgs(["--no-progress"], {})!.progress, false);
  assert.equal(parseNetcheckArgs(["--progress"], {})!.progress, true);
  assert.equal(parseNetcheckArgs([], {})!.progress, true);
});

Deno.test("--networks takes namespaces and key=value labels, at least two, each once", () => {
  const o = parseNetcheckArgs(["--networks", "tenant-a, lace-test.io/network=red"], {})!;
  assert.deepEqual(o.networks, ["tenant-a", "lace-test.io/network=red"]);
  assert.throws(() => parseNetcheckArgs(["--networks", "tenant-a"], {}), /at least two/);
  assert.throws(() => parseNetcheckArgs(["--networks", "a,a"], {}), /names "a" twice/);
  assert.throws(() => parseNetcheckArgs(["--networks", "a,Bad_NS"], {}), /namespaces or key=value/);
  assert.throws(() => parseNetcheckArgs(["--networks", "a,k="], {}), /namespaces or key=value/);
});

Deno.test("--watch takes an interval of at least 1s and refuses --junit; sampling flags are whole numbers", () => {
  const o = parseNetcheckArgs(["--watch", "--interval", "30s", "--metrics-address", ""], {})!;
  assert.equal(o.watch, true);
  assert.equal(o.intervalMs, 30_000);
  assert.equal(o.metricsAddress, "");
  assert.throws(() => parseNetcheckArgs(["--watch", "--interval", "500ms"], {}), /at least 1s/);
  assert.throws(
    () => parseNetcheckArgs(["--watch", "--junit", "x.xml"], {}),
    /--junit is for one run/,
  );
  assert.throws(() => parseNetcheckArgs(["--peers", "0"], {}), /--peers must be/);
  assert.throws(() => parseNetcheckArgs(["--latency-samples", "101"], {}), /between 0 and 100/);
  assert.equal(parseNetcheckArgs(["--max-latency", "5ms"], {})!.maxLatencyMs, 5);
});
