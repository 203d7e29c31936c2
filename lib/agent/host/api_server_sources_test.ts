import assert from "node:assert/strict";
import {
  agentKubeconfigSource,
  clusterInfoSource,
  type KubeletFiles,
  kubeletKubeconfigSource,
  kubernetesEndpointSliceSource,
  kubernetesServiceSource,
  resolveHost,
} from "./api_server_sources.ts";
import { fakeTime } from "../../../tests/helpers/fake_time.ts";
import { MAX_SOURCE_ADDRESSES } from "./api_server_addresses.ts";

Deno.test("agentKubeconfigSource() gives the host of the agent's server, and fails without one", async () => {
  assert.deepEqual(await agentKubeconfigSource(() => "https://10.96.0.1:443").read(), [
    "10.96.0.1",
  ]);
  await assert.rejects(agentKubeconfigSource(() => undefined).read(), /names no server URL/);
});

Deno.test("kubernetesServiceSource() gives every ClusterIP, else the one, and fails on none", async () => {
  const { timers } = fakeTime();
  const of = (spec: object) => kubernetesServiceSource(() => Promise.resolve({ spec }), timers);
  assert.deepEqual(
    await of({ clusterIP: "10.96.0.1", clusterIPs: ["10.96.0.1", "fd00:96::1"] }).read(),
    ["10.96.0.1", "fd00:96::1"],
  );
  assert.deepEqual(await of({ clusterIP: "10.96.0.1" }).read(), ["10.96.0.1"]);
  await assert.rejects(of({ clusterIP: "None" }).read(), /has no ClusterIP/);
});

/** client-node's ApiException as far as it is read: the status and the body. */
function apiException(code: number, message: string) {
  return Object.assign(new Error(`HTTP-Code: ${code}\nHeaders: {...}`), {
    code,
    body: JSON.stringify({ kind: "Status", message }),
  });
}

Deno.test("the API sources say a failed GET in one line, and take a 404 of the EndpointSlice as none", async () => {
  const { timers } = fakeTime();
  await assert.rejects(
    kubernetesServiceSource(
      () => Promise.reject(apiException(403, 'services "kubernetes" is forbidden')),
      timers,
    ).read(),
    (e: Error) =>
      e.message === 'GET service default/kubernetes: HTTP 403: services "kubernetes" is forbidden',
  );
  await assert.rejects(
    kubernetesServiceSource(() => Promise.reject(apiException(404, "not found")), timers).read(),
    /service default\/kubernetes does not exist/,
  );
  await assert.rejects(
    kubernetesEndpointSliceSource(
      () => Promise.reject(apiException(403, "endpointslices.discovery.k8s.io is forbidden")),
      timers,
    ).read(),
    (e: Error) =>
      e.message ===
        "GET endpointslice default/kubernetes: HTTP 403: endpointslices.discovery.k8s.io is forbidden",
  );
  const none = kubernetesEndpointSliceSource(
    () => Promise.reject(apiException(404, "not found")),
    timers,
  );
  assert.deepEqual(await none.read(), []);
  const refused = kubernetesEndpointSliceSource(
    () => Promise.reject(new Error("ECONNREFUSED")),
    timers,
  );
  await assert.rejects(refused.read(), /ECONNREFUSED/);
});

Deno.test("kubernetesServiceSource() fails a GET that gets no answer in time", async () => {
  const { clock, timers } = fakeTime();
  const read = kubernetesServiceSource(() => new Promise(() => {}), timers).read();
  const rejected = assert.rejects(read, /GET service default\/kubernetes got no answer/);
  await clock.tickAsync(10_000);
  await rejected;
});

Deno.test("kubernetesEndpointSliceSource() gives the kubernetes slice's every endpoint's addresses, ready or not, capped", async () => {
  const { timers } = fakeTime();
  const src = kubernetesEndpointSliceSource(() =>
    Promise.resolve({
      endpoints: [
        { addresses: ["10.98.0.1"], conditions: { ready: true } },
        { addresses: ["10.98.0.2"], conditions: { ready: false } },
        { addresses: ["10.98.0.3"] },
        {},
      ],
    }), timers);
  assert.equal(src.name, "kubernetes-endpointslice");
  assert.deepEqual(await src.read(), ["10.98.0.1", "10.98.0.2", "10.98.0.3"]);
  assert.deepEqual(
    await kubernetesEndpointSliceSource(() => Promise.resolve({}), timers).read(),
    [],
  );
  const many = Array.from({ length: 100 }, (_, i) => ({ addresses: [`10.0.0.${i}`] }));
  const capped = await kubernetesEndpointSliceSource(
    () => Promise.resolve({ endpoints: many }),
    timers,
  ).read();
  assert.equal(capped.length, MAX_SOURCE_ADDRESSES);
});

/** The kubelet's /proc as the test says: its command line and files by path. */
function kubeletFiles(argv: string[] | undefined, files: Record<string, string>): KubeletFiles {
  return {
    cmdline: () => {
      if (!argv) throw new Error("ENOENT: /proc/42/cmdline");
      return argv.join("\0") + "\0";
    },
    readFile: (_pid, path) => {
      if (!(path in files)) throw new Error(`ENOENT: ${path}`);
      return files[path];
    },
  };
}

Deno.test("kubeletKubeconfigSource() reads the servers of the kubeconfig the kubelet's command line names", async () => {
  const files = kubeletFiles(["/usr/bin/kubelet", "--kubeconfig=/etc/kubernetes/kubelet.conf"], {
    "/etc/kubernetes/kubelet.conf": "clusters:\n- cluster:\n    server: https://10.98.0.1:6443\n",
  });
  assert.deepEqual(await kubeletKubeconfigSource(() => 42, files).read(), ["10.98.0.1"]);
});

Deno.test("kubeletKubeconfigSource() names nothing without a kubelet pid or a --kubeconfig, and fails on a file it cannot read", async () => {
  const none = kubeletFiles(["/usr/bin/kubelet", "--v=2"], {});
  assert.deepEqual(await kubeletKubeconfigSource(() => null, none).read(), []);
  assert.deepEqual(await kubeletKubeconfigSource(() => 42, none).read(), []);
  const missing = kubeletFiles(["kubelet", "--kubeconfig", "/gone.conf"], {});
  await assert.rejects(kubeletKubeconfigSource(() => 42, missing).read(), /kubelet's kubeconfig/);
  await assert.rejects(kubeletKubeconfigSource(() => 42, kubeletFiles(undefined, {})).read());
});

Deno.test("kubeletKubeconfigSource() names nothing where the agent may not read the kubelet's files, and says so once", async () => {
  const files: KubeletFiles = {
    cmdline: () => "kubelet\0--kubeconfig=/etc/kubernetes/kubelet.conf\0",
    readFile: () => {
      throw new Deno.errors.PermissionDenied("Permission denied (os error 13)");
    },
  };
  const denied: string[] = [];
  const src = kubeletKubeconfigSource(() => 42, files, (path) => denied.push(path));
  assert.deepEqual(await src.read(), []);
  assert.deepEqual(await src.read(), []);
  assert.deepEqual(denied, ["/etc/kubernetes/kubelet.conf"]);
});

Deno.test("resolveHost() resolves through getaddrinfo (localhost from /etc/hosts)", async () => {
  const addresses = await resolveHost("localhost");
  assert.ok(addresses.some((a) => a === "127.0.0.1" || a === "::1"), addresses.join(","));
});

Deno.test("clusterInfoSource() gives the control-plane endpoint kubeadm publishes, and none without the ConfigMap", async () => {
  const { timers } = fakeTime();
  const kubeconfig =
    'apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: AAAA\n    server: https://10.98.0.100:6443\n  name: ""\n';
  const src = clusterInfoSource(() => Promise.resolve({ data: { kubeconfig } }), timers);
  assert.deepEqual(await src.read(), ["10.98.0.100"]);
  const none = clusterInfoSource(() => Promise.reject(apiException(404, "not found")), timers);
  assert.deepEqual(await none.read(), []);
  const forbidden = clusterInfoSource(() => Promise.reject(apiException(403, "forbidden")), timers);
  await assert.rejects(forbidden.read(), /GET configmap kube-public\/cluster-info: HTTP 403/);
});
