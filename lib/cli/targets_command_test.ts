import assert from "node:assert/strict";
import type { TargetView } from "../agent/http_server.ts";
import { targetsTable } from "./targets_command.ts";

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
