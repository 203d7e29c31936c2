import assert from "node:assert/strict";
import { BpfError, errnoName, isErrno, unwrap } from "./errors.ts";

Deno.test("errnoName() names negative and positive errno values alike", () => {
  assert.equal(errnoName(-1), "EPERM");
  assert.equal(errnoName(67), "ENOLINK");
  assert.equal(errnoName(-9999), "errno 9999");
});

Deno.test("unwrap() returns file descriptors and zero unchanged", () => {
  assert.equal(unwrap("bpf_obj_get", 7), 7);
  assert.equal(unwrap("bpf_obj_pin", 0), 0);
});

Deno.test("unwrap() throws a BpfError carrying operation, errno name and hint", () => {
  assert.throws(() => unwrap('bpf_obj_get "/sys/fs/bpf/x"', -2), (e: unknown) => {
    assert(e instanceof BpfError);
    assert.equal(e.operation, 'bpf_obj_get "/sys/fs/bpf/x"');
    assert.equal(e.code, "ENOENT");
    assert.equal(e.errno, 2);
    assert.match(e.message, /^bpf_obj_get "\/sys\/fs\/bpf\/x" failed: ENOENT \(.*bpffs/);
    return true;
  });
});

Deno.test("a BpfError for EPERM tells to run as root or grant CAP_BPF", () => {
  const e = new BpfError("bpf_object__load", -1);
  assert.match(e.hint, /root/);
  assert.match(e.hint, /CAP_BPF/);
});

Deno.test("a BpfError for ENOLINK says the cgroup behind the link is gone", () => {
  assert.match(new BpfError("bpf_link_update", -67).message, /cgroup behind this link is gone/);
});

Deno.test("an explicit hint replaces the default one", () => {
  const e = new BpfError("open cgroup", -2, "check the kubelet cgroup path");
  assert.equal(e.message, "open cgroup failed: ENOENT (check the kubelet cgroup path)");
});

Deno.test("isErrno() matches only BpfErrors with one of the given names", () => {
  assert(isErrno(new BpfError("x", -67), "ENOLINK", "EBADF"));
  assert(!isErrno(new BpfError("x", -2), "ENOLINK"));
  assert(!isErrno(new Error("ENOLINK"), "ENOLINK"));
});
