import assert from "node:assert/strict";
import { UsageError } from "../flags/parser.ts";
import { AGENT_SELECTOR, parseKubectlArgs, parsePodRef } from "./kubectl_args.ts";

const parse = (...args: string[]) => parseKubectlArgs(args)!;

Deno.test("kubectl lace targets --node runs lace targets on that node's agent", () => {
  const request = parse("targets", "--node", "n1");
  assert.deepEqual(request.remote, ["targets"]);
  assert.equal(request.options.node, "n1");
  assert.equal(request.options.namespace, "");
  assert.equal(request.options.selector, AGENT_SELECTOR);
  assert.equal(request.pod, undefined);
});

Deno.test("--output json and --json both reach the agent as --json, which every agent knows", () => {
  assert.deepEqual(parse("targets", "--node", "n1", "--output", "json").remote, [
    "targets",
    "--json",
  ]);
  assert.deepEqual(parse("doctor", "--node", "n1", "--json").remote, ["doctor", "--json"]);
  assert.deepEqual(parse("doctor", "--node", "n1", "-o", "json").remote, ["doctor", "--json"]);
  assert.deepEqual(parse("doctor", "probes", "--node", "n1").remote, ["doctor", "probes"]);
});

Deno.test("-n and -l are kubectl's namespace and selector", () => {
  const request = parse("targets", "--node", "n1", "-n", "ops", "-l", "app=x");
  assert.equal(request.options.namespace, "ops");
  assert.equal(request.options.selector, "app=x");
});

Deno.test("doctor pod NS/NAME needs no --node: the pod's node is asked", () => {
  const request = parse("doctor", "pod", "team-a/web-0", "--output=json");
  assert.deepEqual(request.remote, ["doctor", "pod", "team-a/web-0", "--json"]);
  assert.deepEqual(request.pod, { namespace: "team-a", name: "web-0" });
  assert.equal(request.options.node, "");
});

Deno.test("targets and doctor without --node are refused, saying to give it", () => {
  assert.throws(() => parse("targets"), (e) => {
    assert.ok(e instanceof UsageError);
    assert.match(e.message, /give --node NODE/);
    return true;
  });
  assert.throws(() => parse("doctor"), /doctor runs on one node's agent: give --node/);
});

Deno.test("only doctor, its probes and pod, and targets are passed on to the agent", () => {
  assert.throws(() => parse("uninstall", "--node", "n1"), /unknown command "uninstall"/);
  assert.throws(() => parse("agent", "--node", "n1"), /unknown command "agent"/);
  assert.throws(() => parse(), /say what to run/);
  assert.throws(() => parse("doctor", "fix", "--node", "n1"), /doctor takes probes or pod/);
  assert.throws(() => parse("targets", "extra", "--node", "n1"), /unexpected argument "extra"/);
  assert.throws(
    () => parse("doctor", "pod", "a/b", "c", "--node", "n1"),
    /unexpected argument "c"/,
  );
  assert.throws(() => parse("targets", "--node", "n1", "--output", "yaml"), /one of text, json/);
});

Deno.test("a pod is NAMESPACE/NAME with the API's name rules, anything else is refused", () => {
  assert.deepEqual(parsePodRef("kube-system/coredns-5d7.x"), {
    namespace: "kube-system",
    name: "coredns-5d7.x",
  });
  for (const bad of ["web-0", "a/b/c", "/b", "a/", "A/b", "a/-b", "a b/c", `${"a".repeat(64)}/b`]) {
    assert.throws(() => parsePodRef(bad), /is not a pod: give it as NAMESPACE\/NAME/, bad);
  }
  assert.throws(() => parsePodRef(undefined), /doctor pod needs the pod/);
});
