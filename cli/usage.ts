/**
 * What both commands share on their command line: the error a bad one raises, and the parse that
 * turns it (or `--help`) into an exit status.
 *
 * @module
 */

/** A bad command line: the message names the flag, the value and the rule. */
export class UsageError extends Error {
  /** Builds the error. */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/**
 * `parse(args)`, or the exit status when nothing is to run: 2 after printing a {@link UsageError}'s
 * message, 0 after printing `help` for `--help`. Other errors propagate.
 *
 * @example
 * ```ts ignore
 * const options = parseCommand(["--help"], parseVerifyArgs, HELP); // prints HELP, returns 0
 * if (typeof options === "number") Deno.exit(options);
 * ```
 */
export function parseCommand<T extends { readonly help: boolean }>(
  args: readonly string[],
  parse: (args: readonly string[]) => T,
  help: string,
): T | number {
  let options: T;
  try {
    options = parse(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(error.message);
    return 2;
  }
  if (options.help) {
    console.log(help);
    return 0;
  }
  return options;
}
