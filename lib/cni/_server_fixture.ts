/**
 * What the CNI server's tests share: a fake agent, a server on a socket in a fresh directory
 * (closed and removed when disposed), a raw client, the request lines they send, and a client
 * that stops reading.
 */
import type { Stream } from "../socket/accept_loop.ts";
import type { Attachment, AttachmentRef } from "./protocol.ts";
import {
  type CniHandler,
  type CniServer,
  type CniServerOptions,
  startCniServer,
} from "./server.ts";

/** An agent that records the attachments it is given and removes, or fails with `fail`. */
export class FakeAgent implements CniHandler {
  added: Attachment[] = [];
  removed: string[] = [];
  removedRefs: AttachmentRef[] = [];
  fail?: Error;
  registerAttachment(a: Attachment): Promise<void> {
    if (this.fail) return Promise.reject(this.fail);
    this.added.push(a);
    return Promise.resolve();
  }
  removeAttachment(uid: string, ref: AttachmentRef): void {
    this.removed.push(uid);
    this.removedRefs.push(ref);
  }
}

/** A fresh directory for one test, removed with all it holds when disposed. */
export async function tempDir(): Promise<AsyncDisposable & { path: string }> {
  const path = await Deno.makeTempDir({ prefix: "lace-cni-" });
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }) };
}

/**
 * A server for `handler` on `cni.sock` in a fresh directory; disposing it
 * closes the server, then removes the directory, so a failing test leaks neither.
 */
export async function cniServer(
  handler: CniHandler = new FakeAgent(),
  options: CniServerOptions = {},
): Promise<AsyncDisposable & { path: string; server: CniServer }> {
  const dir = await tempDir();
  const path = `${dir.path}/cni.sock`;
  try {
    const server = await startCniServer(path, handler, options);
    return {
      path,
      server,
      async [Symbol.asyncDispose]() {
        await server.close();
        await dir[Symbol.asyncDispose]();
      },
    };
  } catch (e) {
    await dir[Symbol.asyncDispose]();
    throw e;
  }
}

/** A raw client: writes `text`, then reads `lines` reply lines (or until the server closes). */
export async function exchange(path: string, text: string, lines = 1): Promise<string[]> {
  const conn = await Deno.connect({ transport: "unix", path });
  try {
    await conn.write(new TextEncoder().encode(text));
    let got = "";
    const buf = new Uint8Array(4096);
    while (got.split("\n").length - 1 < lines) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      got += new TextDecoder().decode(buf.subarray(0, n));
    }
    return got.split("\n").filter((l) => l !== "").map((l) => l);
  } finally {
    conn.close();
  }
}

/** The attachment the tests register, and a request line for it. */
export const ref = { containerId: "c1", ifname: "eth0" };
export const attachment = { namespace: "ns", name: "web", uid: "u1", ips: ["10.70.0.5"] };
export function request(extra: Record<string, unknown>): string {
  return JSON.stringify({ v: 1, id: "r1", ...extra }) + "\n";
}

/** A client that sends `text` once and then never reads: every write waits until closed. */
export class StalledReader implements Stream {
  closed = false;
  #sent = false;
  readonly #close = Promise.withResolvers<void>();
  constructor(readonly text: string) {}
  read(p: Uint8Array): Promise<number | null> {
    if (this.#sent) return this.#close.promise.then(() => null);
    this.#sent = true;
    const bytes = new TextEncoder().encode(this.text);
    p.set(bytes);
    return Promise.resolve(bytes.length);
  }
  write(): Promise<number> {
    return this.#close.promise.then(() => Promise.reject(new Error("closed")));
  }
  close(): void {
    this.closed = true;
    this.#close.resolve();
  }
}
