import assert from "node:assert/strict";
import {
  addressSharingCheck,
  apiServerAddressesCheck,
  hostAddressesCheck,
  hostAddressSourceCheck,
  podRangesCheck,
  staleTargetsCheck,
  unmatchedCheck,
} from "./agent_checks.ts";

const target = (port: number, age: number | null, periodSeconds?: number) => ({
  family: "ipv4" as const,
  address: "10.0.0.1",
  port,
  networkId: 1,
  mark: 0x11000,
  pod: "ns/a",
  probe: "readiness",
  hits: age === null ? 0 : 5,
  lastHitAgeSeconds: age,
  ...(periodSeconds ? { periodSeconds } : {}),
});

Deno.test("staleTargetsCheck() passes while every target was connected to within 3 probe periods", () => {
  const c = staleTargetsCheck([target(80, 29), target(81, 5, 2)]);
  assert.equal(c.ok, true);
  assert.equal(c.severity, "warning");
});

Deno.test("staleTargetsCheck() flags a target silent for more than 3 of its probe periods, and one never connected to", () => {
  const c = staleTargetsCheck([target(80, 31), target(81, 7, 2), target(82, null), target(83, 1)]);
  assert.equal(c.ok, false);
  assert.match(
    c.message,
    /not connected to within 3 probe periods: 10\.0\.0\.1:80 \(ns\/a, readiness\) last 31 s ago \(period 10 s\); 10\.0\.0\.1:81 .* \(period 2 s\)/,
  );
  assert.match(c.message, /never connected to: 10\.0\.0\.1:82 \(ns\/a, readiness\)/);
  assert.doesNotMatch(c.message, /:83/);
});

Deno.test("staleTargetsCheck() does not judge lifecycle hooks' targets, which the kubelet uses once", () => {
  const hook = (port: number, probe: string) => ({ ...target(port, null), probe });
  const c = staleTargetsCheck([target(80, 5), hook(81, "preStop"), hook(82, "postStart")]);
  assert.equal(c.ok, true, c.message);
  assert.match(c.message, /each of the 1 targets/);
});

Deno.test("unmatchedCheck() lists recent unmatched connects with their pod", () => {
  assert.equal(unmatchedCheck([]).ok, true);
  const c = unmatchedCheck([{
    family: "ipv4",
    address: "10.244.1.10",
    port: 8081,
    networkId: 1,
    pod: "ns/a",
    reports: 2,
    lastSeen: Date.UTC(2026, 11, 1, 3, 0, 0),
  }]);
  assert.equal(c.ok, false);
  assert.match(
    c.message,
    /10\.244\.1\.10:8081 \(pod ns\/a\), 2 reports, last 2026-12-01T03:00:00\.000Z/,
  );
});

Deno.test("addressSharingCheck() passes with no clash, names each clash under exclusive, and warns of the exposure under shared", () => {
  const clash = {
    family: "ipv4" as const,
    address: "10.244.1.10",
    holder: "green/v",
    holderNetwork: "green",
    later: [{ pod: "red/a", network: "red" }],
    holderWithdrawn: false,
  };
  const clean = addressSharingCheck({ sharing: "exclusive", addresses: [] });
  assert.equal(clean.ok, true);
  assert.match(clean.message, /each address on this node belongs to one network/);
  const clashed = addressSharingCheck({ sharing: "exclusive", addresses: [clash] });
  assert.equal(clashed.ok, false);
  assert.match(
    clashed.message,
    /10\.244\.1\.10 held by green\/v \(network "green"\), later red\/a \(network "red"\)/,
  );
  const shared = addressSharingCheck({ sharing: "shared", addresses: [] });
  assert.equal(shared.ok, false, "sharing is an exposure even while no address is shared");
  assert.equal(shared.severity, "warning");
  assert.match(shared.message, /redirect to another network's pod/);
  assert.match(addressSharingCheck({ sharing: "shared", addresses: [clash] }).message, /1 address/);
});

Deno.test("hostAddressesCheck() fails naming each pod at one of the node's own addresses, with the fix", () => {
  assert.equal(hostAddressesCheck([]).ok, true);
  const held = hostAddressesCheck([{ pod: "tenant-a/x", address: "10.99.1.1" }]);
  assert.equal(held.ok, false);
  assert.equal(held.severity, "error");
  assert.match(held.message, /tenant-a\/x at 10\.99\.1\.1/);
  assert.match(held.fix, /exclude the node's and the API server's addresses/);
  const api = hostAddressesCheck(
    [{ pod: "tenant-a/x", address: "10.99.1.1" }, { pod: "tenant-b/y", address: "10.96.0.1" }],
    ["10.96.0.1"],
  );
  assert.match(
    api.message,
    /tenant-a\/x at 10\.99\.1\.1; tenant-b\/y at 10\.96\.0\.1 \(the API server's\)/,
  );
});

Deno.test("apiServerAddressesCheck() names the API server's addresses and warns naming a source that failed", () => {
  const ok = apiServerAddressesCheck({
    addresses: ["10.96.0.1", "10.98.0.1"],
    sources: [
      { name: "kubernetes-service", addresses: ["10.96.0.1"] },
      { name: "kubernetes-endpointslice", addresses: ["10.98.0.1"] },
    ],
  });
  assert.equal(ok.ok, true);
  assert.match(
    ok.message,
    /10\.96\.0\.1, 10\.98\.0\.1 \(from kubernetes-service, kubernetes-endpointslice\)/,
  );
  const failing = apiServerAddressesCheck({
    addresses: ["10.96.0.1"],
    sources: [
      { name: "kubernetes-service", addresses: ["10.96.0.1"], error: "connection refused" },
      { name: "kubernetes-endpointslice", addresses: [], error: "forbidden", neverRead: true },
    ],
  });
  assert.equal(failing.ok, false);
  assert.equal(failing.severity, "warning");
  assert.match(
    failing.message,
    /kubernetes-service not read again: connection refused; kubernetes-endpointslice never read: forbidden/,
  );
  assert.match(failing.fix, /<release>-api-server in namespace default .* kube-public/);
});

Deno.test("hostAddressSourceCheck() warns when the node's addresses are not read from the kubelet's namespace, or the agent runs in another one", () => {
  assert.equal(
    hostAddressSourceCheck({ source: "kubelet-netns", pid: 10, otherNetns: false }).ok,
    true,
  );
  const other = hostAddressSourceCheck({ source: "kubelet-netns", pid: 10, otherNetns: true });
  assert.equal(other.ok, false);
  assert.equal(other.severity, "warning");
  assert.match(other.message, /another network namespace than the kubelet \(process 10\)/);
  assert.match(other.fix, /hostNetwork/);
  const fallback = hostAddressSourceCheck({
    source: "fallback",
    pid: null,
    error: "cannot read the kubelet's network namespace: no process in the kubelet cgroup",
    otherNetns: null,
  });
  assert.equal(fallback.ok, false);
  assert.match(fallback.message, /no process in the kubelet cgroup: holding the last addresses/);
  assert.match(fallback.fix, /hostPID/);
});

Deno.test("addressSharingCheck() quotes each network's name, so a pod-chosen name cannot add a pod to the line", () => {
  // Unquoted, this reads "later red/a (network red), evil/x (network blue)": a second pod.
  const forged = "red),evil/x(network:blue";
  const check = addressSharingCheck({
    sharing: "exclusive",
    addresses: [{
      family: "ipv4",
      address: "10.244.1.10",
      holder: "green/v",
      holderNetwork: "green",
      later: [{ pod: "red/a", network: forged }],
      holderWithdrawn: false,
    }],
  });
  assert.ok(
    check.message.endsWith(`later red/a (network ${JSON.stringify(forged)})`),
    check.message,
  );
});

Deno.test("podRangesCheck() warns without pod ranges, and fails naming each pod outside them, with the fix", () => {
  const unset = podRangesCheck([], []);
  assert.equal(unset.ok, false);
  assert.equal(unset.severity, "warning");
  assert.match(unset.fix, /--pod-cidrs/);
  assert.equal(podRangesCheck(["10.244.0.0/16"], []).ok, true);
  const outside = podRangesCheck(["10.244.0.0/16"], [{ pod: "tenant-a/x", address: "10.98.0.1" }]);
  assert.equal(outside.ok, false);
  assert.equal(outside.severity, "error");
  assert.match(outside.message, /tenant-a\/x at 10\.98\.0\.1/);
  assert.match(outside.fix, /inside the pod ranges/);
});
