import assert from "node:assert/strict";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import type { AgentAnswer, AgentPodView, StatusReport } from "./agents_status.ts";
import {
  type AgentsSource,
  authority,
  checkAgents,
  checkUntil,
  fetchAgent,
  labelSelector,
} from "./status_command.ts";

const READY: AgentAnswer = {
  readyz: { status: 200, body: "ok\n" },
  metrics: 'lace_attached{program="connect4"} 1\n',
};

function source(pods: AgentPodView[], desired = pods.length): AgentsSource & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    daemonSet: () =>
      Promise.resolve({ namespace: "ns", name: "lace", desired, selector: "a=b", uid: "u1" }),
    pods: (selector, uid) => {
      asked.push(`${selector} ${uid}`);
      return Promise.resolve(pods);
    },
  };
}

const pod = (node: string, hostIP?: string): AgentPodView => ({
  name: `lace-${node}`,
  node,
  hostIP,
  ready: true,
  terminating: false,
});

Deno.test("checkAgents() lists the DaemonSet's own pods and asks each agent on its node's IP and port", async () => {
  const s = source([pod("a", "10.0.0.1"), pod("b", "fd00::2"), pod("c")], 3);
  const asked: string[] = [];
  const report = await checkAgents(s, (ip, port) => {
    asked.push(authority(ip, port));
    return Promise.resolve(READY);
  }, 9808);
  assert.deepEqual(s.asked, ["a=b u1"]);
  assert.deepEqual(asked.sort(), ["10.0.0.1:9808", "[fd00::2]:9808"]);
  // The pod without a node IP yet was judged from the API alone.
  assert.deepEqual(report.agents.map((a) => a.problems), [[], [], []]);
  assert.equal(report.ok, true);
});

Deno.test("checkAgents() with port 0 asks no agent", async () => {
  let asked = 0;
  const report = await checkAgents(source([pod("a", "10.0.0.1")]), () => {
    asked++;
    return Promise.resolve(READY);
  }, 0);
  assert.equal(asked, 0);
  assert.equal(report.ok, true);
});

Deno.test("checkUntil() checks again every 2 s until the report passes, on the clock it is given", async () => {
  const { clock, timers } = fakeTime();
  const results = [false, false, true];
  const checkedAt: number[] = [];
  const done = checkUntil(
    () => {
      checkedAt.push(clock.now);
      return Promise.resolve({ ok: results.shift()! } as StatusReport);
    },
    60_000,
    timers,
  );
  for (let i = 0; i < 3; i++) await clock.tickAsync(2000);
  assert.equal((await done).ok, true);
  assert.deepEqual(checkedAt, [0, 2000, 4000]);
});

Deno.test("checkUntil() returns the last failing report once the wait is over, and checks once without one", async () => {
  const { clock, timers } = fakeTime();
  let checks = 0;
  const done = checkUntil(
    () => {
      checks++;
      return Promise.resolve({ ok: false } as StatusReport);
    },
    5000,
    timers,
  );
  await clock.tickAsync(10_000);
  assert.equal((await done).ok, false);
  assert.equal(checks, 4, "at 0, 2, 4 and 5 s");
  let once = 0;
  await checkUntil(() => (once++, Promise.resolve({ ok: false } as StatusReport)), 0, timers);
  assert.equal(once, 1);
});

Deno.test("labelSelector() writes matchLabels as a selector", () => {
  assert.equal(
    labelSelector({ "app.kubernetes.io/name": "lace", "app.kubernetes.io/instance": "x" }),
    "app.kubernetes.io/name=lace,app.kubernetes.io/instance=x",
  );
  assert.equal(labelSelector(undefined), "");
});

Deno.test("fetchAgent() reads /readyz and /metrics of a listener, and says why one does not answer", async () => {
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/readyz") return new Response("not ready: x\n", { status: 503 });
    if (path === "/metrics") return new Response('lace_attached{program="connect4"} 0\n');
    return new Response("no", { status: 404 });
  });
  const answer = await fetchAgent("127.0.0.1", server.addr.port);
  assert.deepEqual(answer, {
    readyz: { status: 503, body: "not ready: x\n" },
    metrics: 'lace_attached{program="connect4"} 0\n',
  });
  const port = server.addr.port;
  await server.shutdown();
  const gone = await fetchAgent("127.0.0.1", port);
  assert.ok("error" in gone);
  assert.match(
    gone.error,
    /its listener http:\/\/127\.0\.0\.1:\d+ did not answer .*pods must reach/,
  );
});
