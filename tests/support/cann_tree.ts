/**
 * Temporary CANN-shaped folders for the discovery and doctor tests, made of symlinks to the emulation
 * build (through `sh`, since the test run has `--allow-run` but no `--allow-write`), and child
 * processes run with chosen permissions and environment.
 *
 * @module
 */

import { EMU_DIR } from "./helpers.ts";

/**
 * Whether this host has a real CANN in a standard place: the library's search would (rightly) find it
 * where the discovery, doctor and CLI tests expect none, so those tests are ignored here.
 */
export const REAL_CANN: boolean = ["/usr/local/Ascend", "/opt/Ascend"].some((path) => {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
});

function sh(script: string): string {
  const { code, stdout, stderr } = new Deno.Command("sh", { args: ["-c", script] }).outputSync();
  const decoder = new TextDecoder();
  if (code !== 0) throw new Error(`sh -c ${script}: ${decoder.decode(stderr)}`);
  return decoder.decode(stdout).trim();
}

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * A fresh temporary folder holding `links` (relative path -> target; a target of `""` makes an empty
 * folder). Remove it with {@link removeTree}.
 */
export function makeTree(links: Record<string, string>): string {
  const root = sh("mktemp -d");
  const commands = Object.entries(links).map(([path, target]) => {
    const full = `${root}/${path}`;
    return target === ""
      ? `mkdir -p ${quote(full)}`
      : `mkdir -p ${quote(full.slice(0, full.lastIndexOf("/")))} && ln -s ${quote(target)} ${
        quote(full)
      }`;
  });
  if (commands.length > 0) sh(commands.join(" && "));
  return root;
}

/** Removes a folder made by {@link makeTree}. */
export function removeTree(root: string): void {
  sh(`rm -rf ${quote(root)}`);
}

/**
 * A CANN toolkit laid out as CANN installs it, `<root>/ascend-toolkit/latest/{lib64,opp}`, whose lib64
 * links to the emulation (`libopapi` from `opapiFrom`, default the emulation's). Returns the root;
 * `ASCEND_HOME_PATH` is `<root>/ascend-toolkit/latest`.
 */
export function makeToolkit(opapiFrom: string = EMU_DIR): string {
  const lib64 = "ascend-toolkit/latest/lib64";
  return makeTree({
    [`${lib64}/libascendcl.so`]: `${EMU_DIR}libascendcl.so`,
    [`${lib64}/libnnopbase.so`]: `${EMU_DIR}libnnopbase.so`,
    [`${lib64}/libopapi.so`]: `${opapiFrom}libopapi.so`,
    "ascend-toolkit/latest/opp": "",
  });
}

// What a Deno child needs to run at all (its cache); never a CANN variable.
function passThrough(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** What a child process printed and how it ended. */
export interface ChildResult {
  /** Exit code. */
  readonly code: number;
  /** Standard output. */
  readonly stdout: string;
  /** Standard error. */
  readonly stderr: string;
}

/**
 * Runs `deno run <flags> <script> <args>` with exactly `env` (plus PATH and NO_COLOR): no CANN
 * variable of the test process leaks in.
 */
export async function runDeno(
  script: string,
  { flags = [], env = {}, args = [] }: {
    flags?: string[];
    env?: Record<string, string>;
    args?: string[];
  },
): Promise<ChildResult> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", ...flags, script, ...args],
    env: { ...passThrough(), NO_COLOR: "1", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}
