/**
 * Where the C host emulation of CANN lives for the platform this process runs on. `make -C native`
 * writes the build machine's own architecture to `native/build/` and a cross build (another `CC`, e.g.
 * `aarch64-linux-gnu-gcc`) to `native/build/<arch>/`, `<arch>` as `Deno.build.arch` names it. An
 * aarch64 Deno under qemu on an x86_64 machine thus loads `native/build/aarch64/`, while on a real
 * aarch64 host (no cross folder) it loads `native/build/`.
 *
 * @module
 */

/** The native build root, `native/build/`. */
export const BUILD_ROOT: string = new URL("../native/build/", import.meta.url).pathname;

/**
 * The emulation folder for `arch`: `native/build/<arch>/` when a cross build for it exists, else
 * `native/build/` (the build machine's own architecture). Always ends with `/`.
 *
 * @example
 * ```ts
 * const libDir = emulationDir(); // e.g. ".../native/build/" or ".../native/build/aarch64/"
 * ```
 */
export function emulationDir(arch: string = Deno.build.arch): string {
  const cross = `${BUILD_ROOT}${arch}/`;
  try {
    Deno.statSync(`${cross}libascendcl.so`);
    return cross;
  } catch {
    return BUILD_ROOT;
  }
}
