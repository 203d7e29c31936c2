import assert from "node:assert/strict";
import {
  type AgentAnswer,
  type AgentPodView,
  attachedSeries,
  judgeAgent,
  statusJson,
  statusReport,
  statusText,
} from "./agents_status.ts";

const DS = { namespace: "lace-system", name: "lace", desired: 2 };

function pod(node: string, extra: Partial<AgentPodView> = {}): AgentPodView {
  return {
    name: `lace-${node}`,
    node,
    hostIP: `10.0.0.${node.length}`,
    phase: "Running",
    ready: true,
    terminating: false,
    ...extra,
  };
}

const METRICS = [
  "# HELP lace_attached 1 when the program is attached",
  "# TYPE lace_attached gauge",
  'lace_attached{program="connect4"} 1',
  'lace_attached{program="connect6"} 1',
  "lace_standing_by 0",
].join("\n");

const healthy: AgentAnswer = { readyz: { status: 200, body: "ok\n" }, metrics: METRICS };

Deno.test("attachedSeries() reads every lace_attached series by program, and nothing else", () => {
  assert.deepEqual(attachedSeries(METRICS), { connect4: 1, connect6: 1 });
  assert.deepEqual(
    attachedSeries('lace_attached{program="connect4"} 0\nlace_attached_total 5\n'),
    { connect4: 0 },
  );
  assert.deepEqual(attachedSeries("lace_standing_by 1\n"), {});
});

Deno.test("every node's agent ready and attached is a report that passes", () => {
  const report = statusReport(DS, [
    { pod: pod("node-b"), answer: healthy },
    { pod: pod("node-a"), answer: healthy },
  ]);
  assert.equal(report.ok, true);
  assert.deepEqual(report.agents.map((a) => a.node), ["node-a", "node-b"]);
  assert.deepEqual(report.agents[0].attached, { connect4: 1, connect6: 1 });
  assert.match(statusText(report), /Every node's agent is attached and ready: 2 of 2/);
});

Deno.test("an agent whose pod is Ready but whose program is not attached fails, naming the series", () => {
  const detached: AgentAnswer = {
    readyz: { status: 200, body: "ok\n" },
    metrics: 'lace_attached{program="connect4"} 1\nlace_attached{program="connect6"} 0\n',
  };
  const report = statusReport(DS, [
    { pod: pod("node-a"), answer: healthy },
    { pod: pod("node-b"), answer: detached },
  ]);
  assert.equal(report.ok, false);
  assert.deepEqual(report.agents[1].problems, [
    'not attached: lace_attached{program="connect6"} 0',
  ]);
  const none = judgeAgent(pod("node-a"), { readyz: { status: 200, body: "ok" }, metrics: "" });
  assert.deepEqual(none.problems, ["not attached: its /metrics has no lace_attached series"]);
});

Deno.test("an agent that is not ready fails with the reasons its /readyz gives and the pod's state", () => {
  const answer: AgentAnswer = {
    readyz: {
      status: 503,
      body:
        "not ready: probe programs are not attached\nnot ready: waiting for the first full pod list from every source\n",
    },
    metrics: 'lace_attached{program="connect4"} 0\n',
  };
  const verdict = judgeAgent(pod("node-a", { ready: false }), answer);
  assert.deepEqual(verdict.problems, [
    "the pod is not Ready (pod Running)",
    "not ready: probe programs are not attached",
    "not ready: waiting for the first full pod list from every source",
    'not attached: lace_attached{program="connect4"} 0',
  ]);
  const crashing = judgeAgent(
    pod("node-a", { ready: false, phase: "Pending", waiting: "CrashLoopBackOff (back-off 10s)" }),
    undefined,
  );
  assert.deepEqual(crashing.problems, ["the pod is not Ready: CrashLoopBackOff (back-off 10s)"]);
});

Deno.test("an agent whose listener does not answer fails with the error, even when its pod is Ready", () => {
  const verdict = judgeAgent(pod("node-a"), { error: "its listener did not answer" });
  assert.deepEqual(verdict.problems, ["its listener did not answer"]);
});

Deno.test("asked through the API only, a Ready pod passes and a pod not Ready fails", () => {
  assert.deepEqual(judgeAgent(pod("node-a"), undefined).problems, []);
  assert.deepEqual(judgeAgent(pod("node-a", { ready: false }), undefined).problems, [
    "the pod is not Ready (pod Running)",
  ]);
});

Deno.test("a node without an agent pod, or a DaemonSet that schedules none, fails the report", () => {
  const missing = statusReport(DS, [{ pod: pod("node-a"), answer: healthy }]);
  assert.equal(missing.ok, false);
  assert.deepEqual(missing.problems, [
    "1 of 2 nodes run no agent pod of DaemonSet lace-system/lace " +
    "(kubectl -n lace-system describe daemonset lace)",
  ]);
  const none = statusReport({ ...DS, desired: 0 }, []);
  assert.equal(none.ok, false);
  assert.match(none.problems[0], /schedules no agent on any node: check its nodeSelector/);
  // Two pods on one node (a rollout's overlap) do not count as two nodes.
  const overlap = statusReport(DS, [
    { pod: pod("node-a"), answer: healthy },
    { pod: pod("node-a", { name: "lace-new" }), answer: healthy },
  ]);
  assert.match(overlap.problems[0], /^1 of 2 nodes run no agent pod/);
});

Deno.test("an unscheduled or terminating pod is a problem of its own", () => {
  const pending = judgeAgent(
    pod("", { node: undefined, ready: false, phase: "Pending" }),
    undefined,
  );
  assert.deepEqual(pending.problems, [
    "not scheduled on a node yet",
    "the pod is not Ready (pod Pending)",
  ]);
  assert.equal(pending.node, "-");
  const leaving = judgeAgent(pod("node-a", { terminating: true }), healthy);
  assert.deepEqual(leaving.problems, ["terminating"]);
});

Deno.test("the text report names each failing node and says the verdict last; the JSON is the report", () => {
  const report = statusReport(DS, [
    { pod: pod("node-a"), answer: healthy },
    { pod: pod("node-b", { ready: false }), answer: { error: "no answer" } },
  ]);
  const lines = statusText(report).split("\n");
  assert.match(lines[0], /^NODE\s+POD\s+READY\s+ATTACHED\s+PROBLEMS$/);
  assert.match(lines[1], /^node-a\s+lace-node-a\s+yes\s+connect4,connect6\s+-$/);
  assert.match(
    lines[2],
    /^node-b\s+lace-node-b\s+no\s+-\s+the pod is not Ready \(pod Running\); no answer$/,
  );
  assert.equal(
    lines.at(-1),
    "Not every node's agent is attached and ready: 1 of 2 agent pods failing; " +
      "DaemonSet lace-system/lace wants 2",
  );
  assert.deepEqual(JSON.parse(statusJson(report)), report);
});
