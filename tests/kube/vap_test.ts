/**
 * The chart's ValidatingAdmissionPolicy, rendered by the real helm and enforced by the real
 * API server: a pod outside the host network whose probe or lifecycle handler sets `host` is
 * rejected; normal pods, host-network pods and pods in exempt namespaces are admitted.
 */
import assert from "node:assert/strict";
import { ApiException, CoreV1Api, type V1Container, type V1Pod } from "@kubernetes/client-node";
import { startControlPlane } from "./fixture.ts";
import { applyObjects, helmTemplate } from "./helm.ts";
import {
  chartOnControlPlaneUnavailableReason,
  controlPlaneTestOptions,
  kubeToolPath,
} from "./tools.ts";
import { isExecutable } from "../helpers/executable.ts";
import { waitFor } from "../helpers/wait.ts";

const policyTemplates = [
  "templates/validatingadmissionpolicy.yaml",
  "templates/validatingadmissionpolicybinding.yaml",
];

async function unavailableReason(): Promise<string | undefined> {
  const reason = await chartOnControlPlaneUnavailableReason();
  if (reason) return reason;
  for (const template of policyTemplates) {
    const path = new URL(`../../deploy/helm/lace/${template}`, import.meta.url);
    try {
      await Deno.stat(path);
    } catch {
      return `the chart has no "${template}"`;
    }
  }
  return undefined;
}

const unavailable = await unavailableReason();
if (unavailable) console.warn(`Skipping admission policy tests: ${unavailable}`);

const otherHost = "192.0.2.10";

function container(name: string, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: "registry.invalid/app:1", ...extra };
}

function pod(name: string, spec: Partial<V1Pod["spec"]> = {}): V1Pod {
  return {
    metadata: { name },
    spec: { nodeName: "node-a", containers: [container("app")], ...spec },
  };
}

/** 200 when the server admits the pod (dry run: nothing is stored), else the error. */
async function admit(core: CoreV1Api, namespace: string, body: V1Pod) {
  try {
    await core.createNamespacedPod({ namespace, body, dryRun: "All" });
    return { code: 200, message: "" };
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    return { code: error.code, message: String(error.body) };
  }
}

Deno.test({
  name: "the chart's admission policy rejects probes that set host outside the host network",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  await using cp = await startControlPlane();
  const core = cp.adminConfig().makeApiClient(CoreV1Api);
  for (const name of ["lace-system", "apps", "infra"]) await cp.createNamespace(name);
  const objects = await helmTemplate({
    namespace: "lace-system",
    showOnly: policyTemplates,
    set: ["admissionPolicy.exemptNamespaces={kube-system,infra}"],
  });
  assert.deepEqual(
    objects.map((o) => o.kind).sort(),
    ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"],
  );
  await applyObjects(cp.adminConfig(), objects, "lace-system");

  const liveness = pod("liveness", {
    containers: [
      container("app", { livenessProbe: { httpGet: { host: otherHost, port: 8080, path: "/" } } }),
    ],
  });
  // The policy reaches the admission chain through an informer: wait for it to take effect.
  const verdict = await waitFor(async () => {
    const answer = await admit(core, "apps", liveness);
    return answer.code !== 200 && answer;
  }, { timeout: 30_000, interval: 200, message: "the policy to refuse a probe with host" });

  await t.step("a liveness httpGet probe with host is rejected, naming the container", () => {
    assert.notEqual(verdict.code, 200, "the pod was admitted");
    assert.match(verdict.message, /must not set host/);
    assert.match(verdict.message, /app/);
  });

  await t.step("a readiness tcpSocket probe with host is rejected", async () => {
    const body = pod("readiness", {
      containers: [
        container("web"),
        container("side", { readinessProbe: { tcpSocket: { host: otherHost, port: 80 } } }),
      ],
    });
    const result = await admit(core, "apps", body);
    assert.notEqual(result.code, 200);
    assert.match(result.message, /side/);
  });

  await t.step("a startup probe with host in a sidecar init container is rejected", async () => {
    const body = pod("startup", {
      initContainers: [container("sidecar", {
        restartPolicy: "Always",
        startupProbe: { tcpSocket: { host: otherHost, port: 9000 } },
      })],
    });
    const result = await admit(core, "apps", body);
    assert.notEqual(result.code, 200);
    assert.match(result.message, /sidecar/);
  });

  await t.step("a postStart httpGet handler with host is rejected", async () => {
    const body = pod("lifecycle", {
      containers: [container("app", {
        lifecycle: { postStart: { httpGet: { host: otherHost, port: 80, path: "/hook" } } },
      })],
    });
    assert.notEqual((await admit(core, "apps", body)).code, 200);
  });

  await t.step("probes without host are admitted", async () => {
    const body = pod("normal", {
      containers: [container("app", {
        livenessProbe: { httpGet: { port: 8080, path: "/healthz" } },
        readinessProbe: { tcpSocket: { port: 8080 } },
        startupProbe: { exec: { command: ["true"] } },
      })],
    });
    assert.deepEqual(await admit(core, "apps", body), { code: 200, message: "" });
  });

  await t.step(
    "a host-network pod whose probe or hook sets host to another address is rejected, naming the container",
    async () => {
      // Another pod's address and probe port: the kubelet's connect there is tagged into that
      // pod's network whoever's probe it serves, host-network pods' included.
      const probe = pod("host-network", { ...liveness.spec, hostNetwork: true });
      const refused = await admit(core, "apps", probe);
      assert.notEqual(refused.code, 200, "the pod was admitted");
      assert.match(refused.message, /host-network pods must not set host/);
      assert.match(refused.message, /app/);
      const hook = pod("host-network-hook", {
        hostNetwork: true,
        containers: [
          container("app"),
          container("side", {
            lifecycle: { preStop: { httpGet: { host: "10.244.1.10", port: 8081, path: "/" } } },
          }),
        ],
      });
      const hookRefused = await admit(core, "apps", hook);
      assert.notEqual(hookRefused.code, 200, "the pod was admitted");
      assert.match(hookRefused.message, /side/);
      const named = pod("host-network-name", {
        hostNetwork: true,
        containers: [container("app", {
          readinessProbe: { tcpSocket: { host: "victim.example", port: 8081 } },
        })],
      });
      assert.notEqual((await admit(core, "apps", named)).code, 200, "a host name was admitted");
    },
  );

  await t.step(
    "a host-network pod whose probes set host to the node itself or its link is admitted",
    async () => {
      for (const host of ["127.0.0.1", "::1", "localhost", "169.254.20.10"]) {
        const body = pod("host-network-local", {
          hostNetwork: true,
          containers: [container("app", {
            livenessProbe: { httpGet: { host, port: 9809, path: "/healthz" } },
            readinessProbe: { tcpSocket: { host, port: 9809 } },
          })],
        });
        assert.deepEqual(await admit(core, "apps", body), { code: 200, message: "" }, host);
      }
    },
  );

  await t.step("a pod in an exempt namespace whose probe sets host is admitted", async () => {
    assert.deepEqual(await admit(core, "infra", liveness), { code: 200, message: "" });
  });
});

/** `kubectl create --dry-run=server` of `body` with `kubeconfig`: its exit code and stderr. */
async function kubectlCreate(kubeconfig: string, namespace: string, body: V1Pod) {
  const child = new Deno.Command(await kubeToolPath("kubectl"), {
    args: ["--kubeconfig", kubeconfig, "-n", namespace, "create", "--dry-run=server", "-f", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(
    new TextEncoder().encode(JSON.stringify({ apiVersion: "v1", kind: "Pod", ...body })),
  );
  await writer.close();
  const out = await child.output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

const kubectlMissing = isExecutable(await kubeToolPath("kubectl"))
  ? undefined
  : "kubectl is not built; run scripts/build_k8s_tools.sh kubectl";

Deno.test({
  name:
    "staged as Warn and Audit, the probe host rule admits a pod that sets host with a warning kubectl prints, while the annotation rule still denies",
  ...controlPlaneTestOptions(unavailable ?? kubectlMissing),
}, async () => {
  await using cp = await startControlPlane();
  for (const name of ["lace-system", "apps"]) await cp.createNamespace(name);
  const objects = await helmTemplate({
    namespace: "lace-system",
    showOnly: [
      ...policyTemplates,
      "templates/validatingadmissionpolicy-network-annotations.yaml",
      "templates/validatingadmissionpolicybinding-network-annotations.yaml",
    ],
    set: ["admissionPolicy.validationActions.probeHost={Warn,Audit}"],
  });
  await applyObjects(cp.adminConfig(), objects, "lace-system");
  const liveness = pod("liveness", {
    containers: [
      container("app", { livenessProbe: { httpGet: { host: otherHost, port: 8080, path: "/" } } }),
    ],
  });
  const annotated: V1Pod = {
    ...pod("annotated"),
    metadata: { name: "annotated", annotations: { "lace.io/network": "blue" } },
  };
  // The policies reach the admission chain through an informer: wait for both to take effect.
  const warned = await waitFor(async () => {
    const annotation = await kubectlCreate(cp.kubeconfigPath, "apps", annotated);
    if (annotation.code === 0) return undefined;
    const result = await kubectlCreate(cp.kubeconfigPath, "apps", liveness);
    return /Warning/.test(result.stderr) && result;
  }, { timeout: 30_000, interval: 200, message: "both policies to take effect" });
  assert.equal(warned.code, 0, `the pod was refused: ${warned.stderr}`);
  assert.match(
    warned.stderr,
    /Warning: Validation failed for ValidatingAdmissionPolicy 'lace-probe-host' with binding 'lace-probe-host': probes and lifecycle handlers of pods outside the host network must not set host/,
  );
  const denied = await kubectlCreate(cp.kubeconfigPath, "apps", annotated);
  assert.notEqual(denied.code, 0, "the annotated pod was admitted");
  assert.match(denied.stderr, /only the network plugin may set, change or remove/, denied.stderr);
});
