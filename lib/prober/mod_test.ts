import assert from "node:assert/strict";
import { Errno, libcSymbols } from "../libbpf/mod.ts";
import { probeOnce } from "./mod.ts";

// errno as V8 may leave it between two FFI calls (seen in the upgrade tests: ENOENT after a
// non-blocking connect that was in progress).
const clobbered = () => Errno.ENOENT;

Deno.test("probeOnce() reaches a listening port when errno was clobbered after the connect", () => {
  // The kernel completes the handshake into the backlog: no accept needed while probeOnce blocks.
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  const r = probeOnce(
    libcSymbols(),
    { host: "127.0.0.1", port, timeoutMs: 2000, connectOnly: true },
    clobbered,
  );
  assert.equal(r.result, "reached", JSON.stringify(r));
});

Deno.test("probeOnce() calls a closed port refused from the socket's own error, not errno", () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  const r = probeOnce(
    libcSymbols(),
    { host: "127.0.0.1", port, timeoutMs: 2000, connectOnly: true },
    clobbered,
  );
  assert.equal(r.result, "REFUSED", JSON.stringify(r));
});

Deno.test("probeOnce() waits for a late answer when errno was clobbered after a read that would block", async () => {
  // A server in another process: probeOnce blocks this one's event loop until it returns.
  const server = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
       console.log(l.addr.port);
       const c = await l.accept();
       await new Promise((r) => setTimeout(r, 200));
       await c.write(new TextEncoder().encode("HTTP/1.0 200 OK\\r\\n\\r\\nlate"));
       c.close();`,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = server.stdout.getReader();
    const { value } = await reader.read();
    reader.releaseLock();
    const port = Number(new TextDecoder().decode(value).trim());
    const r = probeOnce(
      libcSymbols(),
      { host: "127.0.0.1", port, timeoutMs: 5000, http: "/" },
      clobbered,
    );
    assert.equal(r.result, "reached", JSON.stringify(r));
    assert.equal(r.httpStatus, 200);
    assert.equal(r.body, "late");
  } finally {
    try {
      server.kill();
    } catch { /* already gone */ }
    await server.status;
    await server.stdout.cancel().catch(() => {});
  }
});
