/**
 * The chart's continuous netcheck (`netcheck.enabled`: `lace netcheck --watch` as a Deployment) on
 * two real nodes, as an operator turns it on: `helm upgrade` of the agent's release, the runner a
 * pod of the lace image in the release's namespace, in-cluster through its own ServiceAccount,
 * its probe DaemonSets in the chart's netcheck namespace on both nodes, its metrics read through
 * `kubectl port-forward` (the API server, then the kubelet, into the runner pod's own loopback;
 * the forward listens on the test's loopback only). Steps for a test that brought the two nodes
 * up with the agent on both (two_node_netcheck_test.ts); the runner's objects and the waits on
 * them are in netcheck_runner.ts, the metrics scrape in runner_metrics.ts.
 */
import assert from "node:assert/strict";
import { explainFailure, waitFor } from "../helpers/wait.ts";
import type { Node } from "./node.ts";
import {
  clients,
  describeRunner,
  LABEL,
  leaseHolder,
  netcheckLeftovers,
  readyProbePods,
  RELEASE_NAMESPACE,
  runnerPods,
  runnerProcesses,
  scale,
  setNetcheck,
  WATCH_NAMESPACE,
  WATCH_NETWORKS,
} from "./netcheck_runner.ts";
import { scrape } from "./runner_metrics.ts";
import type { SecondNode } from "./second_node.ts";

export { DEPLOYMENT_NAMESPACES } from "./netcheck_runner.ts";

/** The steps: enable, rounds and metrics, a second runner on standby, disable. */
export async function netcheckDeploymentSteps(
  t: Deno.TestContext,
  first: Node,
  second: SecondNode,
): Promise<void> {
  const api = clients(first);
  const nodes = [first.name, second.name].sort();
  // What a failed wait adds to its message: the runner's pods, events and log; what is left.
  const explain = () => describeRunner(first, api);
  const leftovers = async () => `left: ${(await netcheckLeftovers(api)).join(", ")}`;
  let runner = "";

  await t.step(
    "netcheck.enabled=true: the runner holds the Lease, places probe pods of both networks on both nodes and completes rounds whose metrics show every path passing",
    async () => {
      const began = performance.now();
      await api.core.createNamespace({ body: { metadata: { name: WATCH_NAMESPACE } } }).catch(
        (e) => {
          if (e.code !== 409) throw e;
        },
      );
      await setNetcheck(first, true);
      const pod = await explainFailure(
        waitFor(async () => (await runnerPods(api.core))[0], {
          timeout: 90_000,
          interval: 500,
          message: "the netcheck runner pod Running",
        }),
        explain,
      );
      runner = pod.metadata!.name!;
      // The holder names the run and the pod's hostname (its name).
      const holder = await explainFailure(
        waitFor(() => leaseHolder(api.coordination), {
          timeout: 60_000,
          interval: 500,
          message: "the runner to take the Lease",
        }),
        explain,
      );
      assert.match(holder, new RegExp(`^[0-9a-f]{8} by \\S+@${runner}$`));
      const probes = await explainFailure(readyProbePods(api.core), explain);
      const placed = probes.map((p) => `${p.metadata!.labels![LABEL]} on ${p.spec!.nodeName}`);
      assert.deepEqual(
        placed.sort(),
        nodes.flatMap((n) => [`green on ${n}`, `red on ${n}`]).sort(),
      );
      const metrics = await explainFailure(
        waitFor(async () => {
          const samples = await scrape(first, runner);
          return (samples.get('lace_netcheck_rounds_total{result="passed"}') ?? 0) >= 1 &&
            samples;
        }, { timeout: 90_000, interval: 1000, message: "a passed round in the runner's metrics" }),
        explain,
      );
      console.log(
        `netcheck Deployment: first passed round ${Math.round(performance.now() - began)} ms ` +
          `after helm upgrade, round duration ${
            metrics.get("lace_netcheck_round_duration_seconds_sum")
          } s`,
      );
      const get = (sample: string) => metrics.get(sample);
      assert.equal(get('lace_netcheck_rounds_total{result="failed"}'), 0, await explain());
      assert.equal(get("lace_netcheck_nodes"), 2);
      for (const node of nodes) {
        for (const direction of ["from", "to"]) {
          assert.equal(
            get(`lace_netcheck_node_failed_paths{node="${node}",direction="${direction}"}`),
            0,
            `${node} ${direction}`,
          );
        }
      }
      for (const network of WATCH_NETWORKS) {
        for (const phase of ["connect", "latency", "bandwidth"]) {
          const passed = get(
            `lace_netcheck_paths_total{phase="${phase}",network="${network}",result="ok"}`,
          ) ?? 0;
          assert.ok(passed >= 2, `${phase} paths passed in ${network}: ${passed}`);
        }
        assert.ok(
          (get(`lace_netcheck_latency_seconds_count{network="${network}",kind="connect"}`) ??
            0) >= 2,
        );
        assert.ok(
          (get(`lace_netcheck_bandwidth_bytes_per_second_count{network="${network}"}`) ?? 0) >= 2,
        );
      }
      // Isolation between the two networks, each round: 8 paths, none answered across.
      assert.ok(
        (get('lace_netcheck_paths_total{phase="isolation",network="default",result="ok"}') ??
          0) >= 8,
      );
      const [red, green] = WATCH_NETWORKS;
      assert.equal(
        get(`lace_netcheck_isolation_leaks{from_network="${red}",to_network="${green}"}`),
        0,
      );
      assert.equal(get("lace_netcheck_failing_paths_not_shown"), 0);
      assert.ok(![...metrics.keys()].some((k) => k.startsWith("lace_netcheck_failing_path{")));
    },
  );
  if (!runner) return;

  await t.step(
    "a second runner (2 replicas) does not run rounds while the first holds the Lease",
    async () => {
      const holder = await leaseHolder(api.coordination);
      await scale(first, 2);
      try {
        const other = await explainFailure(
          waitFor(
            async () => (await runnerPods(api.core)).find((p) => p.metadata!.name !== runner),
            { timeout: 60_000, interval: 500, message: "a second runner pod Running" },
          ),
          explain,
        );
        const name = other.metadata!.name!;
        // It is up and says why it waits; meanwhile it made nothing and ran no round.
        const log = await explainFailure(
          waitFor(async () => {
            const text = await api.core.readNamespacedPodLog({
              name,
              namespace: RELEASE_NAMESPACE,
            });
            return /^Standing by: Another netcheck run ".*" holds Lease/m.test(text) && text;
          }, { timeout: 60_000, interval: 500, message: `${name} to report the held Lease` }),
          explain,
        );
        assert.doesNotMatch(log, /--- round|Connectivity/, log);
        // On standby, not crash-looping.
        const standby = await api.core.readNamespacedPod({ name, namespace: RELEASE_NAMESPACE });
        assert.equal(standby.status?.containerStatuses?.[0]?.restartCount, 0);
        const samples = await scrape(first, name);
        assert.equal(samples.get('lace_netcheck_rounds_total{result="passed"}') ?? 0, 0);
        assert.equal(samples.get('lace_netcheck_rounds_total{result="failed"}') ?? 0, 0);
        assert.equal(await leaseHolder(api.coordination), holder);
        const dss = await api.apps.listNamespacedDaemonSet({ namespace: WATCH_NAMESPACE });
        assert.equal(dss.items.length, 2, "one probe DaemonSet per network, of one run");
        const first_ = await scrape(first, runner);
        assert.ok((first_.get('lace_netcheck_rounds_total{result="passed"}') ?? 0) >= 1);
      } finally {
        await scale(first, 1);
      }
      await waitFor(async () => (await runnerPods(api.core)).length === 1, {
        timeout: 60_000,
        interval: 500,
        message: "one runner pod again",
      });
      assert.equal(await leaseHolder(api.coordination), holder);
    },
  );

  await t.step(
    "a runner killed without clean-up is restarted: it stands by until the dead run's Lease expires, then deletes that run's DaemonSets and tests again",
    async () => {
      const began = performance.now();
      const dead = (await leaseHolder(api.coordination))!;
      const deadRun = dead.split(" ")[0];
      // The standby replica of the step before may still be exiting.
      const [pid] = await waitFor(() => {
        const found = runnerProcesses();
        return found.length === 1 && found;
      }, { timeout: 30_000, interval: 250, message: "one runner process" });
      Deno.kill(pid, "SIGKILL");
      // The kubelet restarts the container; the Lease lasts 60 s from its last renewal.
      const holder = await explainFailure(
        waitFor(async () => {
          const now = await leaseHolder(api.coordination);
          return now !== undefined && !now.startsWith(`${deadRun} `) && now;
        }, {
          timeout: 120_000,
          interval: 1000,
          message: "a new run to take the expired Lease over",
        }),
        explain,
      );
      const run = holder.split(" ")[0];
      const [pod] = await runnerPods(api.core);
      assert.equal(pod.status?.containerStatuses?.[0]?.restartCount, 1);
      const log = await api.core.readNamespacedPodLog({
        name: pod.metadata!.name!,
        namespace: RELEASE_NAMESPACE,
      });
      assert.match(log, /^Standing by: Another netcheck run ".*" holds Lease/m, log);
      assert.ok(
        log.includes(
          `Took over the expired Lease of run "${dead}": deleted the probe DaemonSets it left`,
        ),
        log,
      );
      const names = await explainFailure(
        waitFor(async () => {
          const dss = await api.apps.listNamespacedDaemonSet({ namespace: WATCH_NAMESPACE });
          const names = dss.items.map((d) => d.metadata!.name!).sort();
          return names.length === 2 && names.every((n) => n.includes(run)) && names;
        }, { timeout: 30_000, interval: 500, message: `only run ${run}'s DaemonSets` }),
        explain,
      );
      assert.deepEqual(names, [`lace-netcheck-${run}-n0`, `lace-netcheck-${run}-n1`]);
      await readyProbePods(api.core);
      console.log(
        `netcheck Deployment: killed runner replaced, Lease taken over and run ${deadRun}'s ` +
          `DaemonSets deleted ${Math.round(performance.now() - began)} ms after the kill`,
      );
    },
  );

  await t.step(
    "scaled to 0, the runner stopped by SIGTERM deletes its probe DaemonSets and releases the Lease itself",
    async () => {
      const began = performance.now();
      await scale(first, 0);
      await explainFailure(
        waitFor(async () => {
          const dss = await api.apps.listNamespacedDaemonSet({ namespace: WATCH_NAMESPACE });
          const pods = await api.core.listNamespacedPod({ namespace: RELEASE_NAMESPACE });
          const running = pods.items.filter((p) =>
            p.metadata!.labels?.["app.kubernetes.io/component"] === "netcheck"
          );
          return dss.items.length === 0 && running.length === 0 &&
            await leaseHolder(api.coordination) === undefined;
        }, {
          timeout: 60_000,
          interval: 500,
          message: "the runner gone with its DaemonSets and Lease",
        }),
        leftovers,
      );
      // Its own doing: its owner ConfigMap and its RBAC are all still there.
      const left = await netcheckLeftovers(api);
      for (
        const kept of [
          "Role lace-netcheck",
          "ConfigMap lace-netcheck",
          "Deployment lace-netcheck",
          "ClusterRole lace-netcheck",
        ]
      ) {
        assert.ok(left.includes(kept), `${kept} missing: ${left.join(", ")}`);
      }
      console.log(
        `netcheck Deployment: scaled to 0, DaemonSets and Lease gone in ${
          Math.round(performance.now() - began)
        } ms`,
      );
      // Running again for the next step.
      await scale(first, 1);
      await waitFor(() => leaseHolder(api.coordination), {
        timeout: 60_000,
        interval: 500,
        message: "a new runner to take the Lease",
      });
      await readyProbePods(api.core);
    },
  );

  await t.step(
    "netcheck.enabled=false leaves no probe pod, DaemonSet, Lease, runner or RBAC of it behind",
    async () => {
      const began = performance.now();
      await setNetcheck(first, false);
      await explainFailure(
        waitFor(async () => (await netcheckLeftovers(api)).length === 0, {
          timeout: 90_000,
          interval: 500,
          message: "everything of netcheck gone",
        }),
        leftovers,
      );
      console.log(
        `netcheck Deployment: everything gone ${Math.round(performance.now() - began)} ms ` +
          "after helm upgrade --set netcheck.enabled=false",
      );
    },
  );
}
