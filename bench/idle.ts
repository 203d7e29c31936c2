/**
 * The baselines of the footprint figure: a near-empty script that says it is
 * ready and then waits forever; optionally after importing the Kubernetes
 * client (the client's own cost), only the client's KubeConfig module (the
 * least an agent that talks to the API with it can load: it imports the
 * client's whole generated API), only its Watch module (undici, none of the
 * generated API: the least any use of the client loads), the client as the agent loads it
 * (lib/kube/k8s.ts: its bundle of the parts Lace uses, when built), or with a timer that fires
 * once a second and does nothing (the most an idle agent may wake up).
 *
 *   deno run -A bench/idle.ts [client-node | kubeconfig-module | watch-module | lace-client | tick]
 */
if (Deno.args[0] === "client-node") await import("@kubernetes/client-node");
if (Deno.args[0] === "kubeconfig-module") await import("@kubernetes/client-node/dist/config.js");
if (Deno.args[0] === "watch-module") await import("@kubernetes/client-node/dist/watch.js");
if (Deno.args[0] === "lace-client") {
  const { clientNodeOrigin } = await import("../lib/kube/k8s.ts");
  if (clientNodeOrigin !== "bundle") throw new Error("no client bundle: run deno task bundle");
}
if (Deno.args[0] === "tick") setInterval(() => {}, 1000);
console.log("ready");
setTimeout(() => {}, 2 ** 31 - 1);
