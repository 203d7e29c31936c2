/**
 * The baselines of the footprint figure: a near-empty script that says it is
 * ready and then waits forever, optionally after importing the Kubernetes
 * client, so the runtime's and the client's own costs are visible.
 *
 *   deno run -A bench/idle.ts [client-node]
 */
if (Deno.args[0] === "client-node") await import("@kubernetes/client-node");
console.log("ready");
setTimeout(() => {}, 2 ** 31 - 1);
