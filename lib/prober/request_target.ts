/**
 * The request line's target for a probe's `httpGet.path`, which the pod's
 * author wrote: every byte outside visible ASCII (controls, space, DEL,
 * non-ASCII) is percent-encoded, so a CR/LF in the path can never end the
 * request line and add headers of the author's choosing to the doctor's
 * request. The kubelet does the same in effect: a path Go's url.Parse refuses
 * is sent as url.URL{Path: path}, whose String() escapes it
 * (pkg/probe/http/request.go, formatURL). A path that does not start with "/"
 * gets one, as the kubelet's URL would have.
 */
export function requestTarget(path: string): string {
  const bytes = new TextEncoder().encode(path.startsWith("/") ? path : `/${path}`);
  let out = "";
  for (const b of bytes) {
    out += b > 0x20 && b < 0x7f
      ? String.fromCharCode(b)
      : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
