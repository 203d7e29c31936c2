/**
 * The agnhost stand-in's connect contract, inside a simulated node's
 * namespace: exit 0 when connected, else exit 1 with TIMEOUT, REFUSED, OTHER
 * or UNKNOWN first on stderr. Needs root.
 */
import assert from "node:assert/strict";
import { NetnsCluster } from "./netns_cluster.ts";
import { waitFor } from "../helpers/wait.ts";
import { needsRoot, skipIf } from "../helpers/skip.ts";

const ignore = skipIf(needsRoot("network namespaces"));
const AGNHOST = new URL("./agnhost.ts", import.meta.url).pathname;

async function connect(netns: string, ...args: string[]) {
  const out = await new Deno.Command("ip", {
    args: [
      "netns",
      "exec",
      netns,
      Deno.execPath(),
      "run",
      "--allow-net",
      AGNHOST,
      "connect",
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test({
  name: "the agnhost stand-in reports success and agnhost's error classes inside a namespace",
  ignore,
  async fn() {
    await using cluster = await NetnsCluster.create([{ name: "a" }, { name: "b" }]);
    await cluster.applyDaemonSet("ns", { metadata: { name: "ds" } });
    const [a, b] = cluster.nodes;
    await waitFor(async () => (await cluster.listPods("ns", "")).every((p) => p.ready), {
      timeout: 10_000,
      message: "the probe servers to start",
    });
    assert.deepEqual(await connect(a.netns, "--timeout=2s", `${b.ipv4}:1199`), {
      code: 0,
      stderr: "",
    });
    assert.deepEqual(await connect(a.netns, `[${b.ipv6}]:1199`), { code: 0, stderr: "" });
    assert.deepEqual(await connect(a.netns, `${b.ipv4}:1`), { code: 1, stderr: "REFUSED\n" });
    // An address on the bridge that nobody answers: no ARP reply before the timeout.
    assert.deepEqual(await connect(a.netns, "--timeout=300ms", "10.99.0.250:1199"), {
      code: 1,
      stderr: "TIMEOUT\n",
    });
    const unroutable = await connect(a.netns, "--timeout=1s", "10.98.0.1:1199");
    assert.equal(unroutable.code, 1);
    assert.match(
      unroutable.stderr,
      /^OTHER: dial tcp 10\.98\.0\.1:1199: connect: network is unreachable/,
    );
    const bad = await connect(a.netns, "no-port");
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^UNKNOWN: address no-port: missing port in address/);
  },
});
