import assert from "node:assert/strict";
import { parsePodName, podRows, podTable, podTargets } from "./pod.ts";
import type { TargetView } from "../agent_api/views.ts";

const t = (pod: string, port: number, probe: string, extra: Partial<TargetView> = {}) => ({
  family: "ipv4" as const,
  address: "10.0.0.1",
  port,
  networkId: 1,
  mark: 0x11000,
  pod,
  network: "blue",
  container: "app",
  probe,
  handler: "tcpSocket",
  ...extra,
});

Deno.test("parsePodName() takes NAMESPACE/NAME and refuses anything else", () => {
  assert.equal(parsePodName("default/web-0"), "default/web-0");
  for (const bad of [undefined, "web", "a/b/c", "A/b", "/b"]) {
    assert.throws(() => parsePodName(bad), /needs NAMESPACE\/NAME/);
  }
});

Deno.test("podTargets() keeps the pod's own targets, by probe then port", () => {
  const got = podTargets([
    t("ns/b", 1, "liveness"),
    t("ns/a", 9, "readiness"),
    t("ns/a", 8, "liveness"),
  ], "ns/a");
  assert.deepEqual(got.map((x) => x.port), [8, 9]);
});

Deno.test("podTable() shows each probe's target, mark, hits, last hit and the probe sent now", () => {
  const targets = [
    t("ns/a", 8080, "liveness", {
      hits: 7,
      lastHitAgeSeconds: 4.2,
      periodSeconds: 5,
      httpPath: "/healthz",
      handler: "httpGet",
    }),
    t("ns/a", 9000, "readiness", { hits: 0, lastHitAgeSeconds: null }),
  ];
  const rows = podRows(targets, [
    {
      pod: "ns/a",
      networkId: 1,
      address: "10.0.0.1",
      port: 8080,
      result: "reached",
      httpStatus: 200,
      mark: 0x11000,
    },
    {
      pod: "ns/a",
      networkId: 1,
      address: "10.0.0.1",
      port: 9000,
      result: "NO_ROUTE",
      httpStatus: null,
      mark: 0,
    },
  ]);
  assert.equal(rows[0].target, "10.0.0.1:8080/healthz");
  assert.equal(rows[1].probeMark, 0);
  assert.deepEqual(podTable(rows).split("\n").map((l) => l.split(/\s{2,}/)), [
    [
      "CONTAINER",
      "PROBE/HOOK",
      "HANDLER",
      "TARGET",
      "NETWORK",
      "MARK",
      "PERIOD",
      "HITS",
      "LAST HIT",
      "NOW",
    ],
    [
      "app",
      "liveness",
      "httpGet",
      "10.0.0.1:8080/healthz",
      "blue",
      "0x11000",
      "5s",
      "7",
      "4s ago",
      "reached 200",
    ],
    [
      "app",
      "readiness",
      "tcpSocket",
      "10.0.0.1:9000",
      "blue",
      "0x11000",
      "10s",
      "0",
      "never",
      "NO_ROUTE (mark 0x0)",
    ],
  ]);
});

Deno.test("podTargets() orders a container's probes before its hooks, as its spec reads", () => {
  const got = podTargets([
    t("ns/a", 5, "preStop"),
    t("ns/a", 4, "postStart"),
    t("ns/a", 3, "startup"),
    t("ns/a", 2, "readiness"),
    t("ns/a", 1, "liveness"),
    t("ns/a", 6, "liveness", { container: "b" }),
  ], "ns/a");
  assert.deepEqual(got.map((x) => `${x.container}/${x.probe}`), [
    "app/liveness",
    "app/readiness",
    "app/startup",
    "app/postStart",
    "app/preStop",
    "b/liveness",
  ]);
});

Deno.test("podTable() names a hook's target by its hook, with no period and the connect sent now", () => {
  const hook = t("ns/a", 9090, "preStop", {
    handler: "httpGet",
    httpPath: "/drain",
    hits: 0,
    lastHitAgeSeconds: null,
  });
  const rows = podRows([hook], [{
    pod: "ns/a",
    networkId: 1,
    address: "10.0.0.1",
    port: 9090,
    result: "reached",
    httpStatus: null,
    mark: 0x11000,
  }]);
  assert.equal(rows[0].probe, "preStop");
  assert.equal(rows[0].periodSeconds, null);
  assert.deepEqual(podTable(rows).split("\n")[1].split(/\s{2,}/), [
    "app",
    "preStop",
    "httpGet",
    "10.0.0.1:9090/drain",
    "blue",
    "0x11000",
    "-",
    "0",
    "never",
    "reached",
  ]);
});
