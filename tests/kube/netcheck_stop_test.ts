/**
 * `lace netcheck --watch` as a process against the real kube-apiserver, stopped by a signal: a
 * service manager's SIGTERM (Kubernetes stopping the chart's Deployment) is its normal end, so
 * once the probe DaemonSet and the Lease are removed it exits 0; Ctrl-C (SIGINT) exits 130. No
 * kubelet runs here, so the watch is stopped while it waits for its probe pods. Its log (at
 * --log-level=info) names the DaemonSet it made and the one it deleted.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { AppsV1Api, CoordinationV1Api } from "@kubernetes/client-node";
import { LEASE_NAME } from "../../lib/netcheck/cluster/lease.ts";
import { defaultNetcheckOptions } from "../../lib/netcheck/options.ts";
import { startControlPlane } from "./fixture.ts";
import { controlPlaneTestOptions, controlPlaneUnavailableReason } from "./tools.ts";
import { waitFor } from "../helpers/wait.ts";

const unavailable = await controlPlaneUnavailableReason();
const MAIN = fileURLToPath(new URL("../../main.ts", import.meta.url));
const NS = defaultNetcheckOptions().namespace;

Deno.test({
  name:
    "a --watch stopped by SIGTERM removes its DaemonSet and Lease and exits 0; Ctrl-C exits 130",
  ...controlPlaneTestOptions(unavailable),
}, async () => {
  await using cp = await startControlPlane();
  const apps = cp.adminConfig().makeApiClient(AppsV1Api);
  const leases = cp.adminConfig().makeApiClient(CoordinationV1Api);
  const daemonSets = async () => (await apps.listNamespacedDaemonSet({ namespace: NS })).items;
  const leaseHeld = () =>
    leases.readNamespacedLease({ namespace: NS, name: LEASE_NAME }).then(() => true, () => false);
  for (const [signal, code] of [["SIGTERM", 0], ["SIGINT", 130]] as const) {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        MAIN,
        "netcheck",
        "--watch",
        "--interval=1m",
        `--kubeconfig=${cp.kubeconfigPath}`,
        "--metrics-address=",
        "--log-level=info",
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    try {
      await waitFor(async () => (await daemonSets()).length === 1 && await leaseHeld(), {
        timeout: 60_000,
        interval: 100,
        message: "the watch's probe DaemonSet and Lease",
      });
      child.kill(signal);
      const out = await child.output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, code, `${signal}: ${stderr}`);
      assert.deepEqual((await daemonSets()).map((d) => d.metadata?.name), [], "DaemonSet left");
      assert.equal(await leaseHeld(), false, "Lease left");
      // The run's log reaches stderr (a runner pod's log): what it made and what it removed.
      assert.match(
        stderr,
        /Created DaemonSet [^\n]*lace-system[^\n]*lace-netcheck-/,
        `${signal}: ${stderr}`,
      );
      assert.match(
        stderr,
        /Deleted DaemonSet [^\n]*lace-system[^\n]*lace-netcheck-/,
        `${signal}: ${stderr}`,
      );
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await child.status;
    }
  }
});
