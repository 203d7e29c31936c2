/**
 * Per-run certificates and keys for the test control plane, made with the openssl CLI:
 * a CA, the API server's serving certificate for 127.0.0.1, an admin client certificate in
 * group system:masters, and the service-account signing key pair. Nothing outlives the run's
 * temporary directory.
 */

/** Paths of the PEM files that makePki() wrote, and their contents where a client needs them. */
export interface Pki {
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
  caPem: string;
  adminCertPem: string;
  adminKeyPem: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("openssl", { args, cwd, stdout: "piped", stderr: "piped" })
      .output();
  } catch (cause) {
    throw new Error("Cannot run openssl; install the openssl package", { cause });
  }
  if (!output.success) {
    const stderr = new TextDecoder().decode(output.stderr).trim();
    throw new Error(`openssl ${args[0]} failed with "${stderr}"`);
  }
}

const ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  bytes[0] &= 0x7f;
  return "0x" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Signs a new EC key's certificate with the CA, with the given subject and extensions. */
async function issue(dir: string, name: string, subject: string, extensions: string[]) {
  await Deno.writeTextFile(`${dir}/${name}.ext`, extensions.join("\n") + "\n");
  await openssl(
    ["req", "-new", ...ecKey, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject],
    dir,
  );
  await openssl([
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-set_serial",
    randomSerial(),
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
    "-out",
    `${name}.crt`,
  ], dir);
}

/** Writes a fresh CA, serving, admin and service-account key material into dir. */
export async function makePki(dir: string): Promise<Pki> {
  await openssl([
    "req",
    "-x509",
    "-new",
    ...ecKey,
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "2",
    "-subj",
    "/CN=lace-test-ca",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ], dir);
  await issue(dir, "server", "/CN=kube-apiserver", [
    "basicConstraints=CA:FALSE",
    "keyUsage=critical,digitalSignature,keyEncipherment",
    "extendedKeyUsage=serverAuth",
    "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes.default.svc",
  ]);
  await issue(dir, "admin", "/O=system:masters/CN=lace-test-admin", [
    "basicConstraints=CA:FALSE",
    "keyUsage=critical,digitalSignature,keyEncipherment",
    "extendedKeyUsage=clientAuth",
  ]);
  await openssl(
    ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "sa.key"],
    dir,
  );
  await openssl(["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"], dir);
  return {
    caCert: `${dir}/ca.crt`,
    caKey: `${dir}/ca.key`,
    serverCert: `${dir}/server.crt`,
    serverKey: `${dir}/server.key`,
    adminCert: `${dir}/admin.crt`,
    adminKey: `${dir}/admin.key`,
    serviceAccountKey: `${dir}/sa.key`,
    serviceAccountPub: `${dir}/sa.pub`,
    caPem: await Deno.readTextFile(`${dir}/ca.crt`),
    adminCertPem: await Deno.readTextFile(`${dir}/admin.crt`),
    adminKeyPem: await Deno.readTextFile(`${dir}/admin.key`),
  };
}
