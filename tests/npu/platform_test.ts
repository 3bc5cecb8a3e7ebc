// The platform the suite runs on: the emulation it loads is built for this CPU (native/build/ or a
// cross build in native/build/<arch>/), and the pinned Deno version is the one the docs and CI name.

import assert from "node:assert/strict";
import { BUILD_ROOT, emulationDir } from "../../tools/emu_dir.ts";
import { EMU_DIR, EMU_NO_1D_DIR, EMU_NO_V2_DIR } from "../support/helpers.ts";

/** ELF e_machine values (System V gABI) for the architectures Deno.build.arch names. */
const ELF_MACHINE: Record<string, number> = { x86_64: 62, aarch64: 183 };

function elfMachine(path: string): number {
  const header = Deno.readFileSync(path).subarray(0, 20);
  assert.deepEqual([...header.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46], `${path} is not ELF`);
  return new DataView(header.buffer, header.byteOffset).getUint16(18, true);
}

Deno.test("platform: every emulation library the tests load is built for this CPU", () => {
  const expected = ELF_MACHINE[Deno.build.arch];
  assert.ok(expected !== undefined, `no ELF machine known for ${Deno.build.arch}`);
  for (const dir of [EMU_DIR, EMU_NO_V2_DIR, EMU_NO_1D_DIR]) {
    for (const lib of ["libascendcl.so", "libnnopbase.so", "libopapi.so"]) {
      assert.equal(elfMachine(`${dir}${lib}`), expected, `${dir}${lib} (${Deno.build.arch})`);
    }
  }
});

Deno.test("platform: the emulation folder is native/build/<arch>/ when a cross build exists", () => {
  assert.equal(emulationDir("no-such-arch"), BUILD_ROOT);
  assert.ok(EMU_DIR === BUILD_ROOT || EMU_DIR === `${BUILD_ROOT}${Deno.build.arch}/`, EMU_DIR);
});

Deno.test("platform: the README and CI install the pinned Deno", () => {
  const read = (path: string): string => Deno.readTextFileSync(new URL(path, import.meta.url));
  const pinned = read("../../.ci/deno_version").trim();
  assert.match(pinned, /^\d+\.\d+\.\d+$/);
  const readme = read("../../README.md");
  const npx = [...readme.matchAll(/npx -y (deno\S*) task/g)].map((m) => m[1]);
  assert.ok(npx.length >= 2, "the README's quick start commands");
  for (const spec of npx) assert.equal(spec, `deno@${pinned}`);
  assert.ok(readme.includes(`**Deno ${pinned}**`), "the README names the pinned version");
  assert.match(read("../../.ci/run"), /npm install -g "deno@\$DENO_VERSION"/);
  assert.match(read("../../.ci/run"), /DENO_VERSION=\$\(cat \.ci\/deno_version\)/);
});
