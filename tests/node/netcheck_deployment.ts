/**
 * The chart's continuous netcheck (`netcheck.enabled`: `lace netcheck --watch` as a Deployment) on
 * two real nodes, as an operator turns it on: `helm upgrade` of the agent's release, the runner a
 * pod of the lace image in the release's namespace, in-cluster through its own ServiceAccount,
 * its probe DaemonSets in the chart's netcheck namespace on both nodes, its metrics read through
 * `kubectl port-forward` (the API server, then the kubelet, into the runner pod's own loopback;
 * the forward listens on the test's loopback only). Steps for a test that brought the two nodes
 * up with the agent on both (two_node_netcheck_test.ts).
 */
import assert from "node:assert/strict";
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
} from "@kubernetes/client-node";
import { ManagedProcess } from "../kube/_process.ts";
import { kubeToolPath } from "../kube/tools.ts";
import { waitFor } from "../helpers/wait.ts";
import { CHART, helm } from "./chart.ts";
import { IMAGES } from "./images.ts";
import type { Node } from "./node.ts";
import { isReady } from "./pod_checks.ts";
import type { SecondNode } from "./second_node.ts";

/**
 * The chart's netcheck namespace here: one that exists already (`netcheck.createNamespace=false`),
 * as two_node_netcheck_test.ts's runs left it, so that disabling the chart cannot lean on the
 * namespace's deletion to remove what the runner made. Mapped to a network by the nodes.
 */
export const WATCH_NAMESPACE = "lace-netcheck";
/** Namespaces whose pods the nodes' network plugin must attach: the runner's and its probes'. */
export const DEPLOYMENT_NAMESPACES = ["lace-system", WATCH_NAMESPACE];
const RELEASE_NAMESPACE = "lace-system";
const RUNNER = "lace-netcheck";
const RUNNER_SELECTOR = "app.kubernetes.io/component=netcheck";
const PROBE_SELECTOR = "app.kubernetes.io/name=lace-netcheck";
const METRICS_PORT = 9469;
const LABEL = "lace-test.io/network";
/** The two networks the runner checks each round, isolation between them included. */
export const WATCH_NETWORKS = [`${LABEL}=red`, `${LABEL}=green`];

/** Flags of the runner: this fixture's images, short timeouts, both networks. */
const EXTRA_ARGS = [
  `--image=${IMAGES.agnhost}`,
  `--bandwidth-image=${IMAGES.iperf3}`,
  "--timeout=2s",
  "--bandwidth-time=1s",
  "--latency-samples=3",
  `--networks=${WATCH_NETWORKS.join(",")}`,
];

/** `helm upgrade` of the release keeping its values, with netcheck on or off. */
export function setNetcheck(first: Node, enabled: boolean, ...extra: string[]): Promise<string> {
  return helm(first, [
    "upgrade",
    "lace",
    CHART,
    "--namespace",
    RELEASE_NAMESPACE,
    "--reuse-values",
    "--set",
    `netcheck.enabled=${enabled}`,
    "--set",
    `netcheck.namespace=${WATCH_NAMESPACE}`,
    "--set",
    "netcheck.createNamespace=false",
    "--set",
    "netcheck.interval=10s",
    "--set-json",
    `netcheck.extraArgs=${JSON.stringify(EXTRA_ARGS)}`,
    ...extra,
  ]);
}

/** One Prometheus sample line's value by `name{labels}` as exposed, label order included. */
export function parseSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const space = line.lastIndexOf(" ");
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

let forwards = 0;

/** `kubectl port-forward` to the runner pod's metrics port, on a free port of the test's loopback. */
async function forwardMetrics(
  first: Node,
  pod: string,
): Promise<ManagedProcess & { port: number; log: string }> {
  const kubectl = await kubeToolPath("kubectl");
  const log = `${first.dir}/port-forward-${pod}-${++forwards}.log`;
  const forward = await ManagedProcess.spawn(kubectl, [
    `--kubeconfig=${first.controlPlane.kubeconfigPath}`,
    "--namespace",
    RELEASE_NAMESPACE,
    "port-forward",
    "--address=127.0.0.1",
    `pod/${pod}`,
    `:${METRICS_PORT}`,
  ], log);
  try {
    const port = await waitFor(async () => {
      const text = await Deno.readTextFile(log);
      return Number(text.match(/Forwarding from 127\.0\.0\.1:(\d+)/)?.[1] ?? 0);
    }, { timeout: 20_000, interval: 100, message: `kubectl port-forward to ${pod}` });
    return Object.assign(forward, { port, log });
  } catch (error) {
    await forward.stop(1000);
    throw error;
  }
}

/** The runner pod's metrics, read through a port-forward opened for the read. */
async function scrape(first: Node, pod: string): Promise<Map<string, number>> {
  const forward = await forwardMetrics(first, pod);
  try {
    const response = await fetch(`http://127.0.0.1:${forward.port}/metrics`).catch(async (e) => {
      const log = await Deno.readTextFile(forward.log);
      throw new Error(`${e.message}: ${e.cause ?? ""}\n--- kubectl port-forward ---\n${log}`);
    });
    const text = await response.text();
    assert.equal(response.status, 200, text);
    return parseSamples(text);
  } finally {
    await forward.stop(1000);
  }
}

interface Clients {
  core: CoreV1Api;
  apps: AppsV1Api;
  coordination: CoordinationV1Api;
  rbac: RbacAuthorizationV1Api;
}

function clients(first: Node): Clients {
  const config = first.controlPlane.adminConfig();
  return {
    core: config.makeApiClient(CoreV1Api),
    apps: config.makeApiClient(AppsV1Api),
    coordination: config.makeApiClient(CoordinationV1Api),
    rbac: config.makeApiClient(RbacAuthorizationV1Api),
  };
}

/** Running runner pods, not being deleted. */
async function runnerPods(core: CoreV1Api) {
  const list = await core.listNamespacedPod({
    namespace: RELEASE_NAMESPACE,
    labelSelector: RUNNER_SELECTOR,
  });
  return list.items.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
}

/** The Lease's holder, or undefined without one. */
async function leaseHolder(coordination: CoordinationV1Api): Promise<string | undefined> {
  try {
    const lease = await coordination.readNamespacedLease({
      name: RUNNER,
      namespace: WATCH_NAMESPACE,
    });
    return lease.spec?.holderIdentity;
  } catch {
    return undefined;
  }
}

/** What the runner's pods and the watch namespace hold, for a failure message. */
async function describeRunner(first: Node, { core }: Clients): Promise<string> {
  const lines: string[] = [];
  const pods = await core.listNamespacedPod({
    namespace: RELEASE_NAMESPACE,
    labelSelector: RUNNER_SELECTOR,
  }).catch(() => ({ items: [] }));
  for (const pod of pods.items) {
    const name = pod.metadata!.name!;
    lines.push(`runner ${name}: ${JSON.stringify(pod.status?.containerStatuses ?? pod.status)}`);
    const log = await core.readNamespacedPodLog({
      name,
      namespace: RELEASE_NAMESPACE,
      tailLines: 40,
    }).catch((e) => `(no log: ${e})`);
    lines.push(`--- log of ${name} ---\n${log}`);
  }
  const events = await core.listNamespacedEvent({ namespace: RELEASE_NAMESPACE })
    .then((l) =>
      l.items.slice(-20).map((e) => `${e.involvedObject.name} ${e.reason}: ${e.message}`)
    )
    .catch(() => []);
  lines.push("--- events ---", ...events);
  lines.push(await first.logs(20));
  return lines.join("\n");
}

/** The names of what the enabled chart made for netcheck and what it left running, by kind. */
async function netcheckLeftovers({ core, apps, coordination, rbac }: Clients): Promise<string[]> {
  const left: string[] = [];
  const exists = (what: string, read: () => Promise<unknown>) =>
    read().then(() => left.push(what), () => {});
  const dss = await apps.listNamespacedDaemonSet({ namespace: WATCH_NAMESPACE })
    .catch(() => ({ items: [] }));
  for (const ds of dss.items) left.push(`DaemonSet ${ds.metadata!.name}`);
  const pods = await core.listNamespacedPod({ namespace: WATCH_NAMESPACE })
    .catch(() => ({ items: [] }));
  for (const pod of pods.items) left.push(`Pod ${WATCH_NAMESPACE}/${pod.metadata!.name}`);
  const holder = await leaseHolder(coordination);
  if (holder !== undefined) left.push(`Lease held by ${holder}`);
  for (
    const pod of (await core.listNamespacedPod({
      namespace: RELEASE_NAMESPACE,
      labelSelector: RUNNER_SELECTOR,
    })).items
  ) left.push(`runner Pod ${pod.metadata!.name}`);
  const name = "lace-netcheck";
  await exists(
    `Deployment ${name}`,
    () => apps.readNamespacedDeployment({ name, namespace: RELEASE_NAMESPACE }),
  );
  await exists(
    `ServiceAccount ${name}`,
    () => core.readNamespacedServiceAccount({ name, namespace: RELEASE_NAMESPACE }),
  );
  await exists(`ClusterRole ${name}`, () => rbac.readClusterRole({ name }));
  await exists(`Role ${name}`, () => rbac.readNamespacedRole({ name, namespace: WATCH_NAMESPACE }));
  await exists(
    `RoleBinding ${name}`,
    () => rbac.readNamespacedRoleBinding({ name, namespace: WATCH_NAMESPACE }),
  );
  await exists(
    `ConfigMap ${name}`,
    () => core.readNamespacedConfigMap({ name, namespace: WATCH_NAMESPACE }),
  );
  await exists(`ClusterRoleBinding ${name}`, () => rbac.readClusterRoleBinding({ name }));
  return left;
}

/** The 4 probe pods (2 networks × 2 nodes) once all are Ready. */
function readyProbePods(core: CoreV1Api) {
  return waitFor(async () => {
    const list = await core.listNamespacedPod({
      namespace: WATCH_NAMESPACE,
      labelSelector: PROBE_SELECTOR,
    });
    const ready = list.items.filter(isReady);
    return ready.length === 4 && ready;
  }, { timeout: 90_000, interval: 500, message: "4 Ready probe pods" });
}

/**
 * The runner's processes as the machine sees them (the lace image runs Deno on its source: the
 * command line names main.ts, netcheck and --watch).
 */
function runnerProcesses(): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const args = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
      const main = args.findIndex((a) => a.endsWith("/src/main.ts"));
      if (main >= 0 && args[main + 1] === "netcheck" && args[main + 2] === "--watch") {
        found.push(Number(entry.name));
      }
    } catch {
      // Exited meanwhile.
    }
  }
  return found;
}

/** `kubectl scale` of the runner's Deployment. */
async function scale(first: Node, replicas: number): Promise<void> {
  const out = await new Deno.Command(await kubeToolPath("kubectl"), {
    args: [
      `--kubeconfig=${first.controlPlane.kubeconfigPath}`,
      "--namespace",
      RELEASE_NAMESPACE,
      "scale",
      `deployment/${RUNNER}`,
      `--replicas=${replicas}`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
}

/** The steps: enable, rounds and metrics, a second runner on standby, disable. */
export async function netcheckDeploymentSteps(
  t: Deno.TestContext,
  first: Node,
  second: SecondNode,
): Promise<void> {
  const api = clients(first);
  const nodes = [first.name, second.name].sort();
  const explain = () => describeRunner(first, api);
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
      const pod = await waitFor(async () => (await runnerPods(api.core))[0], {
        timeout: 90_000,
        interval: 500,
        message: "the netcheck runner pod Running",
      }).catch(async (e) => assert.fail(`${e.message}\n${await explain()}`));
      runner = pod.metadata!.name!;
      // The holder names the run and the pod's hostname (its name).
      const holder = await waitFor(() => leaseHolder(api.coordination), {
        timeout: 60_000,
        interval: 500,
        message: "the runner to take the Lease",
      }).catch(async (e) => assert.fail(`${e.message}\n${await explain()}`));
      assert.match(holder, new RegExp(`^[0-9a-f]{8} by \\S+@${runner}$`));
      const probes = await readyProbePods(api.core).catch(async (e) =>
        assert.fail(`${e.message}\n${await explain()}`)
      );
      const placed = probes.map((p) => `${p.metadata!.labels![LABEL]} on ${p.spec!.nodeName}`);
      assert.deepEqual(
        placed.sort(),
        nodes.flatMap((n) => [`green on ${n}`, `red on ${n}`]).sort(),
      );
      const metrics = await waitFor(async () => {
        const samples = await scrape(first, runner);
        return (samples.get('lace_netcheck_rounds_total{result="passed"}') ?? 0) >= 1 &&
          samples;
      }, { timeout: 90_000, interval: 1000, message: "a passed round in the runner's metrics" })
        .catch(async (e) => assert.fail(`${e.message}\n${await explain()}`));
      console.log(
        `netcheck Deployment: first passed round ${Math.round(performance.now() - began)} ms ` +
          `after helm upgrade, round duration ${
            metrics.get("lace_netcheck_round_duration_seconds")
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
          (get(`lace_netcheck_bandwidth_bits_per_second_count{network="${network}"}`) ?? 0) >= 2,
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
        const other = await waitFor(
          async () => (await runnerPods(api.core)).find((p) => p.metadata!.name !== runner),
          { timeout: 60_000, interval: 500, message: "a second runner pod Running" },
        ).catch(async (e) => assert.fail(`${e.message}\n${await explain()}`));
        const name = other.metadata!.name!;
        // It is up and says why it waits; meanwhile it made nothing and ran no round.
        const log = await waitFor(async () => {
          const text = await api.core.readNamespacedPodLog({
            name,
            namespace: RELEASE_NAMESPACE,
          });
          return /^Standing by: Another netcheck run ".*" holds Lease/m.test(text) && text;
        }, { timeout: 60_000, interval: 500, message: `${name} to report the held Lease` })
          .catch(async (e) => assert.fail(`${e.message}\n${await explain()}`));
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
      const holder = await waitFor(async () => {
        const now = await leaseHolder(api.coordination);
        return now !== undefined && !now.startsWith(`${deadRun} `) && now;
      }, { timeout: 120_000, interval: 1000, message: "a new run to take the expired Lease over" })
        .catch(async (e) => assert.fail(`${e.message}\n${await explain()}`));
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
      const names = await waitFor(async () => {
        const dss = await api.apps.listNamespacedDaemonSet({ namespace: WATCH_NAMESPACE });
        const names = dss.items.map((d) => d.metadata!.name!).sort();
        return names.length === 2 && names.every((n) => n.includes(run)) && names;
      }, { timeout: 30_000, interval: 500, message: `only run ${run}'s DaemonSets` })
        .catch(async (e) => assert.fail(`${e.message}\n${await explain()}`));
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
      await waitFor(async () => {
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
      })
        .catch(async (e) =>
          assert.fail(`${e.message}: ${(await netcheckLeftovers(api)).join(", ")}`)
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
      await waitFor(async () => (await netcheckLeftovers(api)).length === 0, {
        timeout: 90_000,
        interval: 500,
        message: "everything of netcheck gone",
      }).catch(async (e) =>
        assert.fail(`${e.message}: ${(await netcheckLeftovers(api)).join(", ")}`)
      );
      console.log(
        `netcheck Deployment: everything gone ${Math.round(performance.now() - began)} ms ` +
          "after helm upgrade --set netcheck.enabled=false",
      );
    },
  );
}
