import assert from "node:assert/strict";
import { objectAbiVersion, UNVERSIONED_ABI } from "./object_abi.ts";
import { ABI_VERSION } from "./probe_map.ts";
import { skipIf } from "../../tests/helpers/skip.ts";

const OBJECT = new URL("../../bpf/lace.bpf.o", import.meta.url);
const built = (() => {
  try {
    return Deno.readFileSync(OBJECT);
  } catch {
    return undefined;
  }
})();
const notBuilt = built
  ? undefined
  : "bpf/lace.bpf.o is not built: run deno task bpf (scripts/setup.sh)";

Deno.test({
  name: "objectAbiVersion() reads the ABI version the built object declares",
  ignore: skipIf(notBuilt),
  fn() {
    assert.equal(objectAbiVersion(built!), ABI_VERSION);
  },
});

Deno.test({
  name: "objectAbiVersion() gives an object without the symbol the unversioned ABI",
  ignore: skipIf(notBuilt),
  fn() {
    const renamed = built!.slice();
    const name = new TextEncoder().encode("lace_abi_version");
    // Every occurrence (symbol and BTF string tables), as in an object of the release before.
    for (let i = 0; i < renamed.length; i++) {
      if (name.every((b, j) => renamed[i + j] === b)) renamed[i] = "x".charCodeAt(0);
    }
    assert.equal(objectAbiVersion(renamed), UNVERSIONED_ABI);
  },
});

Deno.test("objectAbiVersion() refuses bytes that are not an ELF object", () => {
  assert.throws(() => objectAbiVersion(new Uint8Array(100)), /not a 64-bit little-endian ELF/);
});
