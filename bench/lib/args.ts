/** The benches' own flags: `--name value`, or the default when the flag is absent or has no value. Pure: no I/O. */
export function optionReader(args: readonly string[]): (name: string, dflt: string) => string {
  return (name, dflt) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? (args[i + 1] ?? dflt) : dflt;
  };
}
