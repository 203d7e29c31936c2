/**
 * The baselines of the footprint figure: a near-empty script that says it is
 * ready and then waits forever; optionally after importing the Kubernetes
 * client (the client's own cost), or with a timer that fires once a second
 * and does nothing (the most an idle agent may wake up).
 *
 *   deno run -A bench/idle.ts [client-node | tick]
 */
if (Deno.args[0] === "client-node") await import("@kubernetes/client-node");
if (Deno.args[0] === "tick") setInterval(() => {}, 1000);
console.log("ready");
setTimeout(() => {}, 2 ** 31 - 1);
