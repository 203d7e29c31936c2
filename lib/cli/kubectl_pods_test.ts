import assert from "node:assert/strict";
import { type AgentPod, chooseAgentPod } from "./kubectl_pods.ts";

const agent = (over: Partial<AgentPod>): AgentPod => ({
  namespace: "lace-system",
  name: "lace-abcde",
  node: "n1",
  phase: "Running",
  ready: true,
  deleting: false,
  agentRunning: true,
  created: 1000,
  ...over,
});

Deno.test("chooseAgentPod takes the node's running agent", () => {
  const pods = [agent({ name: "other", node: "n2" }), agent({ name: "mine" })];
  assert.equal(chooseAgentPod(pods, "n1", "here").name, "mine");
});

Deno.test("during a rollout the new Ready pod is chosen over the one being deleted", () => {
  const pods = [
    agent({ name: "old", deleting: true, created: 1 }),
    agent({ name: "starting", ready: false, created: 3 }),
    agent({ name: "new", created: 2 }),
  ];
  assert.equal(chooseAgentPod(pods, "n1", "here").name, "new");
  // With no Ready one, the newest running one.
  assert.equal(chooseAgentPod(pods.slice(0, 2), "n1", "here").name, "starting");
});

Deno.test("no agent on the node is an error saying where it looked and what to check", () => {
  assert.throws(
    () => chooseAgentPod([agent({ node: "n2" })], "n1", "in namespace lace-system"),
    (e: Error) => {
      assert.match(e.message, /^no Lace agent pod on node "n1" in namespace lace-system: /);
      assert.match(e.message, /kubectl get daemonset -A/);
      assert.match(e.message, /--namespace and --selector/);
      return true;
    },
  );
});

Deno.test("an agent pod that is not running is named, with how to see why", () => {
  const pods = [agent({ phase: "Pending", agentRunning: false, ready: false })];
  assert.throws(
    () => chooseAgentPod(pods, "n1", "here"),
    /agent pod on node "n1" is not running \(lace-abcde Pending\): .*kubectl describe pod -n lace-system lace-abcde/,
  );
  const crashing = [agent({ agentRunning: false, ready: false })];
  assert.throws(() => chooseAgentPod(crashing, "n1", "here"), /is not running/);
});

Deno.test("agents of two installs on one node are refused: the operator picks with --namespace", () => {
  const pods = [agent({}), agent({ namespace: "lace-canary", name: "lace-xyz" })];
  assert.throws(
    () => chooseAgentPod(pods, "n1", "anywhere"),
    /2 installs run on node "n1" \(namespaces lace-canary, lace-system\): give --namespace/,
  );
});
