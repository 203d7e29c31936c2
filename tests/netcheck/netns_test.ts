/**
 * netcheck against the netns-based simulated cluster: real TCP connects
 * through the agnhost stand-in and real iperf3, with faults. Needs root
 * (network namespaces); every namespace and process is removed afterwards.
 */
import assert from "node:assert/strict";
import { defaultNetcheckOptions, type NetcheckOptions } from "../../lib/netcheck/options.ts";
import {
  EXIT_ERROR,
  EXIT_FAILED,
  EXIT_INTERRUPTED,
  EXIT_PASSED,
  runChecks,
} from "../../lib/netcheck/pipeline/run.ts";
import { NetnsCluster, type SimNode } from "./netns_cluster.ts";
import { needsRoot, skipIf } from "../helpers/skip.ts";
import { textReport } from "../../lib/netcheck/report/formats.ts";
import type { PathResult } from "../../lib/netcheck/checks/path_result.ts";

const ignore = skipIf(needsRoot("network namespaces"));
const quiet = { write: () => {}, isTerminal: false };

function options(over: Partial<NetcheckOptions> = {}): NetcheckOptions {
  return {
    ...defaultNetcheckOptions(),
    connectTimeoutMs: 1000,
    bandwidthTimeS: 1,
    readyTimeoutMs: 20_000,
    ...over,
  };
}

async function withCluster(
  specs: SimNode[],
  fn: (c: NetnsCluster) => Promise<void>,
): Promise<void> {
  await using cluster = await NetnsCluster.create(specs);
  await fn(cluster);
}

/** A --mtu run with one latency sample and no bandwidth phase, as each MTU test makes it. */
function runMtu(cluster: NetnsCluster, over: Partial<NetcheckOptions> = {}) {
  return runChecks(
    options({ mtu: true, skipBandwidth: true, latencySamples: 1, connectTimeoutMs: 1000, ...over }),
    { cluster, progress: quiet, sinks: [], pollMs: 50 },
  );
}

async function namespacesLeft(prefix: string): Promise<string[]> {
  const out = await new Deno.Command("ip", { args: ["netns", "list"], stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.startsWith(prefix));
}

Deno.test({
  name: "three healthy simulated nodes pass connectivity and iperf3 bandwidth on IPv4",
  ignore,
  async fn() {
    let prefix = "";
    await withCluster([{ name: "a" }, { name: "b" }, { name: "c" }], async (cluster) => {
      prefix = cluster.prefix;
      const r = await runChecks(options(), { cluster, progress: quiet, sinks: [], pollMs: 50 });
      assert.equal(r.exitCode, EXIT_PASSED, textReport(r.summary, r.outcome));
      assert.equal(r.summary.connect.passed, 6);
      assert.equal(r.summary.bandwidth.passed, 6);
      assert.ok(r.summary.minBps > 1e6, `implausible bandwidth ${r.summary.minBps}`);
      assert.equal(cluster.runningServers, 0, "probe pods still running after the run");
      assert.equal(cluster.daemonSets.size, 0);
      assert.equal(cluster.leases.size, 0);
    });
    assert.deepEqual(await namespacesLeft(prefix), []);
  },
});

Deno.test({
  name:
    "a pod answering /hostname without end fails its latency paths as TOO_LONG: real curl passes it all on, the exec is cut at 1 MiB",
  ignore,
  async fn() {
    await withCluster([{ name: "a" }, { name: "b" }, { name: "c", endlessHostname: true }], async (
      cluster,
    ) => {
      const started = performance.now();
      const r = await runChecks(
        // A whole --timeout of endless answer would be hundreds of MB through curl.
        options({ skipBandwidth: true, latencySamples: 2, connectTimeoutMs: 5000 }),
        { cluster, progress: quiet, sinks: [], pollMs: 50 },
      );
      const seconds = (performance.now() - started) / 1000;
      console.log(textReport(r.summary, r.outcome), `${seconds.toFixed(1)} s`);
      assert.equal(r.exitCode, EXIT_FAILED, textReport(r.summary, r.outcome));
      assert.equal(r.summary.connect.failed, 0);
      const failed = r.summary.failures.items;
      assert.deepEqual(failed.map((f) => `${f.phase} ${f.to} ${f.errorClass}`).sort(), [
        "latency c TOO_LONG",
        "latency c TOO_LONG",
      ]);
      assert.match(failed[0].message!, /^output above 1048576 bytes: cut/);
      assert.equal(r.summary.latency.passed, 4);
    });
  },
});

Deno.test({
  name: "latency is measured inside the pods with real curl, and --max-latency fails a slow node",
  ignore,
  async fn() {
    await withCluster([{ name: "a" }, { name: "b" }, { name: "c", answerDelayMs: 300 }], async (
      cluster,
    ) => {
      const r = await runChecks(
        options({ skipBandwidth: true, latencySamples: 5, maxLatencyMs: 200 }),
        { cluster, progress: quiet, sinks: [], pollMs: 50 },
      );
      console.log(textReport(r.summary, r.outcome));
      assert.equal(r.exitCode, EXIT_FAILED, textReport(r.summary, r.outcome));
      assert.equal(r.summary.latency.tested, 6);
      assert.equal(r.summary.latency.failed, 2);
      const failed = r.summary.failures.items;
      assert.deepEqual(failed.map((f) => `${f.to} ${f.errorClass}`), ["c LATENCY", "c LATENCY"]);
      assert.match(failed[0].message!, /^request p99 \d+ ms is above --max-latency 200 ms$/);
      // Only lower bounds: the answer delay bounds the slow paths, a real handshake is never
      // free; upper bounds depend on the machine's load (figures are printed above).
      const [slowest, , fast] = r.summary.slowestLatency.items;
      assert.ok(slowest.latency!.request.p50 >= 300, JSON.stringify(slowest.latency));
      assert.ok(fast.latency!.connect.p50 > 0, JSON.stringify(fast.latency));
      const { p50, p99, max } = fast.latency!.request;
      assert.ok(0 < p50 && p50 <= p99 && p99 <= max, JSON.stringify(fast.latency));
    });
  },
});

Deno.test({
  name:
    "--networks on two isolated networks in one address range passes; a link between their bridges fails as LEAK",
  ignore,
  async fn() {
    let prefix = "";
    {
      await using cluster = await NetnsCluster.create([{ name: "a" }, { name: "b" }], {
        networks: 2,
      });
      prefix = cluster.prefix;
      const opts = options({
        networks: ["tenant-a", "tenant-b"],
        skipBandwidth: true,
        latencySamples: 2,
        isolationTimeoutMs: 500,
      });
      const env = { cluster, progress: quiet, sinks: [], pollMs: 50 };
      const isolated = await runChecks(opts, env);
      console.log(textReport(isolated.summary, isolated.outcome));
      assert.equal(isolated.exitCode, EXIT_PASSED, textReport(isolated.summary, isolated.outcome));
      assert.equal(isolated.summary.connect.passed, 4, "same-network paths in both networks");
      assert.equal(isolated.summary.isolation.passed, 8);
      assert.equal(cluster.runningServers, 0);

      const undo = await cluster.joinNetworks(0, 1);
      const leaking = await runChecks(opts, env);
      console.log(textReport(leaking.summary, leaking.outcome));
      assert.equal(leaking.exitCode, EXIT_FAILED);
      assert.equal(leaking.summary.networks!.leaks, 8);
      assert.deepEqual([...leaking.summary.failures.byClass], [["LEAK", 8]]);
      assert.match(
        leaking.summary.failures.items[0].message!,
        /\(network tenant-\w, node \w\) asked 10\.99\.0\.\d+ of pod .* \(network tenant-\w, node \w\): answered by .* itself/,
      );
      assert.equal(cluster.runningServers, 0, "probe pods left after the failing run");
      await undo();
    }
    assert.deepEqual(await namespacesLeft(prefix), []);
  },
});

Deno.test({
  name:
    "--mtu on real namespaces: a link that silently drops frames above 1200 B fails as MTU, the others pass",
  ignore,
  async fn() {
    await withCluster([{ name: "a" }, { name: "b" }, { name: "c", blackHoleMtu: 1200 }], async (
      cluster,
    ) => {
      const r = await runMtu(cluster);
      console.log(textReport(r.summary, r.outcome));
      assert.equal(r.exitCode, EXIT_FAILED, textReport(r.summary, r.outcome));
      // Connect and latency pass: small packets get through.
      assert.equal(r.summary.connect.failed, 0);
      assert.equal(r.summary.latency.failed, 0);
      assert.equal(r.summary.mtu.passed, 2);
      assert.equal(r.summary.mtu.failed, 4);
      for (const f of r.summary.failures.items) {
        assert.equal(f.errorClass, "MTU");
        assert.ok(f.from === "c" || f.to === "c");
        assert.match(f.message!, /largest through 200 B \(pod eth0 MTU 1500\)/);
        // The MSS a connection really gets (iperf3, getsockopt TCP_MAXSEG), beside the MTU.
        assert.match(
          f.message!,
          /the connection's MSS is 1448 B \(segments of 1488 B and more\); a 200 B UDP datagram passes but a full-size 1472 B one with don't-fragment \(1500 B packets\) does not \(received 0 of \d+ datagrams\)$/,
        );
        assert.equal(f.mss, 1448);
      }
      assert.deepEqual([r.summary.minMss, r.summary.maxMss], [1448, 1448]);
    });
  },
});

Deno.test({
  name:
    "--mtu on real namespaces: full-size TCP segments lost where curl's payloads pass fail as MTU naming the MSS",
  ignore,
  async fn() {
    // Only iperf3's port drops large frames: the payloads through agnhost pass, so the full-size
    // transfer alone sees the black hole.
    await withCluster(
      [{ name: "a" }, { name: "b", blackHoleMtu: 1200, blackHolePort: 5201 }],
      async (cluster) => {
        const r = await runMtu(cluster);
        assert.equal(r.exitCode, EXIT_FAILED, textReport(r.summary, r.outcome));
        assert.equal(r.summary.mtu.failed, 2);
        for (const f of r.summary.failures.items) {
          assert.equal(f.errorClass, "MTU");
          assert.equal(f.largestPayload, 16000);
          assert.match(
            f.message!,
            /^payloads up to 16000 B pass \(pod eth0 MTU 1500\), but a 1024 KiB TCP transfer does not \(iperf3: .*timed out\); the connection's MSS is 1448 B \(segments of 1488 B and more\)/,
          );
        }
      },
    );
  },
});

/**
 * Two nodes whose bridge drops only UDP frames above 1400 B to or from iperf3's port: curl's
 * payloads and the TCP transfer pass, so the full-size datagrams alone see the black hole. Both
 * paths must fail as MTU with the 200 B datagrams through and `message`; returns the run.
 */
async function udpBlackHole(family: NetcheckOptions["ipFamily"], message: RegExp) {
  let run: Awaited<ReturnType<typeof runMtu>> | undefined;
  await withCluster(
    [{ name: "a" }, { name: "b", blackHoleMtu: 1400, blackHolePort: 5201, blackHoleProto: "udp" }],
    async (cluster) => {
      const r = run = await runMtu(cluster, { ipFamily: family });
      assert.equal(r.exitCode, EXIT_FAILED, textReport(r.summary, r.outcome));
      assert.equal(r.summary.mtu.failed, 2);
      assert.deepEqual(r.summary.udpFullSize, { passed: 0, lost: 2 });
      for (const f of r.summary.failures.items) {
        assert.equal(f.errorClass, "MTU");
        assert.equal(f.largestPayload, 16000);
        assert.equal(f.udpDatagram, 200);
        assert.match(f.message!, message);
      }
    },
  );
  return run!;
}

Deno.test({
  name:
    "--mtu on real namespaces: full-size UDP datagrams with don't-fragment lost where small ones pass fail as MTU naming UDP and the size",
  ignore,
  async fn() {
    await udpBlackHole(
      "ipv4",
      /^payloads up to 16000 B pass over TCP \(pod eth0 MTU 1500\) and a 200 B UDP datagram passes, but a full-size 1472 B one with don't-fragment \(1500 B packets\) does not \(received 0 of \d+ datagrams\)/,
    );
  },
});

Deno.test({
  name:
    "--mtu on real namespaces over IPv6: full-size UDP datagrams lost where small ones pass fail as MTU naming UDP and the size",
  ignore,
  async fn() {
    // The same bridge on an IPv6 path: nothing says the frames are dropped (no Packet Too Big),
    // and routers never fragment IPv6. The full-size datagram fills the 1500 B pod MTU after a
    // 40 B IPv6 and an 8 B UDP header: 1452 B of payload.
    const r = await udpBlackHole(
      "ipv6",
      /^payloads up to 16000 B pass over TCP \(pod eth0 MTU 1500\) and a 200 B UDP datagram passes, but a full-size 1452 B one \(1500 B packets\) does not \(received 0 of \d+ datagrams\)/,
    );
    // TCP over IPv6 passes the same bridge: an MSS of 1500 − 60 − 12 (timestamps).
    assert.equal(r.summary.minMss, 1428);
  },
});

Deno.test({
  name: "two simulated nodes pass on IPv6 with bracketed connect targets",
  ignore,
  async fn() {
    await withCluster([{ name: "a" }, { name: "b" }], async (cluster) => {
      const r = await runChecks(options({ ipFamily: "ipv6" }), {
        cluster,
        progress: quiet,
        sinks: [],
        pollMs: 50,
      });
      assert.equal(r.exitCode, EXIT_PASSED, textReport(r.summary, r.outcome));
      assert.equal(r.summary.bandwidth.passed, 2);
    });
  },
});

Deno.test({
  name:
    "faults show in the report: unreachable TIMEOUT, busy server retried, slow path SLOW, cordoned skipped",
  ignore,
  async fn() {
    await withCluster([
      { name: "ok" },
      { name: "dark", unreachable: true },
      { name: "busy", busyOnce: true },
      { name: "slow", slowMbit: 20 },
      { name: "cordoned", cordoned: true },
    ], async (cluster) => {
      const paths: PathResult[] = [];
      const collect = {
        path: (p: PathResult) => void paths.push(p),
        finish: () => Promise.resolve(),
      };
      const r = await runChecks(options({ minBandwidthBps: 100e6 }), {
        cluster,
        progress: quiet,
        sinks: [collect],
        pollMs: 50,
        retryDelayMs: 1000,
      });
      const report = textReport(r.summary, r.outcome);
      assert.equal(r.exitCode, EXIT_FAILED, report);
      assert.deepEqual(r.summary.skippedNodes.map((s) => s.node), ["cordoned"]);
      assert.equal(r.summary.failures.byClass.get("TIMEOUT"), 6, report);
      assert.ok(
        r.summary.failures.items.filter((f) => f.errorClass === "TIMEOUT")
          .every((f) => f.from === "dark" || f.to === "dark"),
      );
      assert.equal(r.summary.failures.byClass.get("SLOW"), 2, report);
      assert.equal(r.summary.slowest.items[0].from, "slow");
      assert.equal(r.summary.bandwidth.tested, 6);
      assert.equal(r.summary.failures.byClass.get("IPERF"), undefined, report);
      const firstToBusy = paths.find((p) => p.phase === "bandwidth" && p.to === "busy")!;
      assert.ok(
        firstToBusy.bitsPerSecond! > 0 && firstToBusy.attempts >= 2,
        JSON.stringify(firstToBusy),
      );
      assert.equal(cluster.runningServers, 0);
    });
  },
});

Deno.test({
  name: "a pod in ImagePullBackOff fails the setup at once and nothing stays running",
  ignore,
  async fn() {
    await withCluster(
      [{ name: "a" }, { name: "b", waitingReason: "ImagePullBackOff" }],
      async (cluster) => {
        const r = await runChecks(options({ readyTimeoutMs: 600_000 }), {
          cluster,
          progress: quiet,
          sinks: [],
          pollMs: 50,
        });
        assert.equal(r.exitCode, EXIT_ERROR);
        assert.match(r.outcome.error!, /on node "b" cannot start: connect: ImagePullBackOff/);
        assert.equal(cluster.runningServers, 0);
        assert.equal(cluster.leases.size, 0);
      },
    );
  },
});

Deno.test({
  name: "an interrupt during bandwidth tests stops the run and removes the probe pods",
  ignore,
  async fn() {
    await withCluster([{ name: "a" }, { name: "b" }, { name: "c" }], async (cluster) => {
      const controller = new AbortController();
      const exec = cluster.exec.bind(cluster);
      cluster.exec = (ns, pod, container, command, opts) => {
        if (container === "bandwidth") setTimeout(() => controller.abort(), 200);
        return exec(ns, pod, container, command, opts);
      };
      const started = Date.now();
      const r = await runChecks(options({ bandwidthTimeS: 10 }), {
        cluster,
        progress: quiet,
        sinks: [],
        pollMs: 50,
        signal: controller.signal,
      });
      assert.equal(r.exitCode, EXIT_INTERRUPTED);
      assert.ok(Date.now() - started < 8000, "the running iperf3 client was not stopped");
      assert.equal(cluster.runningServers, 0);
      assert.equal(cluster.daemonSets.size, 0);
      assert.equal(cluster.leases.size, 0);
    });
  },
});
