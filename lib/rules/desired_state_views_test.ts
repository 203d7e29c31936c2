/** targetViews(): the entry and fields the agent's local view shows for each target. */
import assert from "node:assert/strict";
import { targetViews } from "./desired_state.ts";
import { markFor } from "../probe/key.ts";
import { compute, CONFIG, pod } from "../../tests/helpers/desired_state_world.ts";
import { target } from "./_pod_fixture.ts";

/** A liveness target in network 7, without its handler's fields. */
const { handler: _, http: __, ...TARGET } = target({ probe: "liveness" });

Deno.test("targetViews() shares one frozen value per network and copies each target's fields", () => {
  const views = compute([pod("a", "10.0.0.1", 3, [8080, 9000])]).views;
  assert.equal(views[0].entry.value, views[1].entry.value);
  assert.ok(Object.isFrozen(views[0].entry.value));
  assert.deepEqual(views[0].entry.value, { networkId: 3, mark: markFor(CONFIG, 3) });
  const http = {
    ...TARGET,
    handler: "httpGet",
    http: { path: "/", scheme: "HTTP" },
    periodSeconds: 3,
  } as const;
  const { key, networkId, ...rest } = http;
  assert.deepEqual(targetViews([http], CONFIG), [{
    entry: { key, value: { networkId, mark: markFor(CONFIG, 7) } },
    ...rest,
  }]);
  const { http: _, periodSeconds: __, ...tcp } = http;
  const [plain] = targetViews([{
    ...tcp,
    key: { family: "ipv6", address: "fd00::1", port: 81 },
    probe: "readiness",
    handler: "tcpSocket",
  }], CONFIG);
  assert.deepEqual(Object.keys(plain), [
    "entry",
    "network",
    "pod",
    "container",
    "probe",
    "handler",
  ]);
});

Deno.test("targetViews() keeps a target's probe period, and gives a target without one none", () => {
  const entry = { key: TARGET.key, value: { networkId: 7, mark: markFor(CONFIG, 7) } };
  const { key: _, networkId: __, ...fields } = TARGET;
  const tcp = { ...TARGET, handler: "tcpSocket", periodSeconds: 7 } as const;
  assert.deepEqual(targetViews([tcp], CONFIG), [{
    entry,
    ...fields,
    handler: "tcpSocket",
    periodSeconds: 7,
  }]);
  const http = { ...TARGET, handler: "httpGet", http: { path: "/", scheme: "HTTP" } } as const;
  assert.deepEqual(targetViews([http], CONFIG), [{
    entry,
    ...fields,
    handler: "httpGet",
    http: { path: "/", scheme: "HTTP" },
  }]);
});
