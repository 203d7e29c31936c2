/**
 * The doctor's checks of the kubelet side: cgroup2, the kubelet cgroup, the kubelet process
 * in it, lookalikes, and what else shares the cgroup.
 */
import { isWithin } from "../cgroup/path.ts";
import { type Check, check, type NodeSnapshot } from "./check.ts";

/** cgroup2, the kubelet cgroup and who runs in it, in reading order. */
export function kubeletChecks(s: NodeSnapshot): Check[] {
  const checks: Check[] = [];
  const v2 = s.cgroup2Mounts.length > 0;
  checks.push(check(
    "cgroup2",
    v2,
    v2 ? `cgroup2 is mounted at ${s.cgroup2Mounts.join(", ")}` : "cgroup2 is not mounted",
    "mount it: `mount -t cgroup2 none /sys/fs/cgroup` (in a container, mount the host's " +
      "cgroup2 and set --host-cgroup-root)",
  ));
  const kc = s.kubeletCgroup;
  checks.push(check(
    "kubelet-cgroup",
    kc.id !== null,
    kc.id !== null
      ? `kubelet cgroup "${kc.path}" exists${kc.configured === "auto" ? " (found by auto)" : ""}`
      : kc.error ?? `kubelet cgroup "${kc.path}" does not exist`,
    kc.configured === "auto"
      ? "start the kubelet, or give its cgroup with --kubelet-cgroup"
      : "set --kubelet-cgroup (Helm value node.kubeletCgroupPath) to the kubelet's cgroup, " +
        "or to auto; `systemctl status kubelet` shows it as CGroup",
  ));
  checks.push(kubeletProcessCheck(s));
  if (s.otherKubelets.length > 0 || s.otherKubeletsNotListed > 0) {
    const notListed = s.otherKubeletsNotListed > 0
      ? `; and ${s.otherKubeletsNotListed} more not listed`
      : "";
    checks.push(check(
      "kubelet-lookalikes",
      false,
      "processes that look like a kubelet but are not trusted as one (the agent never follows " +
        "them): " + s.otherKubelets.map((k) => `${k.pid} (${k.comm}): ${k.reason}`).join("; ") +
        notListed,
      "find out who started them: a process named kubelet in a pod or container is someone " +
        "trying to take the probe programs; the real kubelet runs as root in the host's mount " +
        "namespace, outside any container",
      "warning",
    ));
  }
  if (s.extraProcesses.length > 0) {
    checks.push(check(
      "kubelet-cgroup-shared",
      false,
      `kubelet cgroup "${kc.path}" also holds processes that are not the kubelet; their ` +
        "connections to probe targets get tagged too: " +
        s.extraProcesses.map((p) => `${p.pid} (${p.comm})`).join(", "),
      "run the kubelet in a cgroup of its own (its own systemd unit), or accept the wider tagging",
      "warning",
    ));
  }
  if (s.apiServers.length > 0) checks.push(apiServerSharedCheck(s));
  return checks;
}

function kubeletProcessCheck(s: NodeSnapshot): Check {
  const path = s.kubeletCgroup.path;
  if (s.kubelets.length === 0) {
    return check(
      "kubelet-process",
      false,
      "no kubelet process found in /proc (looked for kubelet, k3s server/agent, kubelite, " +
        "running as root in the host's mount namespace outside containers)",
      "start the kubelet; in a container, run with hostPID so /proc shows the host's processes",
    );
  }
  const inside = path ? s.kubelets.find((k) => isWithin(k.cgroupDir, path)) : undefined;
  if (inside) {
    return check(
      "kubelet-process",
      true,
      `kubelet (pid ${inside.pid}, ${inside.comm}) runs in the kubelet cgroup "${inside.cgroupDir}"`,
    );
  }
  const k = s.kubelets[0];
  const where = s.kubelets.slice(0, 3).map((x) =>
    `kubelet (pid ${x.pid}, ${x.comm}) runs in cgroup "${x.cgroupDir}"`
  ).join("; ");
  return check(
    "kubelet-process",
    false,
    `${where}, not in the kubelet cgroup "${path ?? s.kubeletCgroup.configured}": ` +
      "its probes are not tagged",
    `set --kubelet-cgroup ${k.cgroupDir} (Helm value node.kubeletCgroupPath), or auto`,
  );
}

/**
 * The API server in the kubelet's cgroup (k3s servers, MicroK8s): its proxy connections to pods
 * (pods/proxy, services/proxy) are tagged into the target's network too. Not an error, since the
 * distribution decides it, but the operator must know which settings keep tenants from it.
 */
function apiServerSharedCheck(s: NodeSnapshot): Check {
  return check(
    "api-server-in-kubelet-cgroup",
    false,
    `the Kubernetes API server runs in the kubelet cgroup "${s.kubeletCgroup.path}": ` +
      s.apiServers.map((p) => `${p.pid} (${p.comm}: ${p.what})`).join(", ") +
      "; its connections to probe targets (pods/proxy, services/proxy) are tagged into the " +
      "target's network like the kubelet's probes",
    'keep tenants from steering it (docs/deploy.md, "The API server in the kubelet\'s cgroup"): ' +
      "chain the lace CNI plugin, keep the admission policy on, do not let tenants write " +
      "Endpoints or EndpointSlices; or keep tenant pods off this node, or deny tenants " +
      "pods/proxy and services/proxy",
    "warning",
  );
}
