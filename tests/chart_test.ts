/**
 * The Helm chart (deploy/helm/lace) rendered by the real helm, the CNI conflist and the systemd
 * unit. helm comes from scripts/install_helm.sh; without it the chart tests are skipped.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { listenUnixSocket } from "../lib/unix_socket.ts";
import {
  CHART,
  envOf,
  findHelm,
  helm,
  type Manifest,
  only,
  render,
  REPO,
  templateArgs,
} from "./helpers/helm.ts";

const HELM = findHelm();
const noHelm = HELM === undefined;
const helmTest = (name: string, fn: (helm: string) => Promise<void>) =>
  Deno.test({
    name: noHelm ? `${name} (skipped: helm not found; run scripts/install_helm.sh)` : name,
    ignore: noHelm,
    fn: () => fn(HELM!),
  });

const DEFAULT_KUBELET_CGROUP = "/sys/fs/cgroup/system.slice/kubelet.service";
const AGENT_CAPABILITIES = ["BPF", "NET_ADMIN", "PERFMON", "SYS_ADMIN"];

function podSpec(manifests: Manifest[]): Manifest {
  return only(manifests, "DaemonSet").spec.template.spec;
}

function agent(manifests: Manifest[]): Manifest {
  const found = podSpec(manifests).containers.filter((c: Manifest) => c.name === "agent");
  assert.equal(found.length, 1, "one agent container");
  return found[0];
}

/** Where a volume is mounted in the agent and which host path backs it. */
function mountOf(manifests: Manifest[], mountPath: string) {
  const mount = agent(manifests).volumeMounts.find((m: Manifest) => m.mountPath === mountPath);
  assert.ok(mount, `agent mounts ${mountPath}`);
  const volume = podSpec(manifests).volumes.find((v: Manifest) => v.name === mount.name);
  return { mount, hostPath: volume?.hostPath?.path as string | undefined };
}

async function refusal(helmBin: string, overrides: string[]): Promise<string> {
  const result = await helm(helmBin, templateArgs(overrides));
  assert.notEqual(result.code, 0, `helm should refuse ${overrides.join(" ")}`);
  return result.stderr;
}

helmTest("helm lint passes on the chart in strict mode", async (h) => {
  const result = await helm(h, ["lint", "--strict", CHART, "--kube-version", "1.31.0"]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
});

helmTest("helm refuses values that break the schema", async (h) => {
  const cases: [string[], RegExp][] = [
    [["node.kubeletCgroupPath=system.slice/kubelet.service"], /kubeletCgroupPath/],
    [["node.kubeletCgroup=/sys/fs/cgroup/x"], /additional propert|kubeletCgroup/i],
    [["node.metricsPort=http"], /metricsPort/],
    [["node.healthPort=0"], /healthPort/],
    [["node.markShift=17"], /markShift/],
    [["node.addressConflict=newer-wins"], /addressConflict/],
    [["node.addressSharing=sometimes"], /addressSharing/],
    [["node.maxTargetsPerPod=0"], /maxTargetsPerPod/],
    [["node.probeMark=0x0"], /probeMark/],
    [["node.cni.binDir=opt/cni/bin"], /binDir/],
    [["capabilities={CAP_BPF}"], /capabilities/],
    [['admissionPolicy.validationActions:=["Deny","Warn"]'], /validationActions/],
    [["privileged=maybe"], /privileged/],
    [["nodes.pinPath=/sys/fs/bpf/x"], /additional propert.*nodes/i],
    [['admissionPolicy.networkAnnotationWriters:=["a b"]'], /networkAnnotationWriters/],
    [['admissionPolicy.networkAnnotationWriters:=["x\\"y"]'], /networkAnnotationWriters/],
    [["admissionPolicy.networkAnnotationWriters=none"], /networkAnnotationWriters/],
    [["node.lifecycleHooks=maybe"], /lifecycleHooks/],
  ];
  for (const [overrides, message] of cases) {
    const stderr = await refusal(h, overrides);
    assert.match(stderr, /schema/, stderr);
    assert.match(stderr, message, overrides.join(" "));
  }
});

helmTest("a health port equal to the metrics port is refused with a reason", async (h) => {
  const stderr = await refusal(h, ["node.healthPort=9808"]);
  assert.match(stderr, /node.healthPort must differ from node.metricsPort: 9808/);
});

helmTest(
  "a kubelet cgroup outside the mounted /sys/fs/cgroup is refused with a reason",
  async (h) => {
    const stderr = await refusal(h, ["node.kubeletCgroupPath=/run/cgroup2/kubelet"]);
    assert.match(stderr, /must be under \/sys\/fs\/cgroup.*"\/run\/cgroup2\/kubelet"/);
  },
);

helmTest(
  "the DaemonSet passes the conflict and address-sharing policies and the per-pod target cap to the agent",
  async (h) => {
    const defaults = agent(await render(h));
    assert.equal(envOf(defaults, "LACE_ADDRESS_CONFLICT"), "fail-closed");
    assert.equal(envOf(defaults, "LACE_ADDRESS_SHARING"), "exclusive");
    assert.equal(envOf(defaults, "LACE_MAX_TARGETS_PER_POD"), "64");
    const set = agent(
      await render(h, [
        "node.addressConflict=older-wins",
        "node.maxTargetsPerPod=128",
        "node.addressSharing=shared",
      ]),
    );
    assert.equal(envOf(set, "LACE_ADDRESS_SHARING"), "shared");
    assert.equal(envOf(set, "LACE_ADDRESS_CONFLICT"), "older-wins");
    assert.equal(envOf(set, "LACE_MAX_TARGETS_PER_POD"), "128");
  },
);

helmTest(
  "the DaemonSet turns lifecycle hooks' targets on by default, and off with node.lifecycleHooks",
  async (h) => {
    assert.equal(envOf(agent(await render(h)), "LACE_LIFECYCLE_HOOKS"), "true");
    const off = agent(await render(h, ["node.lifecycleHooks=false"]));
    assert.equal(envOf(off, "LACE_LIFECYCLE_HOOKS"), "false");
  },
);

helmTest("the DaemonSet passes the pod CIDRs to the agent, comma-separated", async (h) => {
  assert.equal(envOf(agent(await render(h)), "LACE_POD_CIDRS"), "");
  const set = agent(await render(h, ["node.podCIDRs={10.244.0.0/16,fd00:10:244::/56}"]));
  assert.equal(envOf(set, "LACE_POD_CIDRS"), "10.244.0.0/16,fd00:10:244::/56");
});

helmTest("the DaemonSet passes the default kubelet cgroup to the agent", async (h) => {
  assert.equal(envOf(agent(await render(h)), "LACE_KUBELET_CGROUP"), DEFAULT_KUBELET_CGROUP);
});

helmTest("the DaemonSet passes an overridden kubelet cgroup to the agent", async (h) => {
  for (const path of ["/sys/fs/cgroup/system.slice/k3s-agent.service", "auto"]) {
    const manifests = await render(h, [`node.kubeletCgroupPath=${path}`]);
    assert.equal(envOf(agent(manifests), "LACE_KUBELET_CGROUP"), path);
  }
});

helmTest("the agent sees the host cgroup2 hierarchy under its host cgroup root", async (h) => {
  for (const root of ["/host", "/hostfs"]) {
    const manifests = await render(h, [`node.hostCgroupRoot=${root}`]);
    assert.equal(envOf(agent(manifests), "LACE_HOST_CGROUP_ROOT"), root);
    const { mount, hostPath } = mountOf(manifests, `${root}/sys/fs/cgroup`);
    assert.equal(hostPath, "/sys/fs/cgroup");
    assert.equal(mount.mountPropagation, "HostToContainer");
  }
});

helmTest("the agent mounts the host's bpffs and the CNI socket directory", async (h) => {
  const manifests = await render(h);
  const bpffs = mountOf(manifests, "/sys/fs/bpf");
  assert.equal(bpffs.hostPath, "/sys/fs/bpf");
  assert.equal(bpffs.mount.mountPropagation, "HostToContainer");
  assert.equal(mountOf(manifests, "/run/lace").hostPath, "/run/lace");
  assert.equal(envOf(agent(manifests), "LACE_CNI_SOCKET"), "/run/lace/cni.sock");
  assert.equal(envOf(agent(manifests), "LACE_PIN_PATH"), "/sys/fs/bpf/lace");
});

helmTest(
  "the agent chains into the host's CNI configuration by default, which it mounts",
  async (h) => {
    const manifests = await render(h);
    const c = agent(manifests);
    assert.equal(envOf(c, "LACE_CNI_CHAINING"), "auto");
    assert.equal(envOf(c, "LACE_CNI_CONF_DIR"), "/etc/cni/net.d");
    assert.equal(envOf(c, "LACE_CNI_CHAIN_FILES"), "");
    assert.equal(envOf(c, "LACE_DAEMONSET"), "lace-system/lace");
    assert.equal(mountOf(manifests, "/etc/cni/net.d").hostPath, "/etc/cni/net.d");
    assert.equal(mountOf(manifests, "/var/lib/lace/cni").hostPath, "/var/lib/lace/cni");
    const set = agent(
      await render(h, [
        "node.cni.chaining=manual",
        "node.cni.confDir=/var/lib/rancher/k3s/agent/etc/cni/net.d",
        "node.cni.chainFiles={10-flannel.conflist,20-*.conflist=blue:7}",
      ]),
    );
    assert.equal(envOf(set, "LACE_CNI_CHAINING"), "manual");
    assert.equal(envOf(set, "LACE_CNI_CONF_DIR"), "/var/lib/rancher/k3s/agent/etc/cni/net.d");
    assert.equal(envOf(set, "LACE_CNI_CHAIN_FILES"), "10-flannel.conflist,20-*.conflist=blue:7");
  },
);

helmTest(
  "the agent may read its own DaemonSet and no other (to tell an uninstall from a restart)",
  async (h) => {
    const manifests = await render(h);
    const role = only(manifests, "Role");
    assert.equal(role.metadata.namespace, "lace-system");
    assert.deepEqual(role.rules, [
      {
        apiGroups: ["apps"],
        resources: ["daemonsets"],
        resourceNames: ["lace"],
        verbs: ["get", "list", "watch"],
      },
    ]);
    const binding = only(manifests, "RoleBinding");
    assert.equal(binding.roleRef.name, role.metadata.name);
    assert.deepEqual(binding.subjects, [
      { kind: "ServiceAccount", name: "lace", namespace: "lace-system" },
    ]);
  },
);

helmTest("helm refuses a chaining mode or a chain file it does not know", async (h) => {
  assert.match(await refusal(h, ["node.cni.chaining=always"]), /chaining/);
  assert.match(await refusal(h, ["node.cni.chainFiles={../etc/x.conflist}"]), /chainFiles/);
});

helmTest(
  "finding 8: the chart's socket directory ends 0700 once the agent listens, though the " +
    "kubelet creates its hostPath 0755",
  async (h) => {
    const manifests = await render(h);
    const runLace = podSpec(manifests).volumes.find((v: Manifest) => v.name === "run-lace");
    assert.equal(runLace.hostPath.type, "DirectoryOrCreate");
    const sockets = ["LACE_CNI_SOCKET", "LACE_AGENT_SOCKET"].map((n) => envOf(agent(manifests), n));
    const { mount, hostPath } = mountOf(manifests, runLace.hostPath.path);
    assert.equal(hostPath, mount.mountPath, "the agent sees the host directory at the same path");
    // The node: the kubelet's DirectoryOrCreate (0755), then the agent's two listeners.
    const node = await Deno.makeTempDir({ prefix: "lace-chart-node-" });
    try {
      await Deno.mkdir(`${node}${hostPath}`, { recursive: true, mode: 0o755 });
      await Deno.chmod(`${node}${hostPath}`, 0o755);
      for (const socket of sockets) {
        assert.equal(typeof socket, "string");
        assert.equal(dirname(socket as string), mount.mountPath, `${socket} is in the volume`);
        const listening = await listenUnixSocket(`${node}${socket}`, "--cni-socket");
        listening.listener.close();
        listening.remove();
      }
      assert.equal(Deno.statSync(`${node}${hostPath}`).mode! & 0o7777, 0o700);
    } finally {
      await Deno.remove(node, { recursive: true });
    }
  },
);

const asRootWithUnshare = Deno.uid() === 0 && !noHelm;
Deno.test({
  name: "finding 3: the chart's mountBpffs, run as rendered, mounts bpffs 0700" +
    (asRootWithUnshare ? "" : " (skipped: needs root and helm)"),
  ignore: !asRootWithUnshare,
  async fn() {
    const spec = podSpec(await render(HELM!, ["node.mountBpffs=true"]));
    const init = spec.initContainers.find((c: Manifest) => c.name === "mount-bpffs");
    assert.deepEqual(init.command, ["/bin/sh", "-c"]);
    // In a mount namespace of its own, with the host's bpffs unmounted there: the host's mounts
    // stay as they are.
    const out = await new Deno.Command("unshare", {
      args: [
        "--mount",
        "--propagation=private",
        "sh",
        "-c",
        'umount -l /sys/fs/bpf 2>/dev/null; /bin/sh -c "$1" && stat -c %a /sys/fs/bpf',
        "sh",
        init.args[0],
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder();
    assert.equal(out.code, 0, text.decode(out.stderr));
    // bpffs always adds the sticky bit: 1700.
    assert.equal(parseInt(text.decode(out.stdout), 8) & 0o777, 0o700, text.decode(out.stdout));
  },
});

helmTest("the agent gets exactly its capabilities and is not privileged", async (h) => {
  const security = agent(await render(h)).securityContext;
  assert.equal(security.privileged, false);
  assert.deepEqual(security.capabilities.drop, ["ALL"]);
  assert.deepEqual([...security.capabilities.add].sort(), AGENT_CAPABILITIES);
  assert.equal(security.runAsUser, 0);
  assert.equal(security.readOnlyRootFilesystem, true);
  // With SYS_ADMIN, no_new_privs is no boundary; the chart does not pretend it is.
  assert.equal(security.allowPrivilegeEscalation, true);
});

helmTest("without SYS_ADMIN the agent runs with no_new_privs", async (h) => {
  const security = agent(await render(h, ["capabilities={BPF,NET_ADMIN,PERFMON}"])).securityContext;
  assert.deepEqual([...security.capabilities.add].sort(), ["BPF", "NET_ADMIN", "PERFMON"]);
  assert.equal(security.allowPrivilegeEscalation, false);
});

helmTest("privileged=true runs the agent privileged with bidirectional bpffs", async (h) => {
  const manifests = await render(h, ["privileged=true"]);
  const security = agent(manifests).securityContext;
  assert.equal(security.privileged, true);
  assert.equal(security.capabilities, undefined);
  assert.equal(mountOf(manifests, "/sys/fs/bpf").mount.mountPropagation, "Bidirectional");
});

helmTest("the agent runs in the host network and PID namespace on every node", async (h) => {
  const spec = podSpec(await render(h));
  assert.equal(spec.hostNetwork, true);
  assert.equal(spec.hostPID, true);
  assert.equal(spec.priorityClassName, "system-node-critical");
  assert.deepEqual(spec.tolerations, [{ operator: "Exists" }]);
  assert.equal(spec.serviceAccountName, "lace");
});

helmTest(
  "the agent learns its node name, serves metrics on the node IP and health to its probes on loopback (issue 24, finding 1)",
  async (h) => {
    const manifests = await render(h);
    const c = agent(manifests);
    assert.deepEqual(envOf(c, "NODE_NAME"), { fieldRef: { fieldPath: "spec.nodeName" } });
    assert.deepEqual(envOf(c, "HOST_IP"), { fieldRef: { fieldPath: "status.hostIP" } });
    assert.equal(envOf(c, "LACE_METRICS_ADDR"), "$(HOST_IP):9808");
    // Kubernetes expands $(HOST_IP) only from variables defined earlier in the list.
    const names = c.env.map((e: Manifest) => e.name);
    assert.ok(names.indexOf("HOST_IP") < names.indexOf("LACE_METRICS_ADDR"));
    assert.deepEqual(c.ports, [{ name: "metrics", containerPort: 9808, protocol: "TCP" }]);
    // The kubelet probes the agent where no pod can reach: a loopback listener of health alone.
    assert.equal(envOf(c, "LACE_HEALTH_ADDR"), "127.0.0.1:9809");
    assert.deepEqual(c.livenessProbe.httpGet, { host: "127.0.0.1", path: "/healthz", port: 9809 });
    assert.deepEqual(c.readinessProbe.httpGet, { host: "127.0.0.1", path: "/readyz", port: 9809 });

    const moved = agent(
      await render(h, ["node.metricsHost=[::]", "node.metricsPort=9900", "node.healthPort=9901"]),
    );
    assert.equal(envOf(moved, "LACE_METRICS_ADDR"), "[::]:9900");
    assert.equal(envOf(moved, "LACE_HEALTH_ADDR"), "127.0.0.1:9901");
    assert.equal(moved.livenessProbe.httpGet.port, 9901);
  },
);

helmTest("RBAC grants exactly the verbs the agent uses", async (h) => {
  const manifests = await render(h);
  const grants = only(manifests, "ClusterRole").rules.flatMap((rule: Manifest) =>
    rule.apiGroups.flatMap((group: string) =>
      rule.resources.flatMap((resource: string) =>
        rule.verbs.map((verb: string) => `${group}/${resource}:${verb}`)
      )
    )
  ).sort();
  assert.deepEqual(grants, [
    "/events:create",
    "/events:patch",
    "/nodes:get",
    "/pods:get",
    "/pods:list",
    "/pods:watch",
  ]);
  const binding = only(manifests, "ClusterRoleBinding");
  assert.equal(binding.roleRef.name, only(manifests, "ClusterRole").metadata.name);
  assert.deepEqual(binding.subjects, [
    { kind: "ServiceAccount", name: "lace", namespace: "lace-system" },
  ]);
  assert.equal(only(manifests, "ServiceAccount").metadata.name, "lace");
});

const HOST_POLICY = "lace-probe-host";
const ANNOTATION_POLICY = "lace-network-annotations";

/** A policy's CEL variables by name. */
function variablesOf(policy: Manifest): Record<string, string> {
  return Object.fromEntries(policy.spec.variables.map((v: Manifest) => [v.name, v.expression]));
}

helmTest("the admission policy is rendered by default and exempts kube-system", async (h) => {
  const manifests = await render(h);
  const policy = only(manifests, "ValidatingAdmissionPolicy", HOST_POLICY);
  assert.equal(policy.apiVersion, "admissionregistration.k8s.io/v1");
  const offenders = policy.spec.variables.find((v: Manifest) => v.name === "offenders").expression;
  for (const probe of ["livenessProbe", "readinessProbe", "startupProbe"]) {
    assert.match(offenders, new RegExp(`has\\(c\\.${probe}\\.httpGet\\.host\\)`));
    assert.match(offenders, new RegExp(`has\\(c\\.${probe}\\.tcpSocket\\.host\\)`));
  }
  assert.match(policy.spec.variables[0].expression, /initContainers/);
  assert.match(policy.spec.validations[0].expression, /object\.spec\.hostNetwork/);
  const binding = only(manifests, "ValidatingAdmissionPolicyBinding", HOST_POLICY);
  assert.equal(binding.spec.policyName, policy.metadata.name);
  assert.deepEqual(binding.spec.validationActions, ["Deny"]);
  assert.deepEqual(binding.spec.matchResources.namespaceSelector.matchExpressions, [
    { key: "kubernetes.io/metadata.name", operator: "NotIn", values: ["kube-system"] },
  ]);
});

helmTest("the admission policy follows its values", async (h) => {
  const off = await render(h, ["admissionPolicy.enabled=false"]);
  assert.equal(off.filter((m) => m.kind.startsWith("ValidatingAdmissionPolicy")).length, 0);
  const exempt = await render(h, ['admissionPolicy.exemptNamespaces:=["kube-system","infra"]']);
  const selector = only(exempt, "ValidatingAdmissionPolicyBinding", HOST_POLICY).spec
    .matchResources.namespaceSelector;
  assert.deepEqual(selector.matchExpressions[0].values, ["kube-system", "infra"]);
  const none = await render(h, ["admissionPolicy.exemptNamespaces:=[]"]);
  assert.equal(
    only(none, "ValidatingAdmissionPolicyBinding", HOST_POLICY).spec.matchResources,
    undefined,
  );
});

helmTest(
  "the network annotation policy guards the default keys on create and update, in every namespace",
  async (h) => {
    const manifests = await render(h);
    const policy = only(manifests, "ValidatingAdmissionPolicy", ANNOTATION_POLICY);
    assert.equal(policy.spec.failurePolicy, "Fail");
    const rule = policy.spec.matchConstraints.resourceRules[0];
    assert.deepEqual(rule.operations, ["CREATE", "UPDATE"]);
    assert.ok(rule.resources.includes("pods") && rule.resources.includes("pods/status"));
    // A Binding's annotations are copied onto the pod (issue 24, finding 7).
    const bindings = policy.spec.matchConstraints.resourceRules[1];
    assert.deepEqual(bindings.operations, ["CREATE"]);
    assert.deepEqual(bindings.resources, ["pods/binding", "bindings"]);
    const vars = variablesOf(policy);
    assert.deepEqual(JSON.parse(vars.keys), ["lace.io/network", "lace.io/network-id"]);
    assert.deepEqual(JSON.parse(vars.writers), ["system:serviceaccount:kube-system:lace-cni"]);
    assert.match(policy.spec.validations[0].expression, /request\.userInfo\.username in/);
    const binding = only(manifests, "ValidatingAdmissionPolicyBinding", ANNOTATION_POLICY);
    assert.equal(binding.spec.policyName, ANNOTATION_POLICY);
    assert.deepEqual(binding.spec.validationActions, ["Deny"]);
    // kube-system is exempt from the host rule only: no namespace may spoof a network.
    assert.equal(binding.spec.matchResources, undefined);
  },
);

helmTest("the network annotation policy follows the annotation keys and writers", async (h) => {
  const manifests = await render(h, [
    "node.annotations.network=example.com/net",
    "node.annotations.networkId=example.com/net-id",
    'admissionPolicy.networkAnnotationWriters:=["system:serviceaccount:net:plugin","alice"]',
    'admissionPolicy.validationActions:=["Warn","Audit"]',
  ]);
  const vars = variablesOf(only(manifests, "ValidatingAdmissionPolicy", ANNOTATION_POLICY));
  assert.deepEqual(JSON.parse(vars.keys), ["example.com/net", "example.com/net-id"]);
  assert.deepEqual(JSON.parse(vars.writers), ["system:serviceaccount:net:plugin", "alice"]);
  const binding = only(manifests, "ValidatingAdmissionPolicyBinding", ANNOTATION_POLICY);
  assert.deepEqual(binding.spec.validationActions, ["Warn", "Audit"]);
  const none = await render(h, ["admissionPolicy.networkAnnotationWriters:=[]"]);
  const noWriters = variablesOf(only(none, "ValidatingAdmissionPolicy", ANNOTATION_POLICY));
  assert.deepEqual(JSON.parse(noWriters.writers), []);
});

helmTest(
  "the CNI plugin is installed into the host's CNI bin directory when enabled",
  async (h) => {
    const spec = podSpec(await render(h, ["node.cni.binDir=/var/lib/cni/bin"]));
    const init = spec.initContainers.find((c: Manifest) => c.name === "install-cni");
    assert.ok(init, "install-cni init container");
    const volume = spec.volumes.find((v: Manifest) => v.name === init.volumeMounts[0].name);
    assert.equal(volume.hostPath.path, "/var/lib/cni/bin");
    assert.match(init.args[0], new RegExp(`mv -f ${init.volumeMounts[0].mountPath}/\\.lace\\.new`));
    assert.deepEqual(init.securityContext.capabilities.drop, ["ALL"]);

    const off = podSpec(await render(h, ["node.cni.enabled=false"]));
    assert.equal(off.initContainers, undefined);
    assert.equal(off.volumes.some((v: Manifest) => v.hostPath?.path === "/opt/cni/bin"), false);
  },
);

Deno.test("the example conflist chains the lace plugin after the network plugin", async () => {
  const conflist = JSON.parse(await Deno.readTextFile(join(REPO, "deploy/cni/10-lace.conflist")));
  assert.equal(conflist.cniVersion, "1.0.0");
  assert.ok(conflist.plugins.length >= 2);
  const last = conflist.plugins.at(-1);
  assert.equal(last.type, "lace");
  assert.equal(last.socket, "/run/lace/cni.sock");
  assert.equal(last.timeout, "1s");
  assert.equal(last.network, conflist.plugins[0].network);
  assert.equal(last.networkId, conflist.plugins[0].networkId);
});

const systemdAnalyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].find((p) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
});

Deno.test({
  name: systemdAnalyze
    ? "the systemd unit passes systemd-analyze verify"
    : "the systemd unit passes systemd-analyze verify (skipped: systemd-analyze not installed)",
  ignore: !systemdAnalyze,
  async fn() {
    // verify also checks that ExecStart exists; the binary is not installed on a build machine,
    // so the copy points at an executable that is.
    const unit = await Deno.readTextFile(join(REPO, "deploy/systemd/lace-agent.service"));
    assert.match(unit, /^ExecStart=\/usr\/local\/bin\/lace agent$/m);
    const dir = await Deno.makeTempDir({ prefix: "lace-unit-" });
    try {
      const path = join(dir, "lace-agent.service");
      await Deno.writeTextFile(
        path,
        unit.replace(/^ExecStart=\/usr\/local\/bin\/lace /m, `ExecStart=${Deno.execPath()} `),
      );
      const out = await new Deno.Command(systemdAnalyze!, {
        args: ["verify", path],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, text);
      assert.doesNotMatch(text, /lace-agent\.service/, text);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
