/**
 * The Helm chart (deploy/helm/lace) rendered by the real helm: the values its schema and
 * templates refuse, and what the DaemonSet hands the agent (settings, mounts, CNI chaining, the
 * CNI plugin's install, the socket directory, bpffs). What it grants the agent is in
 * chart_privileges_test.ts, its admission policies in chart_admission_test.ts. helm comes from
 * scripts/install_helm.sh; without it these tests are skipped.
 */
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { parseChainTargets } from "../lib/cni/chaining/select.ts";
import { listenUnixSocket } from "../lib/socket/unix.ts";
import { needsRoot, skipIf, skipName } from "./helpers/skip.ts";
import {
  agent,
  CHART,
  envOf,
  HELM,
  helm,
  HELM_MISSING,
  helmTest,
  type Manifest,
  mountOf,
  only,
  podSpec,
  refusal,
  render,
  templateArgs,
} from "./helpers/helm.ts";

const DEFAULT_KUBELET_CGROUP = "/sys/fs/cgroup/system.slice/kubelet.service";

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
    [
      ['admissionPolicy.validationActions.networkAnnotations:=["Deny","Warn"]'],
      /validationActions/,
    ],
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

helmTest("the DaemonSet keeps revisionHistoryLimit old revisions for a rollback", async (h) => {
  assert.equal(only(await render(h), "DaemonSet").spec.revisionHistoryLimit, 10);
  const three = only(await render(h, ["revisionHistoryLimit=3"]), "DaemonSet");
  assert.equal(three.spec.revisionHistoryLimit, 3);
  assert.match(await refusal(h, ["revisionHistoryLimit=-1"]), /revisionHistoryLimit/);
});

helmTest(
  "a startup probe on the loopback /healthz gives the agent minutes to start, and liveness and readiness start right after it",
  async (h) => {
    const c = agent(await render(h));
    assert.deepEqual(c.startupProbe.httpGet, { host: "127.0.0.1", path: "/healthz", port: 9809 });
    const { periodSeconds, failureThreshold } = c.startupProbe;
    assert.ok(periodSeconds * failureThreshold >= 180, `${periodSeconds} s x ${failureThreshold}`);
    assert.ok(periodSeconds <= 2, "a started agent waits at most 2 s for its readiness probe");
    // The startup probe holds both back until it passes: no delay of their own.
    assert.equal(c.livenessProbe.initialDelaySeconds, undefined);
    assert.equal(c.readinessProbe.initialDelaySeconds, undefined);
    const longer = agent(await render(h, ["startupProbe.failureThreshold=300"]));
    assert.equal(longer.startupProbe.failureThreshold, 300);
    // Kubernetes takes only 1 for a startup probe's successThreshold: refused at install.
    assert.match(await refusal(h, ["startupProbe.successThreshold=2"]), /startupProbe/);
  },
);

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
    assert.equal(envOf(c, "LACE_CONTAINER_RUNTIME"), "auto");
    assert.equal(envOf(c, "LACE_DAEMONSET"), "lace-system/lace");
    assert.equal(mountOf(manifests, "/etc/cni/net.d").hostPath, "/etc/cni/net.d");
    assert.equal(mountOf(manifests, "/var/lib/lace/cni").hostPath, "/var/lib/lace/cni");
    const set = agent(
      await render(h, [
        "node.cni.chaining=manual",
        "node.cni.confDir=/var/lib/rancher/k3s/agent/etc/cni/net.d",
        "node.cni.chainFiles={10-flannel.conflist,20-*.conflist=blue:7}",
        "node.cni.containerRuntime=crio",
      ]),
    );
    assert.equal(envOf(set, "LACE_CONTAINER_RUNTIME"), "crio");
    assert.equal(envOf(set, "LACE_CNI_CHAINING"), "manual");
    assert.equal(envOf(set, "LACE_CNI_CONF_DIR"), "/var/lib/rancher/k3s/agent/etc/cni/net.d");
    assert.equal(envOf(set, "LACE_CNI_CHAIN_FILES"), "10-flannel.conflist,20-*.conflist=blue:7");
  },
);

helmTest(
  "helm refuses a chaining mode, a container runtime, a chain file or a file's network name it does not know",
  async (h) => {
    assert.match(await refusal(h, ["node.cni.chaining=always"]), /chaining/);
    assert.match(await refusal(h, ["node.cni.containerRuntime=docker"]), /containerRuntime/);
    assert.match(await refusal(h, ["node.cni.chainFiles={../etc/x.conflist}"]), /chainFiles/);
    // A file's network name is held to the agent's rule (lib/probe/network_name.ts), at install.
    for (const network of ["blue net", "blue\\u200b", "blue\\u00a0", "x".repeat(254)]) {
      const stderr = await refusal(h, [`node.cni.chainFiles:=["20-x.conflist=${network}:7"]`]);
      assert.match(stderr, /chainFiles/, network);
    }
    const colon = agent(await render(h, ['node.cni.chainFiles:=["20-x.conflist=blå:net:7"]']));
    assert.equal(envOf(colon, "LACE_CNI_CHAIN_FILES"), "20-x.conflist=blå:net:7");
  },
);

helmTest(
  "helm takes a chain file's network id exactly when the agent does: 1..65535, at most 5 digits",
  async (h) => {
    const ids = ["1", "7", "00007", "0100", "9999", "10000", "59999", "65529", "65535"];
    const bad = ["0", "00000", "000007", "65536", "65540", "65600", "66000", "70000", "99999"];
    for (const id of [...ids, ...bad]) {
      const item = `20-x.conflist=blue:${id}`;
      let agentTakes = true;
      try {
        parseChainTargets(item);
      } catch {
        agentTakes = false;
      }
      assert.equal(agentTakes, ids.includes(id), `the agent on ${item}`);
      const result = await helm(h, templateArgs([`node.cni.chainFiles:=["${item}"]`]));
      assert.equal(result.code === 0, agentTakes, `helm on ${item}: ${result.stderr}`);
      if (!agentTakes) assert.match(result.stderr, /chainFiles/);
    }
  },
);

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
    // The agent sees that directory read-only at the host's path, and checks the plugin there.
    const manifests = await render(h, ["node.cni.binDir=/var/lib/cni/bin"]);
    const seen = agent(manifests).volumeMounts.find((m: Manifest) => m.name === volume.name);
    assert.deepEqual([seen?.mountPath, seen?.readOnly], ["/var/lib/cni/bin", true]);
    assert.equal(envOf(agent(manifests), "LACE_CNI_BIN_DIR"), "/var/lib/cni/bin");

    const off = podSpec(await render(h, ["node.cni.enabled=false"]));
    assert.equal(off.initContainers, undefined);
    assert.equal(off.volumes.some((v: Manifest) => v.hostPath?.path === "/opt/cni/bin"), false);
  },
);

helmTest(
  "the chart's socket directory ends 0700 once the agent listens, though the " +
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

const mountSkip = needsRoot("a mount namespace") ?? HELM_MISSING;
Deno.test({
  name: skipName("the chart's mountBpffs, run as rendered, mounts bpffs 0700", mountSkip),
  ignore: skipIf(mountSkip),
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

helmTest(
  "helm test's pod runs lace status on the release's DaemonSet, as nobody without capabilities, and a passing run leaves nothing",
  async (h) => {
    const pod = only(await render(h), "Pod", "lace-test");
    assert.equal(pod.metadata.namespace, "lace-system");
    assert.equal(pod.metadata.annotations["helm.sh/hook"], "test");
    assert.equal(
      pod.metadata.annotations["helm.sh/hook-delete-policy"],
      "before-hook-creation,hook-succeeded",
    );
    assert.equal(pod.metadata.annotations["helm.sh/hook-output-log-policy"], "hook-failed");
    assert.equal(pod.spec.restartPolicy, "Never");
    const [c] = pod.spec.containers;
    assert.equal(c.image, "lace:0.1.0", "the agent's image");
    assert.deepEqual(c.args, [
      "status",
      "--daemonset=lace-system/lace",
      "--metrics-port=9808",
      "--wait=1m",
    ]);
    assert.equal(pod.spec.securityContext.runAsNonRoot, true);
    assert.equal(pod.spec.securityContext.runAsUser, 65534);
    assert.equal(pod.spec.securityContext.seccompProfile.type, "RuntimeDefault");
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.deepEqual(c.securityContext.capabilities, { drop: ["ALL"] });
    assert.equal(pod.spec.hostNetwork, undefined);
  },
);

helmTest(
  "the agent's DaemonSet does not select helm test's pod, which it would adopt and delete",
  async (h) => {
    for (const set of [[], ["nameOverride=probe-agent"], ["tests.podLabels.team=infra"]]) {
      const manifests = await render(h, set);
      const selector = only(manifests, "DaemonSet").spec.selector.matchLabels;
      const labels = only(manifests, "Pod").metadata.labels;
      const selected = Object.entries(selector).every(([k, v]) => labels[k] === v);
      assert.equal(
        selected,
        false,
        `${JSON.stringify(selector)} selects ${JSON.stringify(labels)}`,
      );
    }
  },
);

helmTest(
  "helm test's pod follows the metrics port, asks the API alone when the agents listen on loopback, and goes with tests.enabled",
  async (h) => {
    const args = async (set: string[]) =>
      only(await render(h, set), "Pod", "lace-test").spec.containers[0].args;
    assert.ok((await args(["node.metricsPort=9900"])).includes("--metrics-port=9900"));
    for (const host of ["127.0.0.1", "[::1]", "localhost"]) {
      assert.ok((await args([`node.metricsHost=${host}`])).includes("--metrics-port=0"), host);
    }
    assert.ok((await args(["node.metricsHost=[::]"])).includes("--metrics-port=9808"));
    assert.ok((await args(["tests.wait=5s"])).includes("--wait=5s"));
    const labelled = only(await render(h, ["tests.podLabels.team=infra"]), "Pod", "lace-test");
    assert.equal(labelled.metadata.labels.team, "infra");
    const off = await render(h, ["tests.enabled=false"]);
    assert.deepEqual(off.filter((m) => m.metadata.name === "lace-test"), []);
    assert.match(await refusal(h, ["tests.wait=soon"]), /tests\/wait/);
  },
);
