import assert from "node:assert/strict";
import type { TargetView } from "./views.ts";
import { addressesText, lastHitText, servesText, targetsTable } from "./text.ts";

Deno.test("lastHitText() says how long ago, never, or unknown", () => {
  assert.equal(lastHitText(75.9), "1m15s ago");
  assert.equal(lastHitText(0.4), "0s ago");
  assert.equal(lastHitText(null), "never");
  assert.equal(lastHitText(undefined), "-");
});

Deno.test("servesText() names the container and the probe or hook, or - when unknown", () => {
  assert.equal(servesText({ container: "app", probe: "readiness" }), "app/readiness");
  assert.equal(servesText({ container: "proxy", probe: "preStop" }), "proxy/preStop");
  assert.equal(servesText({ container: "", probe: "postStart" }), "postStart");
  assert.equal(servesText({}), "-");
});

const view = (port: number, extra: Partial<TargetView> = {}): TargetView => ({
  family: "ipv4",
  address: "10.0.0.1",
  port,
  networkId: 7,
  mark: 0x71000,
  ...extra,
});

Deno.test("targetsTable() names the probe or lifecycle hook each target serves, - when unknown", () => {
  const rows = targetsTable([
    view(9090, {
      pod: "shop/web",
      network: "blue",
      container: "app",
      probe: "preStop",
      handler: "httpGet",
      hits: 0,
      lastHitAgeSeconds: null,
    }),
    view(8080, {
      pod: "shop/web",
      network: "blue",
      container: "app",
      probe: "readiness",
      handler: "httpGet",
      hits: 3,
      lastHitAgeSeconds: 2,
    }),
    view(15000, { hits: 1, lastHitAgeSeconds: 61 }),
  ]).split("\n").map((l) => l.split(/\s{2,}/));
  assert.deepEqual(rows, [
    ["FAMILY", "ADDRESS", "PORT", "NETWORK", "MARK", "POD", "SERVES", "HITS", "LAST HIT"],
    ["ipv4", "10.0.0.1", "8080", "blue (7)", "0x71000", "shop/web", "app/readiness", "3", "2s ago"],
    ["ipv4", "10.0.0.1", "9090", "blue (7)", "0x71000", "shop/web", "app/preStop", "0", "never"],
    ["ipv4", "10.0.0.1", "15000", "7", "0x71000", "-", "-", "1", "1m1s ago"],
  ]);
});

Deno.test("addressesText() says under exclusive who holds an address and whose probes are not tagged there, escaped", () => {
  const address = {
    family: "ipv4" as const,
    address: "10.244.1.10",
    holder: "green/v",
    holderNetwork: "green",
    later: [{ pod: "red/a\u001b[2J", network: "red" }, { pod: "plain/p", network: "" }],
    holderWithdrawn: true,
  };
  assert.equal(addressesText({ sharing: "exclusive", addresses: [] }), "");
  const text = addressesText({ sharing: "exclusive", addresses: [address] });
  assert.match(
    text,
    /^Addresses held by pods of several networks \(--address-sharing=exclusive\):/,
  );
  assert.match(
    text,
    /10\.244\.1\.10: held by green\/v \(network "green"\); not tagged there: red\/a.* \(network "red"\), plain\/p \(default network\), and the holder/,
  );
  assert.ok(!text.includes("\u001b"), "a pod name's escape sequence is not printed raw");
  assert.match(
    addressesText({ sharing: "shared", addresses: [{ ...address, holderWithdrawn: false }] }),
    /shared by pods of several networks \(--address-sharing=shared\):\n {2}10\.244\.1\.10: green\/v/,
  );
});

Deno.test("addressesText() quotes each network's name, so a pod-chosen name cannot add a pod to the line", () => {
  // Unquoted, this reads "held by green/v (green), evil/x (blue); …": a second holder.
  const forged = "green),evil/x(blue";
  const text = addressesText({
    sharing: "exclusive",
    addresses: [{
      family: "ipv4",
      address: "10.244.1.10",
      holder: "green/v",
      holderNetwork: forged,
      later: [{ pod: "red/a", network: "red" }],
      holderWithdrawn: false,
    }],
  });
  assert.ok(text.includes(`held by green/v (network ${JSON.stringify(forged)});`), text);
});
