/**
 * The few pieces of HTTP/1.1 the agent's listeners need, as pure functions:
 * find the end of a request head, parse it, and write a response. The agent
 * serves only GET and HEAD without bodies, so a request with a body is refused
 * rather than parsed (nothing to smuggle through).
 */

/** Largest request head accepted; a scraper's or probe's head is a few hundred bytes. */
export const MAX_HEAD_BYTES = 16 * 1024;

export interface RequestHead {
  method: string;
  /** The request's path with its query (an absolute-form target is reduced to it). */
  target: string;
  version: "HTTP/1.0" | "HTTP/1.1";
  headers: Headers;
}

/** A request the listener answers with `status` and then closes the connection. */
export class HttpRequestError extends Error {
  override name = "HttpRequestError";
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/**
 * A connection's bytes until a request head is complete, in time linear in
 * the bytes received: each read is copied once into a buffer that grows by
 * doubling, and the search for the blank line resumes where the last one
 * stopped. Copying and rescanning the whole pending head on every read would
 * make a head sent one byte at a time cost the agent's only thread time
 * quadratic in its length. Bytes after a head (a pipelined request) stay for
 * the next one.
 */
export class HeadBuffer {
  #buf = new Uint8Array(1024);
  #length = 0;
  /** Offsets below this hold no head end (a match needs the 3 bytes before it). */
  #scannedTo = 0;
  /** Bytes examined by `end()` in all; a test holds it linear. */
  examined = 0;

  /** Bytes held: the head so far, and anything after it. */
  get length(): number {
    return this.#length;
  }

  /** Appends what a read returned. */
  append(bytes: Uint8Array): void {
    const need = this.#length + bytes.length;
    if (need > this.#buf.length) {
      let size = this.#buf.length;
      while (size < need) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(this.#buf.subarray(0, this.#length));
      this.#buf = grown;
    }
    this.#buf.set(bytes, this.#length);
    this.#length = need;
  }

  /** The offset just past the head's blank line (CRLF CRLF), or -1 while it is incomplete. */
  end(): number {
    const b = this.#buf;
    let i = Math.max(3, this.#scannedTo);
    for (; i < this.#length; i++) {
      this.examined++;
      if (b[i] === 10 && b[i - 1] === 13 && b[i - 2] === 10 && b[i - 3] === 13) {
        this.#scannedTo = i;
        return i + 1;
      }
    }
    this.#scannedTo = i;
    return -1;
  }

  /** Removes and returns the first `end` bytes (a head `end()` found); the rest stays. */
  take(end: number): Uint8Array {
    const head = this.#buf.slice(0, end);
    this.#buf.copyWithin(0, end, this.#length);
    this.#length -= end;
    this.#scannedTo = 0;
    return head;
  }
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Parses a complete request head; throws HttpRequestError with the status to answer. */
export function parseRequestHead(bytes: Uint8Array): RequestHead {
  const text = new TextDecoder("latin1").decode(bytes);
  const lines = text.split("\r\n");
  while (lines.length > 0 && lines.at(-1) === "") lines.pop();
  const [method, target, version, ...rest] = (lines.shift() ?? "").split(" ");
  if (!method || !TOKEN.test(method) || !target || !version || rest.length > 0) {
    throw new HttpRequestError(400, "Malformed request line");
  }
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
    throw new HttpRequestError(505, `HTTP version not supported: "${version}"`);
  }
  const path = requestPath(target);
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(":");
    const name = line.slice(0, colon);
    if (colon <= 0 || !TOKEN.test(name)) throw new HttpRequestError(400, "Malformed header");
    try {
      headers.append(name, line.slice(colon + 1).trim());
    } catch {
      throw new HttpRequestError(400, "Malformed header value");
    }
  }
  if (headers.has("transfer-encoding") || Number(headers.get("content-length") ?? "0") !== 0) {
    throw new HttpRequestError(400, "Request bodies are not accepted");
  }
  return { method, target: path, version, headers };
}

/** The path and query of an origin-form ("/x") or absolute-form ("http://h/x") target. */
function requestPath(target: string): string {
  if (target.startsWith("/")) return target;
  if (/^https?:\/\//i.test(target)) {
    try {
      const url = new URL(target);
      return url.pathname + url.search;
    } catch { /* reported below */ }
  }
  throw new HttpRequestError(400, "Request target must be a path or an http URL");
}

/** Whether the connection stays open after the response (HTTP/1.1 unless "close"). */
export function keepsAlive(head: RequestHead): boolean {
  const connection = (head.headers.get("connection") ?? "").toLowerCase();
  return head.version === "HTTP/1.1"
    ? !connection.split(",").some((t) => t.trim() === "close")
    : connection.split(",").some((t) => t.trim() === "keep-alive");
}

const STATUS_TEXT: Record<number, string> = {
  200: "OK",
  400: "Bad Request",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  503: "Service Unavailable",
  505: "HTTP Version Not Supported",
};

/**
 * The status line and the handler's headers, each line ending CRLF; the framing headers
 * (length, connection, transfer encoding) are left for the caller, which knows the framing.
 */
function statusAndHeaders(status: number, headers: Headers): string {
  let text = `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? "Status"}\r\n`;
  for (const [name, value] of headers) {
    if (name !== "content-length" && name !== "connection" && name !== "transfer-encoding") {
      text += `${name}: ${value}\r\n`;
    }
  }
  return text;
}

/** Serialises a response with its length; the body is left out for HEAD. */
export function responseBytes(
  status: number,
  headers: Headers,
  body: Uint8Array,
  opts: { head: boolean; keepAlive: boolean },
): Uint8Array {
  let text = statusAndHeaders(status, headers);
  text += `content-length: ${body.length}\r\nconnection: ${
    opts.keepAlive ? "keep-alive" : "close"
  }\r\n\r\n`;
  const head = new TextEncoder().encode(text);
  if (opts.head) return head;
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/**
 * The head of a response whose body follows in chunks (`transfer-encoding:
 * chunked`), each framed by `chunkBytes`, the last by `LAST_CHUNK`.
 */
export function chunkedHeadBytes(
  status: number,
  headers: Headers,
  opts: { keepAlive: boolean },
): Uint8Array {
  let text = statusAndHeaders(status, headers);
  text += `transfer-encoding: chunked\r\nconnection: ${
    opts.keepAlive ? "keep-alive" : "close"
  }\r\n\r\n`;
  return new TextEncoder().encode(text);
}

/** One chunk of a chunked body: its size in hex, the bytes, CRLF. */
export function chunkBytes(data: Uint8Array): Uint8Array {
  const size = new TextEncoder().encode(`${data.length.toString(16)}\r\n`);
  const out = new Uint8Array(size.length + data.length + 2);
  out.set(size);
  out.set(data, size.length);
  out.set([13, 10], size.length + data.length);
  return out;
}

/** The zero-length chunk that ends a chunked body. */
export const LAST_CHUNK: Uint8Array = new TextEncoder().encode("0\r\n\r\n");

/** A short plain-text error response that closes the connection. */
export function errorResponseBytes(status: number, message: string): Uint8Array {
  return responseBytes(
    status,
    new Headers({ "content-type": "text/plain; charset=utf-8" }),
    new TextEncoder().encode(`${message}\n`),
    { head: false, keepAlive: false },
  );
}
