import assert from "node:assert/strict";
import {
  HeadBuffer,
  HttpRequestError,
  keepsAlive,
  parseRequestHead,
  responseBytes,
} from "./wire.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

Deno.test("HeadBuffer finds the blank line that ends a head, or -1 while incomplete", () => {
  const head = new HeadBuffer();
  head.append(bytes("GET / HTTP/1.1\r\nHost: x\r\n"));
  assert.equal(head.end(), -1);
  head.append(bytes("\r"));
  assert.equal(head.end(), -1);
  head.append(bytes("\nrest"));
  assert.equal(head.end(), 27);
  assert.equal(new TextDecoder().decode(head.take(27)), "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  assert.equal(head.length, 4, "what followed the head stays for the next request");
});

Deno.test("HeadBuffer keeps a pipelined request after the head it hands out", () => {
  const head = new HeadBuffer();
  head.append(bytes("GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n"));
  const first = head.end();
  assert.equal(new TextDecoder().decode(head.take(first)), "GET /a HTTP/1.1\r\n\r\n");
  const second = head.end();
  assert.equal(new TextDecoder().decode(head.take(second)), "GET /b HTTP/1.1\r\n\r\n");
  assert.equal(head.length, 0);
  assert.equal(head.end(), -1);
});

Deno.test("HeadBuffer examines each byte of a 16 KiB head sent one byte at a time about once", () => {
  // The attacker's head: 16 KiB, one byte per read. Rescanning the pending head on every read
  // examines about n²/2 bytes (134 million here); resuming where the last search stopped, n.
  const text = "GET / HTTP/1.1\r\n" + "X: " + "a".repeat(16 * 1024 - 24) + "\r\n\r\n";
  const head = new HeadBuffer();
  const one = bytes(text);
  let end = -1;
  for (let i = 0; i < one.length && end < 0; i++) {
    head.append(one.subarray(i, i + 1));
    end = head.end();
  }
  assert.equal(end, one.length);
  assert.ok(head.examined <= one.length, `${head.examined} bytes examined for ${one.length}`);
  assert.equal(new TextDecoder().decode(head.take(end)), text);
});

Deno.test("parseRequestHead() reads method, path and headers, also from an absolute-form target", () => {
  const head = parseRequestHead(
    bytes("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept:  */*\r\n\r\n"),
  );
  assert.equal(head.method, "GET");
  assert.equal(head.target, "/metrics?x=1");
  assert.equal(head.headers.get("accept"), "*/*");
  assert.equal(
    parseRequestHead(bytes("GET http://localhost/targets HTTP/1.1\r\n\r\n")).target,
    "/targets",
  );
});

Deno.test("parseRequestHead() refuses malformed heads and any request body with the status to answer", () => {
  const refusal = (s: string) => {
    try {
      parseRequestHead(bytes(s));
    } catch (e) {
      assert.ok(e instanceof HttpRequestError);
      return `${e.status} ${e.message}`;
    }
    return "accepted";
  };
  assert.equal(refusal("GET /\r\n\r\n"), "400 Malformed request line");
  assert.equal(refusal("GET / HTTP/2.0\r\n\r\n"), '505 HTTP version not supported: "HTTP/2.0"');
  assert.equal(
    refusal("GET * HTTP/1.1\r\n\r\n"),
    "400 Request target must be a path or an http URL",
  );
  assert.equal(refusal("GET / HTTP/1.1\r\nno colon\r\n\r\n"), "400 Malformed header");
  assert.equal(
    refusal("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n"),
    "400 Request bodies are not accepted",
  );
  assert.equal(
    refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
    "400 Request bodies are not accepted",
  );
  assert.equal(refusal("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), "accepted");
});

Deno.test("keepsAlive() follows the HTTP version and the Connection header", () => {
  const head = (s: string) => parseRequestHead(bytes(s));
  assert.equal(keepsAlive(head("GET / HTTP/1.1\r\n\r\n")), true);
  assert.equal(keepsAlive(head("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")), false);
  assert.equal(keepsAlive(head("GET / HTTP/1.0\r\n\r\n")), false);
  assert.equal(keepsAlive(head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")), true);
});

Deno.test("responseBytes() states the length and leaves the body out for HEAD", () => {
  const text = (head: boolean) =>
    new TextDecoder().decode(
      responseBytes(200, new Headers({ "content-type": "text/plain" }), bytes("ok\n"), {
        head,
        keepAlive: false,
      }),
    );
  assert.equal(
    text(false),
    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 3\r\nconnection: close\r\n\r\nok\n",
  );
  assert.ok(text(true).endsWith("connection: close\r\n\r\n"));
});
