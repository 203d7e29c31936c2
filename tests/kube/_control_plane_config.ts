/**
 * The control plane's command lines and kubeconfigs for fixture.ts: pure, so what the test
 * cluster runs with reads in one place, apart from starting and waiting for it.
 */
import { stringify } from "yaml";
import type { Pki } from "./_pki.ts";

/** A kubeconfig for `user` with `credentials` (a client certificate or a token) at `url`. */
export function kubeconfigYaml(
  url: string,
  caPem: string,
  user: string,
  credentials: object,
): string {
  const b64 = (text: string) => btoa(text);
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "lace-test",
      cluster: { server: url, "certificate-authority-data": b64(caPem) },
    }],
    users: [{ name: user, user: credentials }],
    contexts: [{ name: user, context: { cluster: "lace-test", user } }],
    "current-context": user,
  });
}

/** etcd's flags: one member on loopback, its data under `dir`, no fsync. */
export function etcdArgs(dir: string, clientPort: number, peerPort: number): string[] {
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  return [
    "--name=lace-test",
    `--data-dir=${dir}/etcd-data`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=lace-test=${peer}`,
    "--initial-cluster-state=new",
    // Test data need not survive a power cut; fsync on a shared 2-core machine is slow.
    "--unsafe-no-fsync",
    "--log-level=warn",
  ];
}

/**
 * kube-apiserver's flags: loopback only, the run's certificates, RBAC and Node authorization,
 * the admission plugins a real cluster runs, no Endpoints reconciler.
 */
export function apiServerArgs(pki: Pki, dir: string, port: number, etcdUrl: string): string[] {
  return [
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${port}`,
    `--cert-dir=${dir}/apiserver-certs`,
    `--etcd-servers=${etcdUrl}`,
    `--tls-cert-file=${pki.serverCert}`,
    `--tls-private-key-file=${pki.serverKey}`,
    `--client-ca-file=${pki.caCert}`,
    "--authorization-mode=Node,RBAC",
    // ValidatingAdmissionPolicy and ServiceAccount are on by default; NodeRestriction is what a
    // real cluster adds, so node identities get the same limits as in production.
    "--enable-admission-plugins=NodeRestriction,ValidatingAdmissionPolicy",
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-account-key-file=${pki.serviceAccountPub}`,
    `--service-account-signing-key-file=${pki.serviceAccountKey}`,
    "--api-audiences=https://kubernetes.default.svc.cluster.local",
    // Only allocated in etcd, never routed: no traffic leaves loopback.
    "--service-cluster-ip-range=10.96.0.0/16",
    // Loopback cannot be an Endpoints address; no reconciler means no kubernetes Endpoints.
    "--endpoint-reconciler-type=none",
    "--allow-privileged=true",
    "--profiling=false",
    "--v=1",
  ];
}
