import assert from "node:assert/strict";
import { hostNetworkSkips, isNodeLocalHost } from "./host_network.ts";
import { probeTargetsForPod } from "./targets.ts";
import { OPTS, pod } from "./_pod_fixture.ts";

Deno.test("isNodeLocalHost() holds localhost, loopback, link-local and unspecified addresses only", () => {
  for (const host of ["localhost", "127.0.0.1", "127.9.9.9", "::1", "169.254.20.10", "fe80::1"]) {
    assert.equal(isNodeLocalHost(host), true, host);
  }
  for (const host of ["10.244.1.10", "fd00:244::10", "::ffff:10.244.1.10", "victim.example", ""]) {
    assert.equal(isNodeLocalHost(host), false, host);
  }
  assert.equal(isNodeLocalHost("::ffff:127.0.0.1"), true);
});

Deno.test("a host-network pod gets no targets, and each probe or hook whose host is not the node's is reported", () => {
  const hostNet = pod({
    hostNetwork: true,
    containers: [{
      name: "app",
      livenessProbe: { httpGet: { host: "127.0.0.1", port: 9809, path: "/healthz" } },
      readinessProbe: { tcpSocket: { host: "10.244.1.10", port: 9001 } },
      startupProbe: { httpGet: { port: 8080 } },
      lifecycle: { preStop: { httpGet: { host: "victim.example", port: 8081, path: "/" } } },
    }],
  });
  // Hooks count whether or not they are targets: the kubelet runs them all the same.
  for (const lifecycleHooks of [true, false]) {
    const result = probeTargetsForPod(hostNet, { ...OPTS, lifecycleHooks });
    assert.deepEqual(result.targets, []);
    assert.deepEqual(result.skipped.map((s) => `${s.probe} ${s.reason}`), [
      "readiness host",
      "preStop host",
    ]);
    assert.match(result.skipped[0].message, /sets host "10\.244\.1\.10", which is not the node/);
    assert.match(result.skipped[0].message, /into that pod's network/);
  }
  assert.deepEqual(hostNetworkSkips(undefined, { namespace: "", name: "", uid: "" }), []);
  // A finished host-network pod is probed no more.
  assert.deepEqual(probeTargetsForPod({ ...hostNet, status: { phase: "Succeeded" } }, OPTS), {
    targets: [],
    skipped: [],
  });
});
