/**
 * Isolation on a real node (tests/node/node.ts) against a hostile tenant who uses the kubelet
 * itself: the kubelet follows a redirect while the host stays the same, whatever the port, for
 * probes and httpGet lifecycle hooks alike, so a tenant holding another tenant's address could
 * make the kubelet's tagged connection land in the other tenant's pod. Under the chart's default
 * (`node.addressSharing=exclusive`) an address belongs to one network on the node, so that
 * redirect lands nowhere; under the opt-in (`shared`) the documented exposure exists. Also:
 * preStop httpGet hooks reach their own pod with the agent and fail without it. Prints what it
 * measured and each step's duration.
 */
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { nodeUnavailableReason } from "../kube/tools.ts";
import { waitFor } from "../helpers/wait.ts";
import { HAND_CHAINED, installLace, removeLace, upgradeLace } from "./chart.ts";
import { NETWORKS } from "./network.ts";
import { startNode } from "./node.ts";
import {
  containerLog,
  failWithLogs,
  isReady,
  kubeletLog,
  readyAgentPod,
  restarts,
} from "./pod_checks.ts";
import {
  addressesOf,
  allStarted,
  createAndWait,
  deleteAndWait,
  podEvents,
  readySince,
  redirectsOf,
  requestsOf,
  sampleReadiness,
} from "./tenant_checks.ts";
import {
  ATTACKER_HOOKS,
  ATTACKER_PROBES,
  ATTACKER_SERVER,
  attackerPod,
  hookPod,
  preStopPath,
  REDIRECT_CODES,
  stolenMarker,
  VICTIM_HTTP,
  VICTIM_HTTPS,
  victimPaths,
  victimPod,
} from "./tenant_pods.ts";
import { skipIf } from "../helpers/skip.ts";

const reason = await nodeUnavailableReason();
const [RED, GREEN, BLUE] = NETWORKS.map((n) => n.name);
/** Each tenant in a namespace of its own, as on a shared cluster. */
const VICTIMS = "green-tenant", ATTACKERS = "red-tenant";

/** The address a URL of the kubelet names for an address: IPv6 in brackets. */
const hostPort = (address: string, port: number) =>
  address.includes(":") ? `[${address}]:${port}` : `${address}:${port}`;

Deno.test({
  name: "Lace on a real node: nothing the kubelet sends to a pod lands in another network",
  ignore: skipIf(reason),
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const began = performance.now();
  await using node = await startNode();
  const durations: Record<string, number> = { "node up": Math.round(performance.now() - began) };
  console.log(`node up: ${JSON.stringify(node.timings)}`);
  const core = node.controlPlane.adminConfig().makeApiClient(CoreV1Api);
  const onFailure = failWithLogs(node);
  // Pods a step made, deleted when the step ends, passed or failed, unless it keeps them for the
  // next step.
  const made: V1Pod[] = [];
  const make = (body: V1Pod, until: (pod: V1Pod) => boolean, what: string) => {
    made.push(body);
    return createAndWait(core, body, until, what);
  };
  const step = async (name: string, fn: () => Promise<void>, keepPods = false) => {
    const start = performance.now();
    const ok = await t.step(name, async () => {
      try {
        await fn().catch(onFailure);
      } finally {
        if (!keepPods) await deleteAndWait(core, made.splice(0));
      }
    });
    durations[name.slice(0, 48)] = Math.round(performance.now() - start);
    return ok;
  };
  const read = (pod: V1Pod) =>
    core.readNamespacedPod({ name: pod.metadata!.name!, namespace: pod.metadata!.namespace! });

  await step("helm install with the chart's defaults brings up a Ready agent", async () => {
    await installLace(node, ...HAND_CHAINED);
    await readyAgentPod(core, node);
    for (const namespace of [VICTIMS, ATTACKERS]) {
      await node.controlPlane.createNamespace(namespace);
    }
  });

  let victims: V1Pod[] = [];
  const attackers: V1Pod[] = [];
  await step(
    "by default a pod of a second network is turned away from an address another network's pod holds, and gets the next one",
    async () => {
      // Both networks' allocators start at .10: the attacker's first ADD brings the victim's
      // address. The IPv6-only pair is made after, so the next clash is in IPv6.
      for (const family of [undefined, "ipv6"] as const) {
        const suffix = family === "ipv6" ? "6" : "";
        const victim = await make(
          victimPod({
            name: `victim${suffix}`,
            namespace: VICTIMS,
            node: node.name,
            network: GREEN,
            family,
          }),
          isReady,
          "to be Ready",
        );
        const attacker = await make(
          attackerPod({
            name: `attacker${suffix}`,
            namespace: ATTACKERS,
            node: node.name,
            network: RED,
            family,
          }),
          allStarted,
          "to start its containers",
        );
        victims.push(victim);
        attackers.push(attacker);
        const refused = (await podEvents(core, ATTACKERS, attacker.metadata!.name!))
          .filter((e) => e.reason === "FailedCreatePodSandBox");
        console.log(
          `victim${suffix} ${addressesOf(victim)}, attacker${suffix} ${addressesOf(attacker)} ` +
            `after ${refused.length} refused ADD(s): ${refused[0]?.message}`,
        );
        assert.ok(refused.length > 0, `attacker${suffix}'s first ADD was not refused`);
        assert.match(refused[0].message ?? "", /lace/i);
      }
      const held = victims.flatMap((v) => v.status!.podIPs!.map((ip) => ip.ip));
      for (const attacker of attackers) {
        for (const { ip } of attacker.status!.podIPs!) {
          assert.ok(!held.includes(ip), `${attacker.metadata!.name} holds ${ip} of a victim`);
        }
      }
    },
    true, // the next step attacks with them
  );

  await step(
    "an attacker's same-host redirects from readiness probes and postStart hooks (301, 302, 307, 308; http and https; IPv4 and IPv6) never reach the victim, which stays Ready",
    async () => {
      assert.equal(attackers.length, 2, "the attackers were made by the step before");
      victims = await Promise.all(victims.map(read));
      const readyAt = victims.map(readySince);
      const sampler = sampleReadiness(
        core,
        victims.map((v) => ({ namespace: VICTIMS, name: v.metadata!.name! })),
      );
      const window = performance.now();
      // The attack ran: every probe walked every code and scheme, every hook fired, and the
      // kubelet followed the redirects (to the attacker's own address, where no target is).
      let missing = "";
      const served = await waitFor(async () => {
        const counts: Record<string, number> = {};
        for (const attacker of attackers) {
          const name = attacker.metadata!.name!;
          const redirects = await redirectsOf(node, attacker, ATTACKER_SERVER);
          for (const { port, scheme } of ATTACKER_PROBES) {
            const mine = redirects.filter((r) => r.port === port);
            const variants = new Set(mine.map((r) => `${r.code} ${r.scheme}`));
            missing = `${name}'s readiness ${scheme} redirects (${[...variants]})`;
            if (variants.size < REDIRECT_CODES.length * 2) return undefined;
            counts[`${name} readiness ${scheme}`] = mine.length;
          }
          for (const hook of ATTACKER_HOOKS) {
            const hits = redirects.filter((r) => r.port === hook.port).length;
            missing = `${name}'s postStart ${hook.code} redirect`;
            if (hits === 0) return undefined;
            counts[`${name} postStart ${hook.code}`] = hits;
          }
          // The kubelet followed each redirect to the attacker's own address, where the victim's
          // ports are no target: its log has each failure (its Events are rate limited per pod).
          const followed = await kubeletLog(node);
          const own = attacker.status!.podIP!;
          const wanted = [
            ...[VICTIM_HTTP, VICTIM_HTTPS].map((port) =>
              `${hostPort(own, port)}/echo?msg=${stolenMarker(name)}-readiness`
            ),
            ...ATTACKER_HOOKS.map((h) =>
              `${hostPort(own, h.location === "http" ? VICTIM_HTTP : VICTIM_HTTPS)}/echo?msg=${
                stolenMarker(name)
              }-poststart-${h.code}`
            ),
          ];
          for (const url of wanted) {
            missing = `the kubelet's log to show it followed a redirect to ${url}`;
            if (!followed.includes(url)) return undefined;
          }
        }
        return counts;
      }, { timeout: 90_000, interval: 500, message: "the attack to have run in full" })
        .catch((error) => {
          throw new Error(`${error.message}; still missing ${missing}`, { cause: error });
        });
      const seconds = Math.round((performance.now() - window) / 1000);
      const { notReady, samples } = await sampler.stop();
      console.log(`attack window ${seconds} s; redirects served: ${JSON.stringify(served)}`);

      for (const [i, victim] of victims.entries()) {
        const name = victim.metadata!.name!;
        const requests = await requestsOf(node, victim, "server");
        const foreign = requests.filter((r) => !victimPaths(name).includes(r.uri));
        console.log(`${name}: ${requests.length} requests, all its own probes'`);
        assert.ok(requests.length > 0, `${name} logged no request at all`);
        assert.deepEqual(foreign, [], `${name} served requests that are not its own probes'`);
        const now = await read(victim);
        assert.equal(readySince(now), readyAt[i], `${name} was not Ready at some time`);
        assert.equal(restarts(now), 0, `${name} restarted`);
        const unhealthy = (await podEvents(core, VICTIMS, name))
          .filter((e) => e.reason === "Unhealthy").map((e) => e.message);
        assert.deepEqual(unhealthy, [], `${name}'s probes failed`);
      }
      assert.ok(samples > 0);
      assert.deepEqual(notReady, [], `a victim was seen not Ready in ${samples} samples`);
    },
  );

  await step(
    "a preStop httpGet hook on a port no probe uses reaches its own pod before the container stops, over IPv4 and IPv6",
    async () => {
      const pods = await Promise.all((["", "6"] as const).map((suffix) =>
        make(
          hookPod({
            name: `prestop${suffix}`,
            namespace: VICTIMS,
            node: node.name,
            network: GREEN,
            family: suffix === "6" ? "ipv6" : undefined,
          }),
          isReady,
          "to be Ready",
        )
      ));
      for (const pod of pods) {
        await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: VICTIMS });
      }
      for (const pod of pods) {
        const name = pod.metadata!.name!;
        // The server serves 3 s after SIGTERM: its log is there to read meanwhile.
        const log = await waitFor(async () => {
          const text = await containerLog(node, pod, "server");
          return text.includes("signal terminated") ? text : undefined;
        }, { timeout: 30_000, interval: 100, message: `${name} to be sent SIGTERM` });
        const hook = log.indexOf(`uri=${preStopPath(name)} `);
        assert.ok(hook >= 0, `${name}'s preStop hook never reached it:\n${log.slice(-3000)}`);
        assert.ok(hook < log.indexOf("signal terminated"), "the hook came after SIGTERM");
      }
      await deleteAndWait(core, pods, 15);
      for (const pod of pods) {
        const failed = (await podEvents(core, VICTIMS, pod.metadata!.name!))
          .filter((e) => e.reason === "FailedPreStopHook");
        assert.deepEqual(failed, []);
      }
    },
  );

  await step(
    "under node.addressSharing=shared a second network's pod takes a held address and the documented exposure exists: its redirect reaches the victim",
    async () => {
      const old = await readyAgentPod(core, node);
      await upgradeLace(node, ...HAND_CHAINED, "--set", "node.addressSharing=shared");
      await readyAgentPod(core, node, old.metadata!.uid);
      // An address of the attacker's choosing (an IPAM that honours requested addresses).
      const victim = await make(
        victimPod({
          name: "shared-victim",
          namespace: VICTIMS,
          node: node.name,
          network: BLUE,
          hostIndex: 200,
        }),
        isReady,
        "to be Ready",
      );
      const attacker = await make(
        attackerPod({
          name: "shared-attacker",
          namespace: ATTACKERS,
          node: node.name,
          network: RED,
          hostIndex: 200,
        }),
        allStarted,
        "to start its containers",
      );
      assert.equal(addressesOf(attacker), addressesOf(victim));
      const window = performance.now();
      const stolen = await waitFor(async () => {
        const requests = await requestsOf(node, victim, "server");
        const theirs = requests.filter((r) => r.uri.includes(stolenMarker("shared-attacker")));
        return theirs.length > 0 ? theirs : undefined;
      }, { timeout: 60_000, interval: 250, message: "the attacker's request to reach the victim" });
      console.log(
        `shared: the victim served the attacker's ${stolen[0].uri} ` +
          `${Math.round(performance.now() - window)} ms after the attacker started`,
      );
    },
  );

  await step("without the agent a preStop httpGet hook fails (FailedPreStopHook)", async () => {
    await removeLace(node);
    const name = "prestop-no-agent";
    const pod = await make(
      hookPod({ name, namespace: VICTIMS, node: node.name, network: GREEN }, false),
      allStarted,
      "to start",
    );
    await core.deleteNamespacedPod({ name, namespace: VICTIMS });
    const log = await waitFor(async () => {
      const text = await containerLog(node, pod, "server");
      return text.includes("signal terminated") ? text : undefined;
    }, { timeout: 30_000, interval: 100, message: `${name} to be sent SIGTERM` });
    assert.ok(!log.includes(preStopPath(name)), "the hook reached the pod without the agent");
    const failed = await waitFor(async () => {
      const events = await podEvents(core, VICTIMS, name);
      return events.find((e) => e.reason === "FailedPreStopHook");
    }, { timeout: 30_000, interval: 250, message: "a FailedPreStopHook Event" });
    console.log(`without the agent: ${failed.reason} "${failed.message}"`);
  });

  console.log(`durations (ms): ${JSON.stringify(durations)}`);
});
