/**
 * `lace kubectl` (kubectl's plugin) against the test API server: the agent pod found by the
 * chart's labels and spec.nodeName, the exec over client-node's websocket with its output and
 * exit code, and the errors an operator meets (no agent there, RBAC refusing the exec or the
 * list). The real kubectl and the real node: tests/node/real_node_test.ts.
 */
import assert from "node:assert/strict";
import { runInAgent } from "../lib/cli/kubectl_agent.ts";
import { parseKubectlArgs } from "../lib/cli/kubectl_args.ts";
import { errorChain } from "../lib/text/error_chain.ts";
import { type ExecRequest, installExec } from "./api_server/exec.ts";
import { type KubeObject, TestApiServer } from "./api_server/mod.ts";

function agentPod(name: string, namespace: string, node: string, extra = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace,
      labels: { "app.kubernetes.io/name": "lace", "app.kubernetes.io/component": "node-agent" },
      creationTimestamp: "2026-01-01T00:00:00Z",
    },
    spec: { nodeName: node, containers: [{ name: "agent", image: "lace" }] },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True" }],
      containerStatuses: [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }],
    },
    ...extra,
  };
}

class Sink {
  chunks: string[] = [];
  write(p: Uint8Array): Promise<number> {
    this.chunks.push(new TextDecoder().decode(p));
    return Promise.resolve(p.length);
  }
  get text(): string {
    return this.chunks.join("");
  }
}

async function setup() {
  const server = await TestApiServer.start();
  const execs: ExecRequest[] = [];
  installExec(server, (request) => {
    execs.push(request);
    return { stdout: "[]\n", stderr: "a warning\n", exitCode: request.command.length % 7 };
  });
  const kubeconfig = await server.writeKubeconfig();
  const output = { stdout: new Sink(), stderr: new Sink() };
  const run = (...args: string[]) =>
    runInAgent(parseKubectlArgs([...args, "--kubeconfig", kubeconfig])!, output);
  return { server, execs, output, run, [Symbol.asyncDispose]: () => server.close() };
}

Deno.test("targets --node execs lace targets in that node's agent container, with its output and exit code", async () => {
  await using t = await setup();
  t.server.put(agentPod("lace-n1", "lace-system", "n1"));
  t.server.put(agentPod("lace-n2", "lace-system", "n2"));
  // Two words: the runner above exits with the command's length, 3.
  const code = await t.run("targets", "--node", "n2", "--output", "json");
  assert.equal(code, 3);
  assert.deepEqual(t.execs.map((e) => [e.namespace, e.pod, e.container, e.command]), [
    ["lace-system", "lace-n2", "agent", ["/usr/local/bin/lace", "targets", "--json"]],
  ]);
  assert.equal(t.output.stdout.text, "[]\n");
  assert.equal(t.output.stderr.text, "a warning\n");
  const list = t.server.requests.find((r) => r.method === "GET" && r.path.endsWith("/pods"));
  assert.equal(list?.path, "/api/v1/namespaces/lace-system/pods");
  assert.equal(list?.query.get("fieldSelector"), "spec.nodeName=n2");
  assert.equal(
    list?.query.get("labelSelector"),
    "app.kubernetes.io/name=lace,app.kubernetes.io/component=node-agent",
  );
});

Deno.test("doctor pod NS/NAME runs on the agent of the node that pod is on", async () => {
  await using t = await setup();
  t.server.put(agentPod("lace-n1", "lace-system", "n1"));
  t.server.put(agentPod("lace-n2", "lace-system", "n2"));
  t.server.put(
    agentPod("web-0", "team-a", "n1", { metadata: { name: "web-0", namespace: "team-a" } }),
  );
  await t.run("doctor", "pod", "team-a/web-0");
  assert.deepEqual(t.execs.map((e) => [e.pod, e.command.slice(1)]), [
    ["lace-n1", ["doctor", "pod", "team-a/web-0"]],
  ]);
});

Deno.test("an install in another namespace is found by its labels in every namespace", async () => {
  await using t = await setup();
  t.server.put(agentPod("lace-x", "ops", "n1"));
  await t.run("doctor", "--node", "n1");
  assert.deepEqual(t.execs.map((e) => `${e.namespace}/${e.pod}`), ["ops/lace-x"]);
});

Deno.test("no agent pod on the node is an error naming the node and what to check", async () => {
  await using t = await setup();
  t.server.put(agentPod("lace-n1", "lace-system", "n1"));
  await assert.rejects(
    t.run("targets", "--node", "n9"),
    /no Lace agent pod on node "n9" in any namespace .*kubectl get daemonset -A/,
  );
  assert.deepEqual(t.execs, []);
});

Deno.test("a pod that does not exist is named, with how to find it", async () => {
  await using t = await setup();
  await assert.rejects(
    t.run("doctor", "pod", "team-a/nope"),
    /pod team-a\/nope does not exist: check its name \(kubectl get pods -n team-a\)/,
  );
});

Deno.test("RBAC refusing the exec says the verb: create pods/exec", async () => {
  await using t = await setup();
  t.server.put(agentPod("lace-n1", "lace-system", "n1"));
  t.server.failNext(1, 403, (r) => r.path.endsWith("/exec"));
  await assert.rejects(t.run("targets", "--node", "n1"), (e: Error) => {
    assert.match(e.message, /exec into lace-system\/lace-n1 was refused \(403\)/);
    assert.match(e.message, /RBAC must let you create pods\/exec there/);
    // client-node rejects with a ws ErrorEvent, not an Error: printed as a cause it said nothing.
    assert.doesNotMatch(errorChain(e), /object Object/);
    return true;
  });
});

Deno.test("RBAC refusing the list says the verb: list pods", async () => {
  await using t = await setup();
  t.server.failNext(1, 403, (r) => r.path.endsWith("/pods"));
  await assert.rejects(
    t.run("targets", "--node", "n1", "--namespace", "lace-system"),
    /listing pods in lace-system was refused \(403\): RBAC must let you list pods -n lace-system/,
  );
});

Deno.test("searching every namespace when RBAC allows only the agents' says to give --namespace", async () => {
  await using t = await setup();
  t.server.failNext(1, 403, (r) => r.path === "/api/v1/pods");
  await assert.rejects(
    t.run("targets", "--node", "n1"),
    /no agent pod in lace-system, and listing pods in every namespace was refused \(403\): RBAC must let you list pods -A \(kubectl auth can-i list pods -A\), or give --namespace/,
  );
});
