import assert from "node:assert/strict";
import { keyId } from "../probe/key.ts";
import { OPTS, pod } from "./_pod_fixture.ts";
import { probeTargetsForPod } from "./targets.ts";
import { networkMismatchMessage, podNetwork } from "./pod_network.ts";

Deno.test("probeTargetsForPod() uses configured annotation keys", () => {
  const p = pod({ annotations: { "x.io/net": "red", "x.io/id": "12" } });
  const { targets } = probeTargetsForPod(p, {
    networkAnnotation: "x.io/net",
    networkIdAnnotation: "x.io/id",
  });
  assert.equal(targets[0].networkId, 12);
  assert.equal(targets[0].network, "red");
});

const NODE_NET = { network: "green", networkId: 1 };

Deno.test("probeTargetsForPod() tags every target with the node's network, not the annotation's", () => {
  const p = pod({ ips: ["10.1.0.5", "fd00::5"] }); // annotated blue/7
  const { targets, mismatch } = probeTargetsForPod(p, OPTS, NODE_NET);
  assert.deepEqual(targets.map((t) => [t.network, t.networkId]), [["green", 1], ["green", 1]]);
  assert.deepEqual(mismatch, {
    pod: { namespace: "shop", name: "web", uid: "u1", creationTimestamp: "2026-01-01T00:00:00Z" },
    node: NODE_NET,
    annotated: 'network "blue" (id 7)',
  });
});

/** Every `network "…"` in a message, each name read back as the JSON string it must be. */
function networksNamed(message: string): string[] {
  return [...message.matchAll(/network ("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1]));
}

Deno.test("the mismatch Event quotes a network name holding quotes so it names no other network", () => {
  // The name rule allows `"`, `(` and `,`: written between plain quotes, this annotated name
  // would read as network "red" with an id, and the node's as network "green".
  const annotated = 'red"(id:9),but"blue';
  const node = { network: 'green"\\', networkId: 1 };
  const p = pod({ annotations: { "lace.io/network": annotated, "lace.io/network-id": "7" } });
  const { mismatch } = probeTargetsForPod(p, OPTS, node);
  const message = networkMismatchMessage(mismatch!);
  assert.deepEqual(networksNamed(message), [annotated, node.network], message);
  assert.match(message, / \(id 7\), but the node attached it to .* \(id 1\): /);
});

Deno.test("probeTargetsForPod() reports no mismatch when the annotations agree with the node", () => {
  const p = pod({ annotations: { "lace.io/network": "green", "lace.io/network-id": "1" } });
  const { targets, mismatch } = probeTargetsForPod(p, OPTS, NODE_NET);
  assert.equal(targets[0].networkId, 1);
  assert.equal(mismatch, undefined);
});

Deno.test("probeTargetsForPod() reports a network name that disagrees even when the id agrees", () => {
  const p = pod({ annotations: { "lace.io/network": "blue", "lace.io/network-id": "1" } });
  const { targets, mismatch } = probeTargetsForPod(p, OPTS, NODE_NET);
  assert.equal(targets[0].network, "green");
  assert.equal(mismatch?.annotated, 'network "blue" (id 1)');
});

Deno.test("probeTargetsForPod() uses the node's network for a pod without annotations, silently", () => {
  const { targets, mismatch, skipped } = probeTargetsForPod(
    pod({ annotations: null }),
    OPTS,
    NODE_NET,
  );
  assert.equal(targets[0].networkId, 1);
  assert.equal(mismatch, undefined);
  assert.deepEqual(skipped, []);
});

Deno.test("probeTargetsForPod() reports malformed annotations as a mismatch when the node knows the network", () => {
  const p = pod({ annotations: { "lace.io/network": "blue", "lace.io/network-id": "0x2" } });
  const { targets, mismatch, skipped } = probeTargetsForPod(p, OPTS, NODE_NET);
  assert.equal(targets[0].networkId, 1);
  assert.match(mismatch!.annotated, /must be a decimal number/);
  assert.deepEqual(skipped, []);
});

Deno.test("probeTargetsForPod() gives a default-network pod claims, not targets, and nothing to report", () => {
  const p = pod({
    annotations: null,
    ips: ["10.1.0.5", "127.0.0.1"],
    containers: [{
      name: "app",
      readinessProbe: { httpGet: { port: 8080 } },
      livenessProbe: { tcpSocket: { port: "nope" } },
    }],
  });
  const { targets, skipped, claims } = probeTargetsForPod(p, OPTS);
  assert.deepEqual(targets, []);
  assert.deepEqual(skipped, []);
  assert.deepEqual(claims?.map((c) => [keyId(c.key), c.networkId]), [["10.1.0.5:8080", 0]]);
});

Deno.test("podNetwork() takes a name of 1..253 printable characters, Unicode letters too", () => {
  for (const name of ["blue", "Blue_net.2-b", "blå", "x".repeat(253), "🦕".repeat(253)]) {
    assert.deepEqual(podNetwork({ "lace.io/network": name, "lace.io/network-id": "7" }, OPTS), {
      network: name,
      networkId: 7,
    });
  }
});

Deno.test("podNetwork() refuses a name with a control, format or space character, or too long", () => {
  const names = [
    "blue\r\nred", // forges a line
    "blue\x1b[2J", // a terminal escape
    "blue\u0085", // C1: next line
    "blue\u202e", // bidi override
    "blue\u200b", // zero width space: looks like "blue"
    "blue net",
    "blue\u00a0", // no-break space
    "blue\u2028",
    "\ud800", // lone surrogate
    "\ue000", // private use
    "x".repeat(254),
  ];
  for (const name of names) {
    const net = podNetwork({ "lace.io/network": name, "lace.io/network-id": "7" }, OPTS);
    assert.equal(typeof net, "string", JSON.stringify(name));
    assert.match(net as string, /^Annotation lace\.io\/network must be 1\.\.253 printable/);
  }
});

Deno.test("podNetwork()'s refusal quotes at most 80 characters of a long name, and its length", () => {
  const net = podNetwork({ "lace.io/network": "x".repeat(5000), "lace.io/network-id": "7" }, OPTS);
  assert.equal(
    net,
    `Annotation lace.io/network must be 1..253 printable characters without spaces: "${
      "x".repeat(80)
    }…" (5000 characters)`,
  );
});

Deno.test("probeTargetsForPod() reports a refused name as a mismatch when the node knows the network", () => {
  const p = pod({ annotations: { "lace.io/network": "green\n", "lace.io/network-id": "1" } });
  const { targets, mismatch } = probeTargetsForPod(p, OPTS, NODE_NET);
  assert.equal(targets[0].network, "green");
  assert.match(mismatch!.annotated, /printable characters without spaces: "green\\n"/);
});

Deno.test("podNetwork()'s refusals quote at most 80 characters of the id annotation, escaped", () => {
  const long = "9".repeat(100_000);
  for (
    const annotations of [{ "lace.io/network-id": long }, {
      "lace.io/network": "",
      "lace.io/network-id": long,
    }]
  ) {
    const net = podNetwork({ "lace.io/network": "blue", ...annotations }, OPTS) as string;
    assert.ok(net.length < 300, `${net.length} characters: ${net.slice(0, 120)}`);
    assert.ok(net.includes(`"${"9".repeat(80)}…"`), net.slice(0, 200));
  }
  const quote = podNetwork({ "lace.io/network": "blue", "lace.io/network-id": '7" (id 7)' }, OPTS);
  assert.equal(
    quote,
    'Annotation lace.io/network-id must be a decimal number 1..65535: "7\\" (id 7)"',
  );
});
