import assert from "node:assert/strict";
import { bpfObjectBytes, bpfObjectLocation, objectSha256 } from "./bpf_object.ts";

Deno.test("bpfObjectLocation() defaults to bpf/lace.bpf.o beside lib/", () => {
  const saved = Deno.env.get("LACE_BPF_OBJECT");
  Deno.env.delete("LACE_BPF_OBJECT");
  try {
    assert.match(String(bpfObjectLocation()), /\/bpf\/lace\.bpf\.o$/);
  } finally {
    if (saved !== undefined) Deno.env.set("LACE_BPF_OBJECT", saved);
  }
});

Deno.test("a missing BPF object says to run `deno task bpf`", () => {
  const saved = Deno.env.get("LACE_BPF_OBJECT");
  Deno.env.set("LACE_BPF_OBJECT", "/nonexistent/lace.bpf.o");
  try {
    assert.throws(
      () => bpfObjectBytes(),
      /BPF object "\/nonexistent\/lace\.bpf\.o" not found: build it with `deno task bpf`/,
    );
  } finally {
    if (saved === undefined) Deno.env.delete("LACE_BPF_OBJECT");
    else Deno.env.set("LACE_BPF_OBJECT", saved);
  }
});

Deno.test("objectSha256() is the hex sha256 of the bytes", () => {
  assert.equal(
    objectSha256(new TextEncoder().encode("abc")),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
});
