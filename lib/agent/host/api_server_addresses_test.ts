import assert from "node:assert/strict";
import {
  ApiServerAddresses,
  type ApiServerSource,
  kubeconfigFlag,
  kubeconfigHosts,
  kubeconfigServers,
  MAX_SOURCE_ADDRESSES,
  RESOLVE_MS,
  serverHost,
} from "./api_server_addresses.ts";
import { fakeTime } from "../../../tests/helpers/fake_time.ts";
import { recordingLogger } from "../../../tests/helpers/recording_logger.ts";

Deno.test("serverHost() takes a kubeconfig server URL's host, an IPv6 one without brackets", () => {
  assert.equal(serverHost("https://10.98.0.1:6443"), "10.98.0.1");
  assert.equal(serverHost(" https://[FD00::1]:6443/ "), "fd00::1");
  assert.equal(serverHost("https://api.example.test"), "api.example.test");
  assert.equal(serverHost("not a url"), undefined);
  assert.equal(serverHost(""), undefined);
});

Deno.test("kubeconfigServers() finds every cluster's server in YAML and JSON kubeconfigs", () => {
  const yaml = `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: AAAA
    server: https://10.98.0.1:6443
  name: a
- cluster:
    server: "https://[fd00::1]:6443"
  name: b
users: []
`;
  assert.deepEqual(kubeconfigServers(yaml), ["https://10.98.0.1:6443", "https://[fd00::1]:6443"]);
  const json = '{"clusters":[{"cluster":{"server":"https://api.test:443"},"name":"x"}]}';
  assert.deepEqual(kubeconfigServers(json), ["https://api.test:443"]);
  assert.deepEqual(kubeconfigServers("users: []\n"), []);
  assert.deepEqual(kubeconfigHosts(yaml + "- cluster:\n    server: not-a-url\n"), [
    "10.98.0.1",
    "fd00::1",
  ]);
});

Deno.test("kubeconfigFlag() finds --kubeconfig on a kubelet's command line, either form", () => {
  assert.equal(
    kubeconfigFlag(["/usr/bin/kubelet", "--v=2", "--kubeconfig=/etc/kubernetes/kubelet.conf"]),
    "/etc/kubernetes/kubelet.conf",
  );
  assert.equal(kubeconfigFlag(["kubelet", "--kubeconfig", "/k.conf", "--v=2"]), "/k.conf");
  assert.equal(kubeconfigFlag(["kubelet", "--bootstrap-kubeconfig=/b.conf"]), undefined);
  assert.equal(kubeconfigFlag(["kubelet", "--kubeconfig"]), undefined);
});

/** A source whose answer the test sets; `answer` throwing plays a failed read. */
function source(name: string, answer: () => string[]): ApiServerSource {
  return { name, read: () => Promise.resolve().then(answer) };
}

function world(sources: ApiServerSource[], names: Record<string, string[]> = {}) {
  const { clock, timers } = fakeTime();
  const { lines, logger } = recordingLogger();
  const failing: number[] = [];
  const resolved: string[] = [];
  const api = new ApiServerAddresses({
    sources,
    resolve: (name) => {
      resolved.push(name);
      return name in names
        ? Promise.resolve(names[name])
        : Promise.reject(new Error(`getaddrinfo ENOTFOUND ${name}`));
    },
    timers,
    intervalMs: 300_000,
    retryMs: 30_000,
    onRefresh: (n) => failing.push(n),
    logger,
  });
  return { clock, api, failing, resolved, lines };
}

Deno.test("ApiServerAddresses holds every source's addresses canonical, resolves names, leaves out loopback", async () => {
  const w = world([
    source("agent-kubeconfig", () => ["127.0.0.1"]),
    source("kubernetes-service", () => ["10.96.0.1", "FD00:96::1"]),
    source("kubernetes-endpointslice", () => ["10.98.0.1"]),
    source("kubelet-kubeconfig", () => ["api.cluster.test"]),
  ], { "api.cluster.test": ["10.98.0.2", "10.98.0.1"] });
  assert.deepEqual([...w.api.read()], [], "nothing before the first read");
  await w.api.refresh();
  assert.deepEqual([...w.api.read()].sort(), ["10.96.0.1", "10.98.0.1", "10.98.0.2", "fd00:96::1"]);
  assert.deepEqual(w.resolved, ["api.cluster.test"]);
  assert.deepEqual(w.failing, [0]);
  const view = w.api.view();
  assert.deepEqual(view.addresses, ["10.96.0.1", "10.98.0.1", "10.98.0.2", "fd00:96::1"]);
  assert.deepEqual(view.sources.map((s) => [s.name, s.addresses, s.error]), [
    ["agent-kubeconfig", [], undefined],
    ["kubernetes-service", ["10.96.0.1", "fd00:96::1"], undefined],
    ["kubernetes-endpointslice", ["10.98.0.1"], undefined],
    ["kubelet-kubeconfig", ["10.98.0.1", "10.98.0.2"], undefined],
  ]);
});

Deno.test("ApiServerAddresses keeps a failing source's last addresses (fail closed), warns once per error and counts it", async () => {
  let service: () => string[] = () => ["10.96.0.1"];
  let endpoints: () => string[] = () => {
    throw new Error("endpoints default/kubernetes is forbidden");
  };
  const w = world([
    source("kubernetes-service", () => service()),
    source("kubernetes-endpointslice", () => endpoints()),
  ]);
  await w.api.refresh();
  assert.deepEqual([...w.api.read()], ["10.96.0.1"]);
  assert.deepEqual(w.failing, [1]);
  assert.equal(w.api.view().sources[1].neverRead, true);
  assert.match(w.api.view().sources[1].error ?? "", /forbidden/);
  endpoints = () => ["10.98.0.1"];
  await w.api.refresh();
  assert.deepEqual([...w.api.read()].sort(), ["10.96.0.1", "10.98.0.1"]);
  assert.deepEqual(w.failing, [1, 0]);
  // Both fail now: nothing is released.
  service = () => {
    throw new Error("connection refused");
  };
  endpoints = service;
  await w.api.refresh();
  await w.api.refresh();
  assert.deepEqual([...w.api.read()].sort(), ["10.96.0.1", "10.98.0.1"]);
  assert.deepEqual(w.failing, [1, 0, 2, 2]);
  const view = w.api.view();
  assert.deepEqual(view.sources.map((s) => [s.addresses, s.error, s.neverRead]), [
    [["10.96.0.1"], "connection refused", undefined],
    [["10.98.0.1"], "connection refused", undefined],
  ]);
  const warnings = w.lines.filter((l) => l.startsWith("warning: "));
  assert.equal(warnings.length, 3, warnings.join("\n"));
  assert.match(
    warnings[0],
    /kubernetes-endpointslice failed: .*forbidden.*holding the ones it gave last \(none\)/,
  );
  assert.match(
    warnings[2],
    /kubernetes-endpointslice failed: connection refused; holding .*10\.98\.0\.1/,
  );
});

Deno.test("ApiServerAddresses takes a name that resolves to nothing, or does not resolve, as a failed read", async () => {
  const w = world([source("kubelet-kubeconfig", () => ["gone.test"])], { "gone.test": [] });
  await w.api.refresh();
  assert.match(w.api.view().sources[0].error ?? "", /"gone\.test" resolves to no address/);
  const v = world([source("kubelet-kubeconfig", () => ["nowhere.test"])]);
  await v.api.refresh();
  assert.match(v.api.view().sources[0].error ?? "", /ENOTFOUND nowhere\.test/);
  assert.deepEqual(v.failing, [1]);
});

Deno.test("ApiServerAddresses keeps at most MAX_SOURCE_ADDRESSES of one source", async () => {
  const many = Array.from(
    { length: MAX_SOURCE_ADDRESSES + 10 },
    (_, i) => `10.98.${i >> 8}.${i & 255}`,
  );
  const w = world([source("kubernetes-endpointslice", () => many)]);
  await w.api.refresh();
  assert.equal(w.api.read().size, MAX_SOURCE_ADDRESSES);
});

Deno.test("ApiServerAddresses reads at start and every interval until stopped", async () => {
  let reads = 0;
  const w = world([source("kubernetes-service", () => {
    reads++;
    return [`10.96.0.${reads}`];
  })]);
  await w.api.start();
  assert.equal(reads, 1);
  assert.deepEqual([...w.api.read()], ["10.96.0.1"]);
  await w.clock.tickAsync(299_999);
  assert.equal(reads, 1);
  await w.clock.tickAsync(1);
  assert.equal(reads, 2);
  assert.deepEqual([...w.api.read()].sort(), ["10.96.0.1", "10.96.0.2"]);
  w.api.stop();
  await w.clock.tickAsync(600_000);
  assert.equal(reads, 2);
});

Deno.test("ApiServerAddresses holds an address a successful read lacks until a read one full interval after the first that lacked it", async () => {
  let named = ["10.98.0.1", "10.98.0.2"];
  const w = world([source("kubernetes-endpointslice", () => named)]);
  await w.api.start();
  named = ["10.98.0.2"];
  await w.clock.tickAsync(300_000);
  assert.deepEqual([...w.api.read()].sort(), ["10.98.0.1", "10.98.0.2"], "held after one read");
  assert.deepEqual(w.api.view().sources[0], {
    name: "kubernetes-endpointslice",
    addresses: ["10.98.0.1", "10.98.0.2"],
    leaving: ["10.98.0.1"],
  });
  // Reads in between (a kubelet's new pid, a retry) do not confirm it.
  await w.clock.tickAsync(30_000);
  await w.api.refresh();
  await w.clock.tickAsync(269_999);
  await w.api.refresh();
  assert.deepEqual([...w.api.read()].sort(), ["10.98.0.1", "10.98.0.2"], "held 1 ms short");
  // The next full refresh, 5 min after the read that first lacked it, releases it.
  await w.clock.tickAsync(1);
  assert.deepEqual([...w.api.read()], ["10.98.0.2"]);
  assert.deepEqual(w.api.view().sources[0].leaving, undefined);
  assert.equal(
    w.lines.filter((l) => /no longer names 10\.98\.0\.1.* held until/.test(l)).length,
    1,
  );
  assert.equal(
    w.lines.filter((l) => /still does not name 10\.98\.0\.1.*released/.test(l)).length,
    1,
  );
  w.api.stop();
});

Deno.test("ApiServerAddresses counts an address's absence again from the start once a read names it", async () => {
  let named = ["10.98.0.1"];
  const w = world([source("kubelet-kubeconfig", () => named)]);
  await w.api.refresh();
  named = [];
  await w.api.refresh();
  await w.clock.tickAsync(200_000);
  named = ["10.98.0.1"];
  await w.api.refresh();
  assert.equal(w.api.view().sources[0].leaving, undefined, "named again: not leaving");
  named = [];
  await w.clock.tickAsync(100_000);
  await w.api.refresh();
  await w.clock.tickAsync(299_999);
  await w.api.refresh();
  assert.deepEqual([...w.api.read()], ["10.98.0.1"], "absent for 299.999 s since it was named");
  await w.clock.tickAsync(1);
  await w.api.refresh();
  assert.deepEqual([...w.api.read()], []);
});

Deno.test("ApiServerAddresses never confirms a removal by a failed read", async () => {
  let answer: () => string[] = () => ["10.98.0.1"];
  const w = world([source("kubernetes-endpointslice", () => answer())]);
  await w.api.refresh();
  answer = () => [];
  await w.api.refresh();
  answer = () => {
    throw new Error("connection refused");
  };
  await w.clock.tickAsync(600_000);
  await w.api.refresh();
  assert.deepEqual([...w.api.read()], ["10.98.0.1"], "a failed read confirms nothing");
  answer = () => [];
  await w.api.refresh();
  assert.deepEqual([...w.api.read()], [], "the next successful read does, a full interval on");
});

Deno.test("ApiServerAddresses.refresh() asked during a refresh reads once more after it, once for every such ask", async () => {
  let reads = 0;
  let kubelet = "10.98.0.1";
  const w = world([source("kubelet-kubeconfig", () => {
    reads++;
    return [kubelet];
  })]);
  const first = w.api.refresh();
  // The kubelet changed after the running refresh read its kubeconfig.
  kubelet = "10.98.0.2";
  const again = [w.api.refresh(), w.api.refresh()];
  await Promise.all([first, ...again]);
  assert.equal(reads, 2);
  assert.deepEqual([...w.api.read()], ["10.98.0.2"]);
});

Deno.test("ApiServerAddresses takes a name whose resolution hangs as a failed read, keeping what the source gave last", async () => {
  let hang = false;
  const { clock, timers } = fakeTime();
  const api = new ApiServerAddresses({
    sources: [source("kubelet-kubeconfig", () => ["api.cluster.test"])],
    resolve: () => hang ? new Promise(() => {}) : Promise.resolve(["10.98.0.1"]),
    timers,
    logger: recordingLogger().logger,
  });
  await api.refresh();
  hang = true;
  const refresh = api.refresh();
  await clock.tickAsync(RESOLVE_MS);
  await refresh;
  assert.match(api.view().sources[0].error ?? "", /resolving "api\.cluster\.test" got no answer/);
  assert.deepEqual([...api.read()], ["10.98.0.1"]);
});

Deno.test("ApiServerAddresses reads again after the retry interval while a source fails, then at the full interval", async () => {
  let reads = 0;
  let fail = true;
  const w = world([source("kubernetes-service", () => {
    reads++;
    if (fail) throw new Error("forbidden");
    return ["10.96.0.1"];
  })]);
  await w.api.start();
  await w.clock.tickAsync(30_000);
  assert.equal(reads, 2, "retried 30 s after the failed read");
  fail = false;
  await w.clock.tickAsync(30_000);
  assert.equal(reads, 3);
  assert.deepEqual([...w.api.read()], ["10.96.0.1"]);
  await w.clock.tickAsync(299_999);
  assert.equal(reads, 3, "then every 5 min");
  await w.clock.tickAsync(1);
  assert.equal(reads, 4);
  w.api.stop();
});
